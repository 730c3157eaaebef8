"""Dropout: zeroes a random fraction of the inputs in training, scaling the rest."""
import numpy as np

from kgraph import ops
from kgraph.backend.autodiff import no_inputs, primitive
from kgraph.layers.layer import Layer
from kgraph.random import generator


@primitive(num_inputs=0)
def _dropout_mask(rng, shape, rate, dtype):
    """The kept entries scaled by ``1 / (1 - rate)``, drawn from ``rng`` (None: kgraph's global generator, as it
    is when called). An op of its own, so that a replayed training step draws a new mask at every step, from the
    same generator in the same order as the step run as written."""
    keep = (rng or generator()).random(shape) >= rate
    return keep.astype(dtype) / np.asarray(1.0 - rate, dtype=dtype), no_inputs


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of inputs in training and scales the rest by ``1 / (1 - rate)``."""

    _masking = True

    _preserves_dtype = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between "
                             f"0 and 1. Received: rate={rate}")
        self.rate = float(rate)
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        shape = np.shape(inputs)
        if self.noise_shape is not None:
            shape = tuple(s if n is None else n for s, n in zip(shape, self.noise_shape))
        if self.rate == 1:
            return ops.multiply(inputs, np.zeros(shape, dtype=inputs.dtype))
        return ops.multiply(inputs, _dropout_mask(self._rng, shape, self.rate, np.dtype(inputs.dtype)))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "noise_shape": list(self.noise_shape) if self.noise_shape else None,
                       "seed": self.seed})
        return config
