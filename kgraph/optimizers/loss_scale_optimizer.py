"""Keras's LossScaleOptimizer: dynamic loss scaling around another optimizer, for ``mixed_float16`` training.

``train_step`` multiplies the loss by ``dynamic_scale`` (``scale_loss``) before taking gradients, so that small
float16 gradients do not underflow; ``apply`` divides the gradients by the scale and hands them to the inner
optimizer when all are finite, and otherwise skips the step and halves the scale. After ``dynamic_growth_steps``
finite steps in a row the scale doubles. ``compile`` wraps the optimizer in one for a ``mixed_float16`` model,
as Keras does (``auto_scale_loss=True``).
"""
import numpy as np

from kgraph import ops
from kgraph.optimizers.optimizer import Optimizer

# Base-optimizer arguments Keras's LossScaleOptimizer accepts only at their defaults (older configs carry them).
_BASE_DEFAULTS = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                  "use_ema": False, "ema_momentum": 0.99, "ema_overwrite_frequency": None,
                  "loss_scale_factor": None, "gradient_accumulation_steps": None}


class LossScaleOptimizer(Optimizer):
    """Dynamic loss scaling around ``inner_optimizer`` (Keras 3's arguments and behaviour)."""

    def __init__(self, inner_optimizer, initial_scale=2.0**15, dynamic_growth_steps=2000, name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, simply set "
                             "`loss_scale_factor` directly on the `inner_optimizer`.")
        for key, default in _BASE_DEFAULTS.items():
            if key in kwargs and kwargs.pop(key) != default:
                raise ValueError(f"LossScaleOptimizer does not support `{key}`. Instead, set `{key}` on the "
                                 "`inner_optimizer`.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: `{'`, `'.join(kwargs)}`.")
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"`inner_optimizer` must be a kgraph Optimizer. Received: {inner_optimizer!r}")
        if isinstance(inner_optimizer, LossScaleOptimizer):
            raise TypeError("`inner_optimizer` is already a LossScaleOptimizer: its loss would be scaled twice.")
        if not float(initial_scale) > 0 or int(dynamic_growth_steps) < 1:
            raise ValueError(f"`initial_scale` must be positive and `dynamic_growth_steps` at least 1. Received: "
                             f"initial_scale={initial_scale}, dynamic_growth_steps={dynamic_growth_steps}")
        self.inner_optimizer = inner_optimizer
        super().__init__(learning_rate=0.0, name=name)
        self.initial_scale = float(initial_scale)
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        self.step_counter = 0
        self.dynamic_scale = float(initial_scale)
        # As Keras: the inner optimizer's own `loss_scale_factor` is dropped, else its gradients would be scaled twice.
        inner_optimizer.loss_scale_factor = None

    # The step count and the learning rate are the inner optimizer's, as in Keras (this optimizer's own
    # "iteration" Variable stays 0, as Keras's does).
    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @iterations.setter
    def iterations(self, value):
        Optimizer.iterations.fset(self, value)

    def _step_counter(self):
        return self.inner_optimizer._step_counter()

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    def scale_loss(self, loss):
        """``loss`` times the current scale (recorded on the tape, so the gradients are scaled too)."""
        return ops.multiply(loss, np.asarray(self.dynamic_scale, dtype=np.asarray(loss).dtype))

    def apply(self, grads, trainable_variables=None):
        """Unscale and apply ``grads`` if all are finite; else skip the step and halve the scale."""
        grads = list(grads)
        finite = all(g is None or bool(np.all(np.isfinite(g))) for g in grads)
        if not finite:
            self.step_counter = 0
            self.dynamic_scale *= 0.5
            return
        scale = self.dynamic_scale
        self.inner_optimizer.apply([None if g is None else np.asarray(g) / np.asarray(scale, np.asarray(g).dtype)
                                    for g in grads], trainable_variables)
        if self.step_counter == self.dynamic_growth_steps - 1:
            self.step_counter = 0
            self.dynamic_scale *= 2.0
        else:
            self.step_counter += 1

    # Slots, building and their state are the inner optimizer's.
    def slot_names(self):
        return self.inner_optimizer.slot_names()

    def slot_initial_value(self, slot_name):
        return self.inner_optimizer.slot_initial_value(slot_name)

    def initial_slot(self, slot_name, variable):
        return self.inner_optimizer.initial_slot(slot_name, variable)

    def slot_groups(self):
        return self.inner_optimizer.slot_groups()

    def state_groups(self):
        return self.inner_optimizer.state_groups()

    def initial_state(self, slot_name, variable):
        return self.inner_optimizer.initial_state(slot_name, variable)

    def finalize_variable_values(self, var_list):
        self.inner_optimizer.finalize_variable_values(var_list)

    def trailing_variables(self):
        return self.inner_optimizer.trailing_variables()

    def build(self, variables):
        self.inner_optimizer.build(variables)

    @property
    def built(self):
        return self.inner_optimizer.built

    @property
    def variables(self):
        return self.inner_optimizer.variables

    def get_slot_state(self, index):
        return self.inner_optimizer.get_slot_state(index)

    def set_slot_state(self, variables, state, iterations=None):
        self.inner_optimizer.set_slot_state(variables, state, iterations)

    def get_config(self):
        from kgraph.saving.serialization_lib import serialize_keras_object
        return {"name": self.name, "inner_optimizer": serialize_keras_object(self.inner_optimizer),
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kgraph import optimizers
        config = dict(config)
        inner = config.pop("inner_optimizer")
        inner = inner if isinstance(inner, Optimizer) else optimizers.deserialize(inner, custom_objects)
        return cls(inner, **config)

    def __repr__(self):
        return f"<LossScaleOptimizer name={self.name!r} inner={self.inner_optimizer!r} scale={self.dynamic_scale}>"
