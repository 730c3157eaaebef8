"""Adafactor: second moments kept as row and column averages for matrices."""
import math

import numpy as np

from kgraph.optimizers.optimizer import Optimizer


def _rms(x):
    return math.sqrt(float(np.vdot(x, x)) / x.size) if x.size else 0.0


class Adafactor(Optimizer):
    """Adafactor, with Keras 3's update.

    At step ``t``: ``rho = min(lr, 1 / sqrt(t))``; ``alpha = max(epsilon_2, rms(w)) * rho``;
    ``beta = 1 - t**beta_2_decay``; ``s = g**2 + epsilon_1``. A variable of rank 2 or more keeps
    ``r = beta * r + (1 - beta) * mean(s, -1)`` and ``c = beta * c + (1 - beta) * mean(s, -2)``, and
    ``v = (r / mean(r, -1))[..., None] * c[..., None, :]``; a smaller one keeps ``v = beta * v + (1 - beta) * s``
    (and, as Keras, two unused scalar integer slots in place of ``r`` and ``c``).
    ``u = g / sqrt(v)``; ``w -= alpha * u / max(1, rms(u) / clip_threshold)``.

    relative_step: Keras's argument, kept in the configuration; the step size is ``min(lr, 1 / sqrt(t))``
        either way.
    """

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30, epsilon_2=1e-3, clip_threshold=1.0,
                 relative_step=True, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_2_decay = beta_2_decay
        self.epsilon_1 = epsilon_1
        self.epsilon_2 = epsilon_2
        self.clip_threshold = clip_threshold
        self.relative_step = relative_step

    def slot_names(self):
        return ["r", "c", "velocity"]

    def slot_groups(self):
        return [self.slot_names()]

    def initial_slot(self, slot_name, variable):
        shape = tuple(variable.shape)
        if slot_name == "velocity":
            return np.zeros(shape, dtype=variable.dtype)
        if len(shape) < 2:
            return np.zeros((), dtype="int32")
        return np.zeros(shape[:-1] if slot_name == "r" else shape[:-2] + shape[-1:], dtype=variable.dtype)

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        r, c, v = slots
        t = self._step_count() + 1
        rho = min(learning_rate, 1.0 / math.sqrt(t))
        alpha = max(self.epsilon_2, _rms(value)) * rho
        beta = 1.0 - float(t) ** self.beta_2_decay
        np.square(gradient, out=scratch)
        scratch += self.epsilon_1
        if value.ndim >= 2:
            r *= beta
            r += (1.0 - beta) * scratch.mean(axis=-1)
            c *= beta
            c += (1.0 - beta) * scratch.mean(axis=-2)
            np.multiply((r / r.mean(axis=-1, keepdims=True))[..., None], c[..., None, :], out=v)
        else:
            v *= beta
            scratch *= 1.0 - beta
            v += scratch
        np.sqrt(v, out=scratch)
        np.divide(gradient, scratch, out=scratch)
        scratch *= alpha / max(1.0, _rms(scratch) / self.clip_threshold)
        value -= scratch

    def get_config(self):
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay, "epsilon_1": self.epsilon_1,
                "epsilon_2": self.epsilon_2, "clip_threshold": self.clip_threshold,
                "relative_step": self.relative_step}
