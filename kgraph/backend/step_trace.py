"""A training step traced once and then replayed.

While a ``StepTrace`` is active, every op call of its thread made while a
``GradientTape`` records is captured: the op, where each input comes from (a
leaf of the batch, a model variable, an earlier op's output or a constant),
its configuration, and whether the tape recorded it. ``StepTrace.program``
turns the capture into a ``Program`` that runs the same op functions on a new
batch and the variables' current values, then the recorded ops' VJPs in the
same order with the same cotangent sums, casts and broadcasts as
``GradientTape.gradient``: the same loss, outputs and gradients bit for bit,
without the layers, loss objects and tape bookkeeping that made those calls.

A non-trainable model variable assigned an op's output during the step (a
``BatchNormalization``'s moving statistics) is assigned at the same point of
the replay. A trace is refused (``failed`` says why) where replaying it could
differ from running the step: an array the size of the batch that no op made
(data read outside the ops, a random mask), any other assignment of a variable
(a trainable one, a value no op made, a random generator's state), a variable cast by a mixed
precision policy, a variable not of the model, an op run in another thread.
Whoever replays compares two traces of the same signature first
(``Program.same_as``): constants that change from step to step are refused too.
"""
import threading

import numpy as np

from kgraph.backend import autodiff
from kgraph.backend import variable as variable_module
from kgraph.backend.cotangents import input_cotangent
from kgraph.backend.tape_array import TapeArray
from kgraph.backend.variable import Variable

__all__ = ["StepTrace", "Program"]

_ndarray = np.ndarray
_function = type(lambda: None)


class StepTrace:
    """Capture the op calls of one training step (a context manager); ``program()`` then builds its replay.

    Args:
        leaves: the batch's arrays (``None`` for an absent part), which become the program's inputs.
        variables: every variable the step may read (the model's weights, trainable or not).
        batch_size: the batch's number of rows (constants with as many rows are refused).
    """

    def __init__(self, leaves, variables, batch_size):
        self.failed = None
        self._thread = None
        self._batch_size = batch_size
        self._slots = {}      # id(object) -> slot
        self._keep = []       # every object whose id is in _slots, so that ids stay unique while tracing
        self._count = 0
        self._outputs = set()  # the slots of op outputs
        self.constants = {}   # slot -> value
        self.ops = []         # (spec, input slots, config args, config kwargs, output slot(s), recorded)
        self.watched = set()  # slots of trainable variables passed to an op as Variables (what the tape watches)
        self.leaf_slots = tuple(self._slot_for(leaf) if leaf is not None else self._constant(None)
                                for leaf in leaves)
        self._variable_slots = {}
        self.variables = []
        for v in variables:
            if id(v) in self._variable_slots:
                continue
            slot = self._slot_for(v.value)
            self._variable_slots[id(v)] = slot
            self._keep.append(v)
            self.variables.append((slot, v))

    def __enter__(self):
        self._thread = threading.get_ident()
        autodiff._step_traces.append(self)
        variable_module._ASSIGN_WATCHERS.append(self._assigned)
        return self

    def __exit__(self, *exc_info):
        autodiff._step_traces.remove(self)
        variable_module._ASSIGN_WATCHERS.remove(self._assigned)
        return False

    def fail(self, reason):
        if self.failed is None:
            self.failed = reason

    def _assigned(self, variable, value):
        """An assignment during the step: kept as an op of the program where ``variable`` is a non-trainable
        variable of the model and ``value`` an op's output of this step, else the trace is refused."""
        slot = self._variable_slots.get(id(variable))
        source = self._slots.get(id(value))
        if (threading.get_ident() != self._thread or slot is None or variable.trainable or source is None
                or source not in self._outputs):
            self.fail(f"variable '{variable.path}' is assigned during the step")
        elif self.failed is None:
            self.ops.append((_AssignOp(variable), (source,), (), {}, slot, False))

    def _new_slot(self):
        self._count += 1
        return self._count - 1

    def _slot_for(self, obj):
        slot = self._new_slot()
        self._slots[id(obj)] = slot
        self._keep.append(obj)
        return slot

    def _constant(self, value):
        slot = self._slot_for(value)
        self.constants[slot] = value
        return slot

    def _check_constant(self, value):
        """Refuse what would make a replay differ: arrays no op made that are the batch's size, on-tape arrays."""
        if isinstance(value, TapeArray) and any(id(value) in tape._tracked for tape in autodiff._active_tapes):
            self.fail("an array on the tape that no op made")
        elif isinstance(value, Variable):
            self.fail("a variable passed as an op's configuration")
        elif isinstance(value, _ndarray):
            if value.ndim and value.shape[0] == self._batch_size:
                self.fail(f"an array of shape {value.shape}, the batch's size, that no op made")
            base = value
            while base is not None:  # a view, made outside the ops, of a batch's array or a variable's value
                if id(base) in self._slots and self.constants.get(self._slots[id(base)], self) is self:
                    self.fail(f"an array of shape {value.shape} viewing the batch or a variable, made outside the ops")
                    break
                base = base.base
        elif type(value) in (list, tuple):
            for v in value:
                self._check_constant(v)
        elif type(value) is dict:
            for v in value.values():
                self._check_constant(v)

    def _input(self, raw, value):
        if isinstance(raw, Variable):
            slot = self._variable_slots.get(id(raw))
            if slot is None:
                self.fail(f"variable '{raw.path}' is not one of the model's")
            elif value is not raw.value:
                self.fail(f"variable '{raw.path}' is cast to another dtype (a mixed precision policy)")
            elif raw.trainable:
                self.watched.add(slot)
            return slot
        slot = self._slots.get(id(raw))
        if slot is not None:
            return slot
        slot = self._viewed_slot(raw)
        if slot is not None:
            return slot
        self._check_constant(raw)
        return self._constant(raw)

    def _viewed_slot(self, value):
        """The slot of the leaf or op output that ``value`` views whole (the TapeArray view an unrecorded op's output
        becomes to carry a mask, ``with_mask``), or None."""
        base = value.base if isinstance(value, TapeArray) else None
        slot = None if base is None else self._slots.get(id(base))
        if slot is None or not (slot in self._outputs or slot in self.leaf_slots):
            return None
        same = (type(base) is _ndarray and base.shape == value.shape and base.dtype == value.dtype
                and base.strides == value.strides and base.ctypes.data == value.ctypes.data)
        return slot if same else None

    def _configuration(self, value):
        """An op's configuration argument as the program keeps it: an array of the step (a leaf of the batch or an
        op's output, such as a mask an op computed) as its slot, read anew at each replay; anything else as a
        constant, checked."""
        if type(value) is _ndarray:
            slot = self._slots.get(id(value))
            if slot is not None and (slot in self._outputs or slot in self.leaf_slots):
                return _Slot(slot)
        self._check_constant(value)
        return value

    def capture(self, spec, raw, values, args, kwargs, out, vjp, result, recording):
        """One op call (from ``autodiff``): its inputs as slots, its result as new slots."""
        if threading.get_ident() != self._thread:
            self.fail("an op ran in another thread while the step was traced")
        if self.failed is not None:
            return
        if len(recording) > 1 or len(autodiff._active_tapes) != 1:
            self.fail("more than one tape records")
            return
        ins = tuple(self._input(a, v) for a, v in zip(raw, values))
        rest = args[1:] if spec.list_input else args[spec.num_inputs:]
        if rest:
            rest = tuple([self._configuration(v) for v in rest])
        if kwargs:
            kwargs = {k: self._configuration(v) for k, v in kwargs.items()}
        recorded = bool(recording) and bool(recording[0]._records) and recording[0]._records[-1][2] is vjp
        if isinstance(result, (tuple, list)):
            outs = tuple(self._slot_for(o) for o in result)
            self._outputs.update(outs)
        else:
            outs = self._slot_for(result)
            self._outputs.add(outs)
        self.ops.append((spec, ins, tuple(rest), dict(kwargs), outs, recorded))

    def program(self, target, loss, outputs, trainable):
        """The replay of the captured step: ``loss`` and the flat ``outputs`` as results, gradients of ``target``
        (the loss, or the loss scaled) for ``trainable`` (None where the tape gives None). ``target`` and
        ``loss`` None: a step without a loss (``predict``'s). None, with ``failed`` set, if refused."""
        if self.failed is None:
            lossless = target is None and loss is None
            target_slot, loss_slot = (None, None) if lossless else (self._slots.get(id(target)),
                                                                     self._slots.get(id(loss)))
            output_slots = tuple(self._slots.get(id(o)) for o in outputs)
            if not lossless and (target_slot is None or loss_slot is None) or None in output_slots:
                self.fail("the loss or an output was not made by the step's ops")
        masks = self._output_masks(outputs) if self.failed is None else None
        if self.failed is not None:
            return None
        source_slots = [self._variable_slots.get(id(v)) for v in trainable]
        return Program(self, target_slot, loss_slot, output_slots, source_slots, masks)

    def _output_masks(self, outputs):
        """``((output index, slot of its mask), ...)`` for the outputs that carry a mask (a masked sequence
        model's: the compiled metrics read it); the trace is refused where no op of the step made one."""
        masks = []
        for index, output in enumerate(outputs):
            mask = getattr(output, "_keras_mask", None)
            if mask is None:
                continue
            slot = self._slots.get(id(mask)) if type(mask) is _ndarray else self._viewed_slot(mask)
            if slot is None or not (slot in self._outputs or slot in self.leaf_slots):
                self.fail("an output's mask was not made by the step's ops")
                return None
            masks.append((index, slot))
        return tuple(masks)


class Program:
    """The ops of a traced step, replayed on new batches (see ``StepTrace``)."""

    def __init__(self, trace, target_slot, loss_slot, output_slots, source_slots, masks=()):
        self.target_slot, self.loss_slot, self.output_slots = target_slot, loss_slot, output_slots
        self.masks = masks  # ((output index, mask slot), ...): the outputs replayed with their masks
        self.confirmed = False  # set by whoever compared it with a second trace
        self.structure = None   # the outputs' structure, for whoever packs them
        self.tracked = []       # whoever replays: what records the outputs after the model's own (several losses)
        self.leaf_slots, self.variables = trace.leaf_slots, trace.variables
        self.constants = trace.constants
        self._template = [None] * trace._count
        for slot, value in trace.constants.items():
            self._template[slot] = value
        sources = {s for s in source_slots if s is not None and s in trace.watched}
        self.gradient_slots = tuple(s if s in sources else None for s in source_slots)
        # The records a source reaches, as GradientTape._backward finds them.
        relevant = set(sources)
        needed = []
        for index, (_, ins, _, _, outs, recorded) in enumerate(trace.ops):
            if recorded and any(i in relevant for i in ins):
                needed.append(index)
                relevant.update(outs if type(outs) is tuple else (outs,))
        self.seeded = target_slot in relevant
        self._keep_vjp = {index: k for k, index in enumerate(needed)}
        # Each op's mode: 0 its inputs as positional arrays, 1 as one list (``list_input``), plus 2 where its
        # configuration holds arrays of the step (``_Slot``s) to read at each replay.
        self.ops = tuple((spec.fn, ins, rest, kwargs, _mode(spec, rest, kwargs), outs, self._keep_vjp.get(index))
                         for index, (spec, ins, rest, kwargs, outs, _) in enumerate(trace.ops))
        self.backward = tuple((trace.ops[index][0], trace.ops[index][1], trace.ops[index][4], k,
                               tuple(i in relevant for i in trace.ops[index][1]))
                              for k, index in reversed(list(enumerate(needed))))
        self.specs = tuple(op[0] for op in trace.ops)
        self.recorded = tuple(op[5] for op in trace.ops)

    def same_as(self, other):
        """Whether ``other``, a trace of another step with the same signature, is this program."""
        if (self.specs != other.specs or self.recorded != other.recorded or self.loss_slot != other.loss_slot
                or self.target_slot != other.target_slot
                or self.output_slots != other.output_slots or self.leaf_slots != other.leaf_slots
                or self.masks != other.masks
                or self.gradient_slots != other.gradient_slots or len(self.ops) != len(other.ops)
                or [(s, id(v)) for s, v in self.variables] != [(s, id(v)) for s, v in other.variables]
                or sorted(self.constants) != sorted(other.constants)):
            return False
        for a, b in zip(self.ops, other.ops):
            if a[1] != b[1] or a[5] != b[5] or not _same(a[2], b[2]) or not _same(a[3], b[3]):
                return False
        return all(_same(self.constants[s], other.constants[s]) for s in self.constants)

    def run(self, leaves):
        """``(loss, outputs, gradients)`` of the step on ``leaves`` (the batch's arrays, as traced)."""
        vals = self._template[:]
        for slot, leaf in zip(self.leaf_slots, leaves):
            vals[slot] = leaf
        for slot, v in self.variables:
            vals[slot] = v.value
        vjps = [None] * len(self.backward)
        for fn, ins, rest, kwargs, mode, outs, keep in self.ops:
            if mode:
                if mode & 2:
                    rest = [vals[v.slot] if type(v) is _Slot else v for v in rest]
                    kwargs = {k: vals[v.slot] if type(v) is _Slot else v for k, v in kwargs.items()}
                if mode & 1:
                    out, vjp = fn([vals[i] for i in ins], *rest, **kwargs)
                else:
                    out, vjp = fn(*[vals[i] for i in ins], *rest, **kwargs)
            else:
                out, vjp = fn(*[vals[i] for i in ins], *rest, **kwargs)
            if type(outs) is int:
                vals[outs] = out if type(out) is _ndarray else np.asarray(out)
            else:
                for slot, o in zip(outs, autodiff._as_output(out)):
                    vals[slot] = o
            if keep is not None:
                vjps[keep] = vjp
        loss = None if self.loss_slot is None else vals[self.loss_slot]
        outputs = [vals[s] for s in self.output_slots]
        for index, slot in self.masks:
            outputs[index] = _with_mask(outputs[index], vals[slot])
        cotangents = self._backward(vals, vjps) if self.seeded else {}
        return loss, outputs, [None if s is None else cotangents.get(s) for s in self.gradient_slots]

    def _backward(self, vals, vjps):
        """Cotangents by slot: ``GradientTape._backward`` on the replayed records."""
        target = vals[self.target_slot]
        seed = np.empty(target.shape, target.dtype)
        seed.fill(1)
        cotangents = {self.target_slot: seed}
        for spec, ins, outs, k, relevant in self.backward:
            if type(outs) is tuple:
                gs = [cotangents.get(o) for o in outs]
                if all(g is None for g in gs):
                    continue
                for o in outs:
                    cotangents.pop(o, None)
                g = tuple([spec.zeros(vals[o].shape, vals[o].dtype) if g is None else g for o, g in zip(outs, gs)])
            else:
                g = cotangents.pop(outs, None)
                if g is None:
                    continue
            input_cts = vjps[k](g)
            vjps[k] = None
            if type(input_cts) is not tuple and type(input_cts) is not list:
                input_cts = (input_cts,)
            if len(input_cts) < len(ins):
                raise ValueError(f"The VJP of '{spec.name}' returned {len(input_cts)} cotangents "
                                 f"for {len(ins)} inputs.")
            for slot, ct, wanted in zip(ins, input_cts, relevant):
                if ct is None or not wanted:
                    continue
                a = vals[slot]
                if type(ct) is _function:  # a deferred cotangent (a product's), computed only where wanted
                    ct = ct()
                    if ct is None:
                        continue
                if type(ct) is not _ndarray or ct.shape != a.shape or ct.dtype != a.dtype:
                    # (a number, a broadcast or a cast: input_cotangent's general way; an array of the input's shape
                    # and dtype is taken as it is, as input_cotangent takes it)
                    ct = input_cotangent(ct, a, spec.name)
                    if ct is None:
                        continue
                prev = cotangents.get(slot)
                cotangents[slot] = ct if prev is None else prev + ct
        return cotangents


def _with_mask(x, mask):
    """``x`` carrying ``mask`` as its ``_keras_mask``, as the layers give it (a TapeArray view of an ndarray)."""
    x = x.view(TapeArray)
    x._keras_mask = mask
    return x


class _Slot:
    """An op's configuration argument that is an array of the step: the value of ``slot`` at each replay."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot

    def __eq__(self, other):
        return type(other) is _Slot and other.slot == self.slot

    def __hash__(self):
        return hash(self.slot)


def _mode(spec, rest, kwargs):
    """An op's mode in ``Program.ops`` (see ``Program.__init__``)."""
    refs = any(type(v) is _Slot for v in rest) or any(type(v) is _Slot for v in kwargs.values())
    return (1 if spec.list_input else 0) | (2 if refs else 0)


class _PlainOp:
    """What a trace needs of an op with no gradient (``kgraph.ops.equal``...): its function as a primitive's."""

    __slots__ = ("fn", "name", "num_inputs", "list_input", "zeros")

    def __init__(self, fn, num_inputs):
        self.fn = lambda *args, **kwargs: (fn(*args, **kwargs), None)
        self.name, self.num_inputs, self.list_input, self.zeros = fn.__name__, num_inputs, False, np.zeros


_PLAIN_OPS = {}


class _AssignOp:
    """What a trace needs of an assignment of ``variable``: a primitive's function returning its new value,
    equal to another's of the same variable (``Program.same_as`` compares the ops of two traces)."""

    __slots__ = ("variable", "name", "num_inputs", "list_input", "zeros")

    def __init__(self, variable):
        self.variable, self.name, self.num_inputs, self.list_input, self.zeros = variable, "assign", 1, False, None

    def fn(self, value):
        self.variable.assign(value)
        return self.variable.value, None

    def __eq__(self, other):
        return type(other) is _AssignOp and other.variable is self.variable

    def __hash__(self):
        return id(self.variable)


def capture_plain(fn, args, kwargs, out):
    """A call of an op with no gradient (a comparison, ``isnan``...) while a step is traced: captured as well
    where a tape of the tracing thread records, as the tape's own ops are."""
    if not autodiff._active_tapes or not autodiff._tapes_of_this_thread():
        return
    spec = _PLAIN_OPS.get((fn, len(args)))
    if spec is None:
        spec = _PLAIN_OPS[(fn, len(args))] = _PlainOp(fn, len(args))
    values = tuple(autodiff._value(a) for a in args)
    autodiff._step_traces[-1].capture(spec, args, values, args, kwargs, out, None, out, ())


def _same(a, b):
    """Equal configuration or constants: arrays by dtype, shape and value, containers item by item."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, _ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:  # an object with no equality of its own
        return False
