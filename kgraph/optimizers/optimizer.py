"""The ``Optimizer`` base: slot state, gradient clipping, weight decay and the learning rate.

Updates write straight into each variable's ``value`` array with in-place
NumPy ufuncs, so a step allocates nothing beyond one scratch array per
variable (kept between steps). Elementwise updates of a large model are shared
between this thread and one worker thread (see ``update_parallel``).
"""
import math
import operator
import re

import numpy as np

from kgraph import ops
from kgraph.backend.variable import Variable
from kgraph.ops.kernels import threads
from kgraph.optimizers import accumulation, gradients, schedules, update_parallel
from kgraph.optimizers.accumulation import ACCUMULATOR

# The slot name of a variable's moving average (``use_ema``), as Keras names it.
AVERAGE = "average"
# Optimizer class -> whether its ``update_step`` is elementwise (``Optimizer._elementwise``).
_ELEMENTWISE = {}


def _snake_case(name):
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _validate_learning_rate(learning_rate):
    if isinstance(learning_rate, schedules.LearningRateSchedule) or callable(learning_rate):
        return learning_rate
    if isinstance(learning_rate, (bool, str)) or not np.isscalar(learning_rate) and np.ndim(learning_rate) != 0:
        raise ValueError(
            "Argument `learning_rate` should be a float, a LearningRateSchedule, or a callable "
            f"taking no arguments. Received: learning_rate={learning_rate!r}")
    return float(learning_rate)


def _checked_count(value):
    """``value`` as a step count: a whole number (not a bool) in int64's range, at least 0."""
    try:
        count = None if isinstance(value, (bool, np.bool_)) else operator.index(value)
    except TypeError:
        count = None
    if count is None:
        raise ValueError(f"An optimizer's iteration count must be an integer. Received: {value!r}")
    if not 0 <= count < 2**63:
        raise ValueError(f"An optimizer's iteration count must be in [0, 2**63). Received: {count}")
    return count


def _validate_ema(use_ema, ema_momentum, ema_overwrite_frequency):
    """Keras's checks of the moving-average arguments (made only with ``use_ema``)."""
    if not use_ema:
        return
    if isinstance(ema_momentum, (bool, str)) or not np.isscalar(ema_momentum) or not 0 <= ema_momentum <= 1:
        raise ValueError(f"`ema_momentum` must be in the range [0, 1]. Received: ema_momentum={ema_momentum}")
    if ema_overwrite_frequency and (  # as Keras, 0 (like None) overwrites only at the end
            isinstance(ema_overwrite_frequency, bool) or not isinstance(ema_overwrite_frequency, int)
            or ema_overwrite_frequency < 1):
        raise ValueError("`ema_overwrite_frequency` must be an integer >= 1 or None. "
                         f"Received: ema_overwrite_frequency={ema_overwrite_frequency}")


def _validate_loss_scale_factor(factor):
    if factor is None:
        return None
    if isinstance(factor, (bool, str)) or not np.isscalar(factor) or not math.isfinite(factor) or not factor > 0:
        raise ValueError(f"`loss_scale_factor` must be a positive number or None. Received: loss_scale_factor="
                         f"{factor!r}")
    return factor


def _iteration_variable(name, count=0):
    return Variable(np.asarray(count, dtype="int64"), name="iteration", trainable=False, path=f"{name}/iteration")


class Optimizer:
    """Base class: subclasses list their slots and implement ``update_step``.

    learning_rate: a float, a ``LearningRateSchedule`` (called with the
        ``iterations`` Variable) or a callable with no arguments.
    weight_decay: decoupled decay; before each update a variable is scaled by
        ``1 - weight_decay * learning_rate``.
    clipnorm: clip each gradient to this L2 norm.
    clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
    global_clipnorm: scale all gradients together so their joint L2 norm is
        at most this.
    use_ema: keep an exponential moving average of each trainable variable,
        updated after each step: ``average = m * average + (1 - m) * variable``
        with ``m = ema_momentum``, except on the first step (``iterations`` 0),
        where ``m = 0`` so the average starts as the variable. The averages
        are optimizer variables (``"average"``), after ``iterations`` in
        ``variables``; ``finalize_variable_values`` (which ``fit`` calls at its
        end) copies them into the variables.
    ema_momentum: ``m`` above, in [0, 1].
    ema_overwrite_frequency: with ``use_ema``, copy the averages into the
        variables after every this many steps (None: only at the end of ``fit``).
    loss_scale_factor: a train step multiplies the loss by this before taking
        gradients (``scale_loss``), and ``apply`` divides the gradients by it.
    """

    def __init__(
        self,
        learning_rate=0.001,
        weight_decay=None,
        clipnorm=None,
        clipvalue=None,
        global_clipnorm=None,
        use_ema=False,
        ema_momentum=0.99,
        ema_overwrite_frequency=None,
        loss_scale_factor=None,
        gradient_accumulation_steps=None,
        name=None,
        **kwargs,
    ):
        if kwargs:
            raise ValueError(f"Argument(s) not recognized: {kwargs}")
        if sum(arg is not None for arg in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(
                "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. "
                f"Received: clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        self.name = name or _snake_case(type(self).__name__)
        self.weight_decay = weight_decay
        self.clipnorm = clipnorm
        self.clipvalue = clipvalue
        self.global_clipnorm = global_clipnorm
        _validate_ema(use_ema, ema_momentum, ema_overwrite_frequency)
        self.use_ema = use_ema
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = _validate_loss_scale_factor(loss_scale_factor)
        self.gradient_accumulation_steps = accumulation.validate(gradient_accumulation_steps)
        # As Keras 3: a non-trainable integer Variable "<name>/iteration", first of ``variables``.
        self._iterations = _iteration_variable(self.name)
        self._learning_rate = _validate_learning_rate(learning_rate)
        # Variables with slots, in build order, and per slot name a list of
        # slot Variables parallel to it: plain lists pickle together with the
        # model's own Variables and keep their identity.
        self._trainable_variables = []
        self._slots = {}
        self._exclude_variables = []
        self._exclude_names = []
        self._warned_missing = set()
        self._reset_caches()

    def _reset_caches(self):
        # id()-keyed lookups and scratch buffers: rebuilt on demand, never pickled.
        self._index = None
        self._scratch = {}
        self._decay_flags = {}
        self._update_timing = threads.Timing()
        self._plan = None

    def __getstate__(self):
        state = self.__dict__.copy()
        for key in ("_index", "_scratch", "_decay_flags", "_update_timing", "_cast_constants", "_plan"):
            state.pop(key, None)
        return state

    def __setstate__(self, state):
        state = dict(state)
        for key, default in (("use_ema", False), ("ema_momentum", 0.99), ("ema_overwrite_frequency", None),
                             ("loss_scale_factor", None), ("gradient_accumulation_steps", None)):
            state.setdefault(key, default)  # pickled before the optimizers took these arguments
        if "_iterations" not in state:  # pickled when the count was a Python int (a LossScaleOptimizer had none)
            count = _checked_count(state.pop("iterations", 0))
            state["_iterations"] = _iteration_variable(state.get("name", "optimizer"), count)
        self.__dict__.update(state)
        self._reset_caches()

    @property
    def iterations(self):
        """The number of steps applied: a non-trainable int64 ``Variable`` (``.assign`` it to change it). With
        ``gradient_accumulation_steps``, the number of updates, as Keras: the steps divided by it, an int64."""
        if self.gradient_accumulation_steps:
            return np.asarray(int(self._iterations.value) // self.gradient_accumulation_steps, dtype=np.int64)
        return self._iterations

    def _step_counter(self):
        """The Variable counting every step applied (``iterations`` counts updates with gradient accumulation)."""
        return self._iterations

    def _step_count(self):
        """``iterations`` as a Python int: the updates so far (an update's bias corrections count from it)."""
        return int(self._iterations.value) // (self.gradient_accumulation_steps or 1)

    @iterations.setter
    def iterations(self, value):
        raise AttributeError(f"property 'iterations' of '{type(self).__name__}' object has no setter: it is a "
                             f"Variable; use `optimizer.iterations.assign({value!r})` to change the step count.")

    def slot_names(self):
        """Names of the per-variable state arrays this optimizer keeps."""
        return []

    def slot_initial_value(self, slot_name):
        """The value a new slot array is filled with."""
        return 0.0

    def initial_slot(self, slot_name, variable):
        """The starting array of ``variable``'s slot ``slot_name``, or None where that variable has no such slot.

        By default an array of the variable's shape and dtype filled with ``slot_initial_value``.
        """
        return np.full(tuple(variable.shape), self.slot_initial_value(slot_name), dtype=variable.dtype)

    def slot_groups(self):
        """The slot names grouped as Keras's ``build`` creates them: the slots of one group are interleaved
        variable by variable, the groups follow one another (the order of Keras's ``variables``)."""
        return [[name] for name in self.slot_names()]

    def _base_states(self):
        """The slots Keras's base ``build`` adds before any optimizer's own: moving averages (``use_ema``), then
        gradient accumulators (``gradient_accumulation_steps``)."""
        return ([AVERAGE] if self.use_ema else []) + ([ACCUMULATOR] if self.gradient_accumulation_steps else [])

    def _state_names(self):
        """The slots ``build`` creates for a variable: ``_base_states()``, then ``slot_names()``."""
        names, base = self.slot_names(), self._base_states()
        for name in base:
            if name in names:
                raise ValueError(f"Optimizer '{self.name}' has a slot named {name!r}, the name of the state the "
                                 f"base optimizer keeps for {'use_ema' if name == AVERAGE else 'gradient_accumulation_steps'}"
                                 ": rename the slot or leave that option off.")
        return base + names

    def state_groups(self):
        """``slot_groups()``, preceded by the moving averages with ``use_ema`` and the gradient accumulators with
        ``gradient_accumulation_steps`` (Keras's base ``build`` adds them before any optimizer's own slots)."""
        return [[name] for name in self._base_states()] + self.slot_groups()

    def initial_state(self, slot_name, variable):
        """``initial_slot``, or zeros for a moving average (Keras starts it at zeros; the first step replaces it)
        and for a gradient accumulator."""
        if slot_name in self._base_states():
            return np.zeros(tuple(variable.shape), dtype=variable.dtype)
        return self.initial_slot(slot_name, variable)

    def trailing_variables(self):
        """Arrays Keras keeps after the slots in its ``variables``; kgraph derives them from the step count,
        so a file's copies need no restoring."""
        return []

    def _prepare_step(self, learning_rate):
        """Called once per step, before any variable is updated (a state shared by all variables)."""

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        """Update ``value`` in place from ``gradient``.

        slots: this variable's slot arrays, in ``slot_names()`` order, to be
            updated in place too.
        scratch: a free array of the variable's shape and dtype.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement update_step().")

    @property
    def learning_rate(self):
        """The current learning rate as a float."""
        lr = self._learning_rate
        if isinstance(lr, schedules.LearningRateSchedule):
            return float(lr(self._iterations))
        if callable(lr):
            return float(lr())
        return lr

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        learning_rate = _validate_learning_rate(learning_rate)
        if isinstance(self._learning_rate, schedules.LearningRateSchedule) and not callable(learning_rate):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object as its "
                "`learning_rate` constructor argument, hence its learning rate is not settable. "
                "If you need the learning rate to be settable, you should instantiate the "
                "optimizer with a float `learning_rate` argument."
            )
        self._learning_rate = learning_rate

    @property
    def variables(self):
        """``iterations``, then the slot Variables in Keras's order: ``state_groups()`` (the moving averages with
        ``use_ema``, then ``slot_groups()``) one after the other, the slots of a group interleaved variable by
        variable, in build order (Keras also keeps its learning rate, second, where kgraph keeps a float)."""
        out = [self._iterations]
        for group in self.state_groups():
            lists = [self._slots.get(name, []) for name in group]
            for i in range(len(self._trainable_variables)):
                out.extend(slot_list[i] for slot_list in lists if i < len(slot_list) and slot_list[i] is not None)
        return out

    @property
    def built(self):
        return bool(self._trainable_variables)

    def _lookup(self):
        if self._index is None or len(self._index) != len(self._trainable_variables):
            self._index = {id(v): i for i, v in enumerate(self._trainable_variables)}
        return self._index

    def build(self, variables):
        """Create slots for each of ``variables`` that has none yet."""
        index = self._lookup()
        for variable in variables:
            if id(variable) in index:
                continue
            index[id(variable)] = len(self._trainable_variables)
            self._trainable_variables.append(variable)
            for slot_name in self._state_names():
                value = self.initial_state(slot_name, variable)
                path = getattr(variable, "path", variable.name)
                slot = None if value is None else Variable(
                    value, name=f"{variable.name}_{slot_name}", trainable=False, dtype=value.dtype,
                    path=f"{self.name}/{path}_{slot_name}")
                self._slots.setdefault(slot_name, []).append(slot)

    def get_slot_state(self, index):
        """Copies of the slot arrays as ``[[position, {slot_name: array}], ...]``.

        index: ``{id(variable): position}``; variables not in it are left out,
            so the state can be restored onto another model's variables.
        """
        state = []
        for i, variable in enumerate(self._trainable_variables):
            position = index.get(id(variable))
            if position is not None:
                slots = {name: self._slots[name][i].value.copy() for name in self._state_names()
                         if self._slots[name][i] is not None}
                state.append([position, slots])
        return state

    def set_slot_state(self, variables, state, iterations=None):
        """Restore ``get_slot_state`` output onto ``variables`` (indexed by position)."""
        variables = list(variables)
        self.build(variables)
        index = self._lookup()
        for position, slots in state:
            i = index[id(variables[position])]
            for name, value in slots.items():
                if name not in self._slots:
                    raise ValueError(
                        f"Optimizer '{self.name}' has no slot {name!r}; its slots are {self._state_names()}."
                    )
                if self._slots[name][i] is None:
                    raise ValueError(f"Optimizer '{self.name}' keeps no slot {name!r} for variable "
                                     f"'{getattr(variables[position], 'path', variables[position].name)}'.")
                self._slots[name][i].assign(value)
        if iterations is not None:
            self._iterations.assign(_checked_count(iterations))

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exempt variables from weight decay: those in ``var_list``, or whose
        name contains any string of ``var_names``."""
        self._exclude_variables = list(var_list or [])
        self._exclude_names = list(var_names or [])
        self._decay_flags = {}

    def _uses_weight_decay(self, index, variable):
        flag = self._decay_flags.get(index)
        if flag is None:
            excluded = any(variable is v for v in self._exclude_variables) or any(
                re.search(pattern, variable.name) for pattern in self._exclude_names
            )
            flag = self._decay_flags[index] = not excluded
        return flag

    def _weight_decay_of(self, variable):
        """The decoupled weight decay rate of ``variable`` (None: none)."""
        return self.weight_decay

    def scale_loss(self, loss):
        """The loss the gradients are taken of: ``loss`` times ``loss_scale_factor`` when it is set, else ``loss``
        itself (recorded on the tape, so the gradients are scaled too; ``apply`` divides them back)."""
        if self.loss_scale_factor is None:
            return loss
        return ops.multiply(loss, np.asarray(self.loss_scale_factor, dtype=np.asarray(loss).dtype))

    def apply_gradients(self, grads_and_vars):
        """Apply ``[(gradient, variable), ...]``; returns ``iterations``."""
        pairs = list(grads_and_vars)
        if pairs:
            grads, variables = zip(*pairs)
            self.apply(grads, variables)
        return self.iterations

    def apply(self, grads, trainable_variables=None):
        """Update ``trainable_variables`` (default: those already built) from ``grads``.

        A ``None`` gradient skips its variable (with a one-time warning naming it).
        """
        grads = list(grads)
        if trainable_variables is None:
            if not self.built:
                raise ValueError(
                    "When passing `grads` without `trainable_variables`, the optimizer must already "
                    "be built on a list of variables. Call `optimizer.build(trainable_variables)` first."
                )
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if len(grads) != len(trainable_variables):
            raise ValueError(
                f"Expected one gradient per variable. Received {len(grads)} gradients "
                f"for {len(trainable_variables)} variables.")
        if not grads:
            return
        if self._planned(grads, trainable_variables):
            return
        self.build(trainable_variables)
        grads, trainable_variables = gradients.checked(self, grads, trainable_variables)
        if self.loss_scale_factor is not None:
            grads = [g / np.asarray(self.loss_scale_factor, dtype=g.dtype) for g in grads]
        if self.gradient_accumulation_steps:
            grads = accumulation.accumulate(self, grads, trainable_variables)
        if grads is not None:  # None: a step that only accumulated its gradients
            self._update(gradients.clipped(self, grads), trainable_variables)
        self._finish_step(trainable_variables)

    def _planned(self, grads, trainable_variables):
        """Whether the step was applied by a plan the optimizer made at an earlier step (``Adam`` has one), with
        the values the general path gives; False: nothing was done."""
        return False

    def _plain_step(self):
        """Whether a step is only the updates and the step count: no loss scale, gradient accumulation, clipping,
        weight decay or moving averages."""
        return not (self.loss_scale_factor is not None or self.gradient_accumulation_steps or self.use_ema
                    or self.clipnorm or self.clipvalue or self.global_clipnorm or self.weight_decay)

    def _update(self, grads, trainable_variables):
        """Weight decay and ``update_step`` for every variable (``grads`` clipped)."""
        learning_rate = self.learning_rate
        index = self._lookup()
        slot_lists = [self._slots[name] for name in self.slot_names()]
        jobs = []
        for gradient, variable in zip(grads, trainable_variables):
            i = index[id(variable)]
            value = variable.value
            if not value.flags.writeable:
                variable.assign(value)
                value = variable.value
            decay = self._weight_decay_of(variable)
            if decay is not None and self._uses_weight_decay(i, variable):
                np.multiply(value, 1.0 - decay * learning_rate, out=value)
            scratch = self._scratch.get(i)
            if scratch is None or scratch.shape != value.shape or scratch.dtype != value.dtype:
                scratch = self._scratch[i] = np.empty_like(value)
            jobs.append((gradient, value, [None if s[i] is None else s[i].value for s in slot_lists], scratch))
        self._prepare_step(learning_rate)
        if self._elementwise():
            update_parallel.run(self._update_jobs, jobs, learning_rate, self._update_timing,
                                self._fused_update(max(job[1].size for job in jobs)))
        else:
            self._update_jobs(jobs, learning_rate)

    def _update_jobs(self, jobs, learning_rate):
        """``update_step`` of each job ``(gradient, value, slots, scratch)`` (an optimizer may take them at once)."""
        for gradient, value, slots, scratch in jobs:
            self.update_step(gradient, value, slots, learning_rate, scratch)

    def _finish_step(self, trainable_variables):
        """Moving averages, constraints and the step count, after every step (an accumulating one included)."""
        if self.use_ema:  # as Keras: after the updates, before the constraints and the step count
            self._update_moving_averages()
            frequency = self.ema_overwrite_frequency
            if frequency and (self._step_count() + 1) % frequency == 0:
                self._overwrite_model_variables_with_average_value(self._trainable_variables)
        for variable in trainable_variables:
            # As Keras: a variable's constraint (set by Layer.add_weight) projects it after its update.
            constraint = getattr(variable, "constraint", None)
            if constraint is not None:
                variable.assign(constraint(variable))
        self._iterations._assign_scalar(int(self._iterations.value) + 1)

    @property
    def _model_variables_moving_average(self):
        """The moving-average Variables, parallel to the variables the optimizer is built on (Keras's attribute:
        absent without ``use_ema`` or before ``build``)."""
        if not self.use_ema or not self.built:
            raise AttributeError(f"Optimizer '{self.name}' keeps no moving averages "
                                 f"({'use_ema=False' if not self.use_ema else 'it is not built yet'}).")
        return self._slots[AVERAGE]

    def _update_moving_averages(self):
        """``average = m * average + (1 - m) * variable`` for every built variable; ``m = 0`` on the first step."""
        momentum = self.ema_momentum if self._step_count() != 0 else 0.0
        for i, (variable, average) in enumerate(zip(self._trainable_variables, self._slots[AVERAGE])):
            if not average.value.flags.writeable:
                average.assign(average.value)
            value, target = variable.value, average.value
            m = np.asarray(momentum, dtype=target.dtype)
            share = self._scratch.get(i)  # free again once the step's updates are done
            if share is None or share.shape != target.shape or share.dtype != target.dtype:
                share = self._scratch[i] = np.empty_like(target)
            np.multiply(value, np.subtract(np.asarray(1, dtype=target.dtype), m), out=share)
            np.multiply(target, m, out=target)
            np.add(target, share, out=target)

    def _overwrite_model_variables_with_average_value(self, trainable_variables):
        """Copy each variable's moving average into it."""
        trainable_variables = list(trainable_variables)
        averages = self._slots.get(AVERAGE, [])
        if len(trainable_variables) != len(averages):
            raise ValueError(f"The length of model variables ({len(trainable_variables)}) to override does not match "
                             f"the length of model variables stored in the optimizer ({len(averages)}). Please check "
                             "if the optimizer was called on your model.")
        index = self._lookup()
        for variable in trainable_variables:
            i = index.get(id(variable))
            if i is None:
                raise ValueError(f"Variable '{getattr(variable, 'path', variable.name)}' is not one optimizer "
                                 f"'{self.name}' was built on, so it has no moving average.")
            variable.assign(averages[i].value)

    def finalize_variable_values(self, var_list):
        """Set the final values of ``var_list`` (the model's trainable variables) at the end of training: with
        ``use_ema``, their moving averages; else nothing changes."""
        if self.use_ema:
            self._overwrite_model_variables_with_average_value(var_list)

    def _elementwise(self):
        """Whether ``update_step`` is elementwise, so any slice of a variable may be updated on its own.

        The class defining ``update_step`` says so with ``_elementwise_update = True`` in its own body; a
        subclass overriding ``update_step`` without saying so is updated one whole variable at a time.
        """
        flag = _ELEMENTWISE.get(type(self))
        if flag is None:  # (looked up once per class: asked at every step)
            owner = next(c for c in type(self).__mro__ if "update_step" in c.__dict__)
            flag = _ELEMENTWISE[type(self)] = owner.__dict__.get("_elementwise_update", False)
        return flag

    def _fused_update(self, largest):
        """Whether ``update_step`` runs compiled (``largest``, the step's largest variable, may load numba)."""
        return False

    def _filter_empty_gradients(self, grads, variables):
        return gradients.without_missing(self, grads, variables)

    def get_config(self):
        lr = self._learning_rate
        if isinstance(lr, schedules.LearningRateSchedule):
            lr = schedules.serialize(lr)
        elif callable(lr):
            lr = float(lr())
        return {
            "name": self.name,
            "learning_rate": lr,
            "weight_decay": self.weight_decay,
            "clipnorm": self.clipnorm,
            "global_clipnorm": self.global_clipnorm,
            "clipvalue": self.clipvalue,
            "use_ema": self.use_ema,
            "ema_momentum": self.ema_momentum,
            "ema_overwrite_frequency": self.ema_overwrite_frequency,
            "loss_scale_factor": self.loss_scale_factor,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"], custom_objects)
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r} learning_rate={self._learning_rate!r}>"
