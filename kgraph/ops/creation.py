"""Array creation of ``keras.ops``: zeros, ones, full (and their ``_like`` forms), eye and arange."""
import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import _value, is_recording
from kgraph.backend.tape_array import TapeArray
from kgraph.ops.operations import op

__all__ = ["arange", "eye", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like"]


def _constant(array):
    """While a tape records, a constant that `+=` and the like rebind (as a tensor's do) rather than overwrite:
    ``loss = ops.zeros(()); loss += term`` (keras-io's style transfer, Deep Dream) keeps ``loss`` on the tape."""
    return array.view(TapeArray) if is_recording() else array


@op
def zeros(shape, dtype=None):
    """Array of zeros (dtype defaults to floatx)."""
    return _constant(np.zeros(shape, dtype=backend.standardize_dtype(dtype)))


@op
def ones(shape, dtype=None):
    """Array of ones (dtype defaults to floatx)."""
    return _constant(np.ones(shape, dtype=backend.standardize_dtype(dtype)))


@op
def full(shape, fill_value, dtype=None):
    """Array filled with ``fill_value`` (dtype defaults to floatx)."""
    return _constant(np.full(shape, _value(fill_value), dtype=backend.standardize_dtype(dtype)))


@op
def zeros_like(x, dtype=None):
    """Zeros with the shape (and by default the dtype) of ``x``."""
    return np.zeros_like(_value(x), dtype=dtype)


@op
def ones_like(x, dtype=None):
    """Ones with the shape (and by default the dtype) of ``x``."""
    return np.ones_like(_value(x), dtype=dtype)


@op
def full_like(x, fill_value, dtype=None):
    """``fill_value`` with the shape (and by default the dtype) of ``x``."""
    return np.full_like(_value(x), _value(fill_value), dtype=dtype)


@op
def eye(N, M=None, k=0, dtype=None):
    """2-D array with ones on the ``k``-th diagonal (dtype defaults to floatx)."""
    return np.eye(N, M, k, dtype=backend.standardize_dtype(dtype))


@op
def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in ``[start, stop)``; floats default to floatx, ints to int32."""
    out = np.arange(start, stop, step) if stop is not None else np.arange(start, step=step)
    if dtype is not None:
        return out.astype(backend.standardize_dtype(dtype))
    return out.astype(backend.floatx() if out.dtype.kind == "f" else np.int32)
