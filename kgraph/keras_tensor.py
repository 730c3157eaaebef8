"""KerasTensor: a symbolic tensor that remembers the layer call that produced it."""
import collections

import numpy as np

from kgraph import backend

KerasHistory = collections.namedtuple("KerasHistory", ["layer", "node_index", "tensor_index"])


class KerasTensor:
    """A symbolic tensor: ``shape`` (batch dim ``None``), ``dtype``, ``name``, ``_keras_history``."""

    def __init__(self, shape, dtype=None, name=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = backend.standardize_dtype(dtype)
        self.name = name
        self._keras_history = None

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __array__(self, *args, **kwargs):
        raise TypeError(
            "A KerasTensor is symbolic: it is a placeholder for a shape and a dtype, not a value. "
            f"It cannot be converted to a NumPy array. Received: {self!r}. Pass it to kgraph layers "
            "or to `kgraph.Model(inputs, outputs)` instead."
        )

    def __bool__(self):
        raise TypeError(f"A symbolic KerasTensor cannot be used as a Python bool. Received: {self!r}")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def is_keras_tensor(x):
    return isinstance(x, KerasTensor)


def shape_of(x):
    """Shape of a KerasTensor or an array-like, as a tuple."""
    if isinstance(x, KerasTensor):
        return x.shape
    return tuple(np.shape(x))
