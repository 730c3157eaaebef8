"""Lion: signed updates from an interpolation of the momentum and the gradient."""
import numpy as np

from kgraph.optimizers.optimizer import Optimizer


class Lion(Optimizer):
    """Lion, with Keras 3's update.

    ``w -= lr * sign(beta_1 * m + (1 - beta_1) * g)``; then ``m = beta_2 * m + (1 - beta_2) * g``.
    """

    _elementwise_update = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        if beta_1 <= 0 or beta_1 > 1:
            raise ValueError("Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer "
                             f"degenerates to SignSGD. Received: beta_1={beta_1}.")

    def slot_names(self):
        return ["momentum"]

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        (m,) = slots
        np.multiply(m, self.beta_1, out=scratch)
        scratch += gradient * (1.0 - self.beta_1)
        np.sign(scratch, out=scratch)
        scratch *= learning_rate
        value -= scratch
        m *= self.beta_2
        np.multiply(gradient, 1.0 - self.beta_2, out=scratch)
        m += scratch

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}
