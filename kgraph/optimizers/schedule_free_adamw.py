"""Schedule-free AdamW: Adam steps on an auxiliary sequence whose running average is the model's weights."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class ScheduleFreeAdamW(Optimizer):
    """ScheduleFreeAdamW, with the update Keras 3.15 applies.

    The ``momentum`` slot ``z`` starts as a copy of the variable. At step ``t`` (learning rate times
    ``min(t / warmup_steps, 1)`` while ``warmup_steps > 0``): ``v += (g**2 - v) * (1 - beta_2)``;
    ``z -= lr * g / (sqrt(v / (1 - beta_2**t)) + epsilon)``; ``w += (z - w) / t``.

    Keras computes the variable as ``(1 - beta_1) * z + beta_1 * x`` with ``x`` interpolated from an ``x``
    recovered from ``w`` and ``z``; as Keras's torch backend runs it, ``z`` there is already this step's
    value, and the expression reduces to ``w + (z - w) / t``, which is what is computed here.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.0025, beta_1=0.9, beta_2=0.999, epsilon=1e-8, warmup_steps=0,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.warmup_steps = warmup_steps

    def slot_names(self):
        return ["momentum", "velocity"]

    def slot_groups(self):
        return [self.slot_names()]

    def initial_slot(self, slot_name, variable):
        if slot_name == "momentum":
            return np.array(variable.value, dtype=variable.dtype, copy=True)
        return super().initial_slot(slot_name, variable)

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        z, v = slots
        t = self._step_count() + 1
        if self.warmup_steps > 0:
            learning_rate = learning_rate * min(t / self.warmup_steps, 1.0)
        np.square(gradient, out=scratch)
        scratch -= v
        scratch *= 1.0 - self.beta_2
        v += scratch
        np.multiply(v, 1.0 / (1.0 - self.beta_2**t), out=scratch)
        np.sqrt(scratch, out=scratch)
        scratch += self.epsilon
        np.divide(gradient, scratch, out=scratch)
        scratch *= learning_rate
        z -= scratch
        np.subtract(z, value, out=scratch)
        scratch *= 1.0 / t
        value += scratch

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "warmup_steps": self.warmup_steps}
