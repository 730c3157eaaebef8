"""LAMB: Adam steps scaled per variable by the ratio of the weight norm to the step norm."""
import math

import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Lamb(Optimizer):
    """Lamb, with Keras 3's update.

    ``m += (g - m) * (1 - beta_1)``; ``v += (g**2 - v) * (1 - beta_2)``;
    ``r = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)``;
    ``w -= ratio * lr * r`` with ``ratio = ||w|| / ||r||`` (1 where either norm is 0).
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon

    def slot_names(self):
        return ["momentum", "velocity"]

    def slot_groups(self):
        return [self.slot_names()]

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        m, v = slots
        t = self._step_count() + 1
        np.subtract(gradient, m, out=scratch)
        scratch *= 1.0 - self.beta_1
        m += scratch
        np.square(gradient, out=scratch)
        scratch -= v
        scratch *= 1.0 - self.beta_2
        v += scratch
        np.multiply(v, 1.0 / (1.0 - self.beta_2**t), out=scratch)
        np.sqrt(scratch, out=scratch)
        scratch += self.epsilon
        np.divide(m, scratch, out=scratch)
        scratch *= 1.0 / (1.0 - self.beta_1**t)
        w_norm = math.sqrt(float(np.vdot(value, value)))
        r_norm = math.sqrt(float(np.vdot(scratch, scratch)))
        ratio = w_norm / r_norm if w_norm > 0 and r_norm > 0 else 1.0
        scratch *= ratio * learning_rate
        value -= scratch

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
