"""Adadelta: step sizes from running averages of squared gradients and squared updates."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Adadelta(Optimizer):
    """Adadelta, with Keras 3's update.

    ``acc_g = rho * acc_g + (1 - rho) * g**2``;
    ``delta = -sqrt(acc_d + epsilon) * g / sqrt(acc_g + epsilon)``;
    ``acc_d = rho * acc_d + (1 - rho) * delta**2``; ``w += lr * delta``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def slot_names(self):
        return ["accumulated_grad", "accumulated_delta_var"]

    def slot_groups(self):
        return [self.slot_names()]

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        accumulated_grad, accumulated_delta = slots
        rho = self.rho
        accumulated_grad *= rho
        np.square(gradient, out=scratch)
        scratch *= 1.0 - rho
        accumulated_grad += scratch
        # scratch = delta = -sqrt(acc_d + eps) * g / sqrt(acc_g + eps)
        np.add(accumulated_delta, self.epsilon, out=scratch)
        np.sqrt(scratch, out=scratch)
        scratch *= gradient
        scratch /= np.sqrt(accumulated_grad + self.epsilon)
        np.negative(scratch, out=scratch)
        accumulated_delta *= rho
        accumulated_delta += (1.0 - rho) * np.square(scratch)
        scratch *= learning_rate
        value += scratch

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}
