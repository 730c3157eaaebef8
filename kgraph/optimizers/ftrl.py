"""FTRL: follow the regularized leader, with L1, L2 and L2-shrinkage regularization."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Ftrl(Optimizer):
    """FTRL-proximal, with Keras 3's update.

    With ``p = -learning_rate_power``, ``l2 = l2_regularization_strength + beta / (2 * lr)`` and
    ``g' = g + 2 * l2_shrinkage_regularization_strength * w``:
    ``n_new = n + g**2``; ``z += g' - (n_new**p - n**p) / lr * w``;
    ``w = (clip(z, -l1, l1) - z) / (n_new**p / lr + 2 * l2)``; ``n = n_new``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 l2_shrinkage_regularization_strength=0.0, beta=0.0, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        for argument, value, allowed in (
                ("initial_accumulator_value", initial_accumulator_value, "positive or zero"),
                ("learning_rate_power", -learning_rate_power, "negative or zero"),
                ("l1_regularization_strength", l1_regularization_strength, "positive or zero"),
                ("l2_regularization_strength", l2_regularization_strength, "positive or zero"),
                ("l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength, "positive or zero")):
            if value < 0.0:
                shown = -value if argument == "learning_rate_power" else value
                raise ValueError(f"`{argument}` needs to be {allowed}. Received: {argument}={shown}.")
        self.learning_rate_power = learning_rate_power
        self.initial_accumulator_value = initial_accumulator_value
        self.l1_regularization_strength = l1_regularization_strength
        self.l2_regularization_strength = l2_regularization_strength
        self.l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength
        self.beta = beta

    def slot_names(self):
        return ["accumulator", "linear"]

    def slot_groups(self):
        return [self.slot_names()]

    def slot_initial_value(self, slot_name):
        return self.initial_accumulator_value if slot_name == "accumulator" else 0.0

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        accumulator, linear = slots
        power = -self.learning_rate_power
        l2 = self.l2_regularization_strength + self.beta / (2.0 * learning_rate)
        l1 = self.l1_regularization_strength
        linear += gradient
        if self.l2_shrinkage_regularization_strength:
            linear += (2.0 * self.l2_shrinkage_regularization_strength) * value
        # linear -= (n_new**p - n**p) / lr * w, with accumulator still n
        np.power(accumulator, power, out=scratch)
        accumulator += np.square(gradient)
        scratch -= np.power(accumulator, power)
        scratch *= value
        scratch /= learning_rate
        linear += scratch
        # w = (clip(z, -l1, l1) - z) / (n_new**p / lr + 2 * l2)
        np.clip(linear, -l1, l1, out=value)
        value -= linear
        np.power(accumulator, power, out=scratch)
        scratch /= learning_rate
        scratch += 2.0 * l2
        value /= scratch

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength,
                "l2_shrinkage_regularization_strength": self.l2_shrinkage_regularization_strength,
                "beta": self.beta}
