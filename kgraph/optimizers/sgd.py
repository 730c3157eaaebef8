"""Stochastic gradient descent with optional (Nesterov) momentum."""
import numpy as np

from kgraph.ops.kernels import compiled
from kgraph.optimizers.optimizer import Optimizer


class SGD(Optimizer):
    """Gradient descent: ``m = momentum * m - lr * g``; ``w += m``.

    With ``momentum=0`` this is plain ``w -= lr * g``. With ``nesterov`` the
    step is ``w += momentum * m - lr * g`` (using the updated ``m``).
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be a float between [0, 1]. Received: momentum={momentum!r}")
        self.momentum = float(momentum)
        self.nesterov = nesterov

    def slot_names(self):
        return ["momentum"] if self.momentum != 0 else []

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        if self._fused(gradient, value, slots[0] if slots else None, learning_rate):
            return
        step = np.multiply(gradient, learning_rate, out=scratch)
        if self.momentum == 0:
            np.subtract(value, step, out=value)
            return
        (m,) = slots
        m *= self.momentum
        m -= step
        if self.nesterov:
            np.subtract(value, step, out=value)
            np.multiply(m, self.momentum, out=scratch)
            np.add(value, scratch, out=value)
        else:
            np.add(value, m, out=value)

    def _fused_update(self, largest):
        return compiled.kernels(largest) is not None

    def _fused(self, gradient, value, m, learning_rate):
        """The update as one compiled loop (``kernels.compiled``), where available, with the same values."""
        fused = compiled.kernels(value.size)
        if fused is None or not compiled.usable(value, gradient, m):
            return False
        constants = compiled.constants(value.dtype, learning_rate, self.momentum)
        if constants is None:
            return False
        fused.sgd(*compiled.flat(value, gradient, m), *constants, bool(self.nesterov))
        return True

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}
