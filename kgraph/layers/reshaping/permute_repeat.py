"""More reshaping layers: Permute and RepeatVector."""
import numpy as np

from kgraph import ops
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer


class Permute(Layer):
    """Permutes the non-batch axes: ``dims`` is a permutation of ``1..rank-1`` (1-indexed, as in Keras)."""

    _preserves_dtype = True

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of indices in `dims` "
                             f"must be consecutive and start from 1. Received dims={tuple(dims)}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return ops.transpose(inputs, (0,) + self.dims)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + tuple(input_shape[d] for d in self.dims)

    def get_config(self):
        config = super().get_config()
        config["dims"] = self.dims
        return config


class RepeatVector(Layer):
    """Repeats a ``(batch, features)`` input ``n`` times: ``(batch, n, features)``."""

    _preserves_dtype = True

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
            raise TypeError(f"Layer '{self.name}': expected an integer value for `n` (a positive int). "
                            f"Received: n={n!r}")
        self.n = int(n)
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return ops.repeat(ops.expand_dims(inputs, 1), self.n, axis=1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n, input_shape[1])

    def get_config(self):
        config = super().get_config()
        config["n"] = self.n
        return config
