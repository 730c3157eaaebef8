"""Muon: momentum orthogonalized by a Newton-Schulz iteration for matrices, AdamW for everything else."""
import math
import re

import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Muon(Optimizer):
    """Muon, with Keras 3's update.

    A variable of rank 2 whose path matches neither ``exclude_layers`` nor (with ``exclude_embeddings``)
    "embedding" is updated by Muon: ``m += g + (momentum - 1) * m``; ``u = g + momentum * m`` with
    ``nesterov``, else ``m``; ``u`` orthogonalized by ``ns_steps`` Newton-Schulz steps (coefficients
    ``muon_a``, ``muon_b``, ``muon_c``); ``w -= lr * u * sqrt(max(rows, cols)) * rms_rate`` (no scaling
    when ``rms_rate`` is None); it decays by ``weight_decay``. Every other variable is updated by Adam
    (``adam_beta_1``, ``adam_beta_2``, ``epsilon``) at ``lr * adam_lr_ratio`` and decays by
    ``adam_weight_decay``. Only Adam's variables have a ``velocity`` slot.
    """

    def __init__(self, learning_rate=0.001, adam_beta_1=0.9, adam_beta_2=0.999, adam_weight_decay=0.004,
                 epsilon=1e-7, weight_decay=0.004, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None,
                 exclude_layers=None, exclude_embeddings=True, muon_a=3.4445, muon_b=-4.7750, muon_c=2.0315,
                 adam_lr_ratio=1, momentum=0.95, ns_steps=5, nesterov=True, rms_rate=0.2, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.adam_beta_1 = adam_beta_1
        self.adam_beta_2 = adam_beta_2
        self.epsilon = epsilon
        self.muon_a = muon_a
        self.muon_b = muon_b
        self.muon_c = muon_c
        self.adam_lr_ratio = adam_lr_ratio
        self.momentum = momentum
        self.ns_steps = ns_steps
        self.nesterov = nesterov
        self.exclude_embeddings = exclude_embeddings
        self.exclude_layers = exclude_layers or []
        self.adam_weight_decay = adam_weight_decay
        self.rms_rate = rms_rate

    def _should_use_adamw(self, variable):
        """Whether ``variable`` is updated by Adam rather than Muon."""
        if len(variable.shape) != 2:
            return True
        path = getattr(variable, "path", variable.name)
        if self.exclude_embeddings and "embedding" in path.lower():
            return True
        return any(re.search(keyword, path) for keyword in self.exclude_layers)

    def slot_names(self):
        return ["momentum", "velocity"]

    def slot_groups(self):
        return [self.slot_names()]

    def initial_slot(self, slot_name, variable):
        if slot_name == "velocity" and not self._should_use_adamw(variable):
            return None
        return super().initial_slot(slot_name, variable)

    def _weight_decay_of(self, variable):
        return self.adam_weight_decay if self._should_use_adamw(variable) else self.weight_decay

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        m, v = slots
        if v is not None:
            self._adam_step(gradient, value, m, v, learning_rate * self.adam_lr_ratio, scratch)
            return
        m *= self.momentum
        m += gradient
        update = gradient + self.momentum * m if self.nesterov else m
        update = self.zeropower_via_newtonschulz5(update, self.ns_steps) * learning_rate
        if self.rms_rate is not None:
            update *= math.sqrt(max(update.shape[0], update.shape[1])) * self.rms_rate
        value -= update.astype(value.dtype, copy=False)

    def _adam_step(self, gradient, value, m, v, learning_rate, scratch):
        t = self._step_count() + 1
        alpha = learning_rate * math.sqrt(1.0 - self.adam_beta_2**t) / (1.0 - self.adam_beta_1**t)
        np.subtract(gradient, m, out=scratch)
        scratch *= 1.0 - self.adam_beta_1
        m += scratch
        np.square(gradient, out=scratch)
        scratch -= v
        scratch *= 1.0 - self.adam_beta_2
        v += scratch
        np.sqrt(v, out=scratch)
        scratch += self.epsilon
        np.divide(m, scratch, out=scratch)
        scratch *= alpha
        value -= scratch

    def zeropower_via_newtonschulz5(self, x, steps):
        """An approximate orthogonalization of the matrix ``x`` (its last two axes) by ``steps`` quintic
        Newton-Schulz iterations, after scaling it to Frobenius norm about 1."""
        x = np.asarray(x)
        if x.ndim < 2:
            raise ValueError(f"Expected gradient or momentum to have at least 2 dimensions. Received: shape={x.shape}")
        tall = x.shape[-2] > x.shape[-1]
        if tall:
            x = np.swapaxes(x, -1, -2)
        x = x / (np.sqrt(np.sum(np.square(x), axis=(-2, -1), keepdims=True)) + 1e-7)
        for _ in range(steps):
            gram = x @ np.swapaxes(x, -1, -2)
            x = self.muon_a * x + (self.muon_b * gram + self.muon_c * gram @ gram) @ x
        return np.swapaxes(x, -1, -2) if tall else x

    def get_config(self):
        return {**super().get_config(), "adam_beta_1": self.adam_beta_1, "adam_beta_2": self.adam_beta_2,
                "epsilon": self.epsilon, "exclude_layers": self.exclude_layers, "muon_a": self.muon_a,
                "muon_b": self.muon_b, "muon_c": self.muon_c, "adam_lr_ratio": self.adam_lr_ratio,
                "momentum": self.momentum, "ns_steps": self.ns_steps, "nesterov": self.nesterov,
                "exclude_embeddings": self.exclude_embeddings, "adam_weight_decay": self.adam_weight_decay,
                "rms_rate": self.rms_rate}
