"""Adam: adaptive moment estimation."""
import math

import numpy as np

from kgraph.backend.variable import Variable
from kgraph.ops.kernels import compiled, threads
from kgraph.optimizers import update_parallel
from kgraph.optimizers.optimizer import Optimizer

# The methods a step by Adam's plan stands for: a subclass overriding one of them is always stepped the general
# way.
_PLANNED_METHODS = ("update_step", "_update_jobs", "_update_with", "_fused", "_constants", "_alpha",
                    "_prepare_step", "_update", "_finish_step", "_weight_decay_of", "learning_rate")
_PLANNABLE = {}  # class -> whether it overrides none of _PLANNED_METHODS


class Adam(Optimizer):
    """Adam, with Keras 3's update.

    ``m += (g - m) * (1 - beta_1)``; ``v += (g**2 - v) * (1 - beta_2)``;
    ``w -= m * alpha / (sqrt(v) + epsilon)`` where
    ``alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)`` at step ``t``.

    amsgrad: divide by the running maximum of ``v`` instead of ``v``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.amsgrad = amsgrad

    def slot_names(self):
        return ["momentum", "velocity", "velocity_hat"] if self.amsgrad else ["momentum", "velocity"]

    def slot_groups(self):
        names = self.slot_names()
        return [names[:2]] + [[name] for name in names[2:]]

    def _alpha(self, learning_rate):
        """This step's ``alpha`` (the step number a Python int)."""
        t = self._step_count() + 1
        return learning_rate * math.sqrt(1.0 - self.beta_2**t) / (1.0 - self.beta_1**t)

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        self._update_with(gradient, value, slots, self._alpha(learning_rate), scratch)

    def _update_jobs(self, jobs, learning_rate):
        """Every variable of the step with the step's one ``alpha`` (``update_step`` computes it per variable)."""
        if type(self).update_step is not Adam.update_step:  # a subclass's own update: called per variable
            return super()._update_jobs(jobs, learning_rate)
        alpha = self._alpha(learning_rate)
        fused = None if self.amsgrad else compiled.kernels(max(job[1].size for job in jobs))
        for gradient, value, slots, scratch in jobs:
            self._update_with(gradient, value, slots, alpha, scratch, fused)

    def _update_with(self, gradient, value, slots, alpha, scratch, fused=False):
        """The update with this step's ``alpha``; ``fused``: the compiled kernels looked up for the step (None:
        NumPy), or False to look them up for this variable."""
        m, v = slots[0], slots[1]
        if not self.amsgrad and self._fused(gradient, value, m, v, alpha, fused):
            return
        np.subtract(gradient, m, out=scratch)
        scratch *= 1.0 - self.beta_1
        m += scratch
        np.square(gradient, out=scratch)
        scratch -= v
        scratch *= 1.0 - self.beta_2
        v += scratch
        if self.amsgrad:
            v_hat = slots[2]
            np.maximum(v_hat, v, out=v_hat)
            v = v_hat
        np.sqrt(v, out=scratch)
        scratch += self.epsilon
        np.divide(m, scratch, out=scratch)
        scratch *= alpha
        np.subtract(value, scratch, out=value)

    def _fused_update(self, largest):
        return not self.amsgrad and compiled.kernels(largest) is not None

    def _fused(self, gradient, value, m, v, alpha, fused=False):
        """The update as one compiled loop (``kernels.compiled``), where available; False: not taken.

        The constants are cast to the variable's dtype as NumPy casts a Python float beside an array, so the
        values equal the NumPy update's (a NumPy float64 ``alpha`` would widen NumPy's product instead).
        """
        if fused is False:
            fused = compiled.kernels(value.size)
        if fused is None or not compiled.usable(value, gradient, m, v):
            return False
        constants = self._constants(alpha, value.dtype)
        if constants is None:
            return False
        # Flat views made here (``compiled.flat`` also fills unused slots, which Adam has none of): every step.
        fused.adam(value.reshape(-1), gradient.reshape(-1), m.reshape(-1), v.reshape(-1), *constants)
        return True

    def _constants(self, alpha, dtype):
        """``(1 - beta_1, 1 - beta_2, alpha, epsilon)`` cast for the compiled loop (None where they cannot be),
        once per step and dtype (a few microseconds per variable otherwise)."""
        key = (alpha, dtype, self.beta_1, self.beta_2, self.epsilon)
        cached = getattr(self, "_cast_constants", None)
        if cached is None or cached[0] != key:
            cached = self._cast_constants = (key, compiled.constants(
                dtype, 1.0 - self.beta_1, 1.0 - self.beta_2, alpha, self.epsilon))
        return cached[1]

    def _planned(self, grads, variables):
        """The step as one compiled update per variable and the step count, where the general path would do just
        that (no loss scale, clipping, decay, moving averages, constraints; all variables built, below the size
        that splits the update between threads, the compiled kernels loaded): the same loops on the same
        arrays, without the general path's Python, which in a training step costs about a fifth of the
        update's time. The plan (each Variable with its array and its slots' arrays, as flat views) is made at
        the first step it fits and checked at every step: any Variable, slot array or gradient that differs from
        it sends the step the general way."""
        if self.amsgrad or not self._plain_step() or not _plannable(type(self)):
            return False
        fused = compiled.loaded()
        if fused is None:
            return False
        plan = self._plan
        if plan is None or not _holds(plan, grads, variables):
            plan = self._plan = self._new_plan(variables)  # (slots restored, a weight assigned, other variables)
            if plan is None or not _holds(plan, grads, variables):
                return False
        constants = self._constants(self._alpha(self.learning_rate), plan[0][1].dtype)
        if constants is None:
            return False
        for entry, gradient in zip(plan, grads):
            fused.adam(entry[2], gradient.reshape(-1), entry[7], entry[8], *constants)
        self._iterations._assign_scalar(int(self._iterations.value) + 1)
        return True

    def _new_plan(self, variables):
        """``[(variable, value, flat value, momentum, its value, velocity, its value, the two flat), ...]`` for
        ``variables``, or None where a step of them cannot go by plan."""
        index = self._lookup()
        momentum, velocity = self._slots.get("momentum"), self._slots.get("velocity")
        plan = []
        for variable in variables:
            i = index.get(id(variable))
            if i is None or type(variable) is not Variable:
                return None
            value, m, v = variable.value, momentum[i], velocity[i]
            if not compiled.usable(value, m.value, v.value) or value.dtype != variables[0].value.dtype:
                return None
            plan.append((variable, value, value.reshape(-1), m, m.value, v, v.value, m.value.reshape(-1),
                         v.value.reshape(-1)))
        size = sum(entry[1].size for entry in plan)
        return plan if size < update_parallel.FUSED_SPLIT_ELEMENTS or threads.cores() < 2 else None

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}


def _holds(plan, grads, variables):
    """Whether ``plan`` is still that of ``variables`` and takes ``grads`` as they are."""
    if len(plan) != len(grads):
        return False
    for entry, gradient, variable in zip(plan, grads, variables):
        value = entry[1]
        if (variable is not entry[0] or variable._value is not value or entry[3]._value is not entry[4]
                or entry[5]._value is not entry[6] or type(gradient) is not np.ndarray
                or gradient.shape != value.shape or gradient.dtype != value.dtype
                or not gradient.flags.c_contiguous or not value.flags.writeable
                or getattr(variable, "constraint", None) is not None):
            return False
    return True


def _plannable(cls):
    flag = _PLANNABLE.get(cls)
    if flag is None:
        flag = _PLANNABLE[cls] = all(getattr(cls, name) is getattr(Adam, name) for name in _PLANNED_METHODS)
    return flag
