"""Adagrad: per-element learning rates from the sum of squared gradients."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Adagrad(Optimizer):
    """Adagrad: ``acc += g**2``; ``w -= lr * g / sqrt(acc + epsilon)``.

    initial_accumulator_value: the starting value of ``acc``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def slot_names(self):
        return ["accumulator"]

    def slot_initial_value(self, slot_name):
        return self.initial_accumulator_value

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        (accumulator,) = slots
        np.square(gradient, out=scratch)
        accumulator += scratch
        np.add(accumulator, self.epsilon, out=scratch)
        np.sqrt(scratch, out=scratch)
        np.divide(gradient, scratch, out=scratch)
        scratch *= learning_rate
        np.subtract(value, scratch, out=value)

    def get_config(self):
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
