"""Nadam: Adam with Nesterov momentum."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer

_DECAY = 0.96


class Nadam(Optimizer):
    """Nadam, with Keras 3's update.

    At step ``t``, with ``u_t = beta_1 * (1 - 0.5 * 0.96**t)`` and ``P_t = u_1 * ... * u_t``:
    ``m += (g - m) * (1 - beta_1)``; ``v += (g**2 - v) * (1 - beta_2)``;
    ``m_hat = u_{t+1} * m / (1 - P_t * u_{t+1}) + (1 - u_t) * g / (1 - P_t)``;
    ``w -= lr * m_hat / (sqrt(v / (1 - beta_2**t)) + epsilon)``.

    ``P_t`` follows from the step count, so it needs no state of its own; Keras keeps it as a variable after
    the slots (``trailing_variables``).
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self._products = (0, 1.0)  # (t, P_t): the last product computed

    def __setstate__(self, state):
        super().__setstate__(state)
        self._products = (0, 1.0)

    def slot_names(self):
        return ["momentum", "velocity"]

    def slot_groups(self):
        return [self.slot_names()]

    def _u(self, t):
        return self.beta_1 * (1.0 - 0.5 * _DECAY**t)

    def _product(self, t):
        """``P_t``, the product of ``u_1 .. u_t`` (1 at t = 0)."""
        start, product = self._products
        if t < start:
            start, product = 0, 1.0
        for step in range(start + 1, t + 1):
            product *= self._u(step)
        self._products = (t, product)
        return product

    def trailing_variables(self):
        return [np.asarray(self._product(self._step_count()), dtype="float32")]

    def _prepare_step(self, learning_rate):
        t = self._step_count() + 1
        product = self._product(t)
        u_t, u_next = self._u(t), self._u(t + 1)
        self._coefficients = (u_next / (1.0 - product * u_next), (1.0 - u_t) / (1.0 - product),
                              1.0 / (1.0 - self.beta_2**t))

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        m, v = slots
        m_scale, g_scale, v_scale = self._coefficients
        np.subtract(gradient, m, out=scratch)
        scratch *= 1.0 - self.beta_1
        m += scratch
        np.square(gradient, out=scratch)
        scratch -= v
        scratch *= 1.0 - self.beta_2
        v += scratch
        np.multiply(v, v_scale, out=scratch)
        np.sqrt(scratch, out=scratch)
        scratch += self.epsilon
        np.divide(m, scratch, out=scratch)
        scratch *= m_scale * learning_rate
        value -= scratch
        # the gradient's share: lr * g_scale * g / (sqrt(v_hat) + epsilon)
        np.multiply(v, v_scale, out=scratch)
        np.sqrt(scratch, out=scratch)
        scratch += self.epsilon
        np.divide(gradient, scratch, out=scratch)
        scratch *= g_scale * learning_rate
        value -= scratch

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
