"""Adamax: Adam with the infinity norm of past gradients."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Adamax(Optimizer):
    """Adamax, with Keras 3's update.

    ``m += (g - m) * (1 - beta_1)``; ``u = max(beta_2 * u, |g|)``;
    ``w -= lr * m / ((1 - beta_1**t) * (u + epsilon))`` at step ``t``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def slot_names(self):
        return ["momentum", "norm"]

    def slot_groups(self):
        return [self.slot_names()]

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        m, u = slots
        t = self._step_count() + 1
        np.subtract(gradient, m, out=scratch)
        scratch *= 1.0 - self.beta_1
        m += scratch
        u *= self.beta_2
        np.abs(gradient, out=scratch)
        np.maximum(u, scratch, out=u)
        np.add(u, self.epsilon, out=scratch)
        scratch *= 1.0 - self.beta_1**t
        np.divide(m, scratch, out=scratch)
        scratch *= learning_rate
        value -= scratch

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
