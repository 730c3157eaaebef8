"""Rescaling: ``inputs * scale + offset`` in the compute dtype (e.g. pixel values to [0, 1])."""
import numpy as np

from kgraph import ops
from kgraph.layers.layer import Layer


class Rescaling(Layer):
    """Multiplies by ``scale`` and adds ``offset`` (scalars or arrays broadcasting against the inputs)."""

    def __init__(self, scale, offset=0.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.offset = offset

    def call(self, inputs):
        dtype = self.compute_dtype
        x = ops.cast(inputs, dtype)
        scale = np.asarray(self.scale, dtype=dtype)
        offset = np.asarray(self.offset, dtype=dtype)
        return ops.add(ops.multiply(x, scale), offset)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"scale": _plain(self.scale), "offset": _plain(self.offset)})
        return config


def _plain(value):
    return np.asarray(value).tolist() if isinstance(value, np.ndarray) else value
