"""RMSprop: divide the gradient by a running root mean square."""
import numpy as np

from kgraph.ops.kernels import compiled
from kgraph.optimizers.optimizer import Optimizer


class RMSprop(Optimizer):
    """RMSprop, with Keras 3's update.

    ``v = rho * v + (1 - rho) * g**2``; the step is ``lr * g / sqrt(v + epsilon)``
    (``centered``: ``sqrt(v - a**2 + epsilon)`` with ``a`` the running mean
    gradient). With ``momentum``: ``mom = momentum * mom + step``; ``w -= mom``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.rho = rho
        self.momentum = momentum
        self.epsilon = epsilon
        self.centered = centered

    def slot_names(self):
        names = ["velocity"]
        if self.momentum > 0:
            names.append("momentum")
        if self.centered:
            names.append("average_gradient")
        return names

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        if self._fused(gradient, value, slots, learning_rate):
            return
        velocity = slots[0]
        rho = self.rho
        velocity *= rho
        np.square(gradient, out=scratch)
        scratch *= 1.0 - rho
        velocity += scratch
        if self.centered:
            average = slots[-1]
            average *= rho
            np.multiply(gradient, 1.0 - rho, out=scratch)
            average += scratch
            np.square(average, out=scratch)
            np.subtract(velocity, scratch, out=scratch)
            scratch += self.epsilon
        else:
            np.add(velocity, self.epsilon, out=scratch)
        np.sqrt(scratch, out=scratch)
        np.divide(gradient, scratch, out=scratch)
        scratch *= learning_rate
        if self.momentum > 0:
            momentum = slots[1]
            momentum *= self.momentum
            momentum += scratch
            np.subtract(value, momentum, out=value)
        else:
            np.subtract(value, scratch, out=value)

    def _fused_update(self, largest):
        return compiled.kernels(largest) is not None

    def _fused(self, gradient, value, slots, learning_rate):
        """The update as one compiled loop (``kernels.compiled``), where available, with the same values."""
        fused = compiled.kernels(value.size)
        momentum = slots[1] if self.momentum > 0 else None
        average = slots[-1] if self.centered else None
        if fused is None or not compiled.usable(value, gradient, slots[0], average, momentum):
            return False
        constants = compiled.constants(value.dtype, self.rho, 1.0 - self.rho, self.epsilon, learning_rate,
                                       self.momentum)
        if constants is None:
            return False
        fused.rmsprop(*compiled.flat(value, gradient, slots[0], average, momentum), *constants)
        return True

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}
