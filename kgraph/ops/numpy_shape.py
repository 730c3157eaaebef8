"""Joining, splitting, triangles, diagonals and array creation of ``keras.ops.numpy``."""
import builtins

import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import _value, primitive
from kgraph.ops import creation as _creation
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import broadcast_to as _broadcast_to
from kgraph.ops.shape import concatenate as _concatenate
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import flip as _flip
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import pad as _pad
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import split as _split
from kgraph.ops.shape import swapaxes as _swapaxes

__all__ = [
    "append", "array", "array_split", "bartlett", "blackman", "copy", "diag", "diagflat", "diagonal", "dsplit",
    "dstack", "empty", "empty_like", "fliplr", "flipud", "geomspace", "hamming", "hanning", "hsplit",
    "hstack", "identity", "kaiser", "linspace", "logspace", "meshgrid", "rot90", "size", "trace", "tri", "tril",
    "triu", "vsplit", "vstack",
]


def _at_least(x, rank):
    while len(_shape(x)) < rank:
        x = _expand_dims(x, 0 if rank < 3 or len(_shape(x)) == 0 else -1)
    return x


@op
def hstack(xs):
    """Join along the second axis (the first for 1-D arrays)."""
    xs = [_at_least(x, 1) for x in xs]
    return _concatenate(xs, axis=0 if len(_shape(xs[0])) == 1 else 1)


@op
def vstack(xs):
    """Join along the first axis, 1-D arrays as rows."""
    return _concatenate([_at_least(x, 2) for x in xs], axis=0)


@op
def dstack(xs):
    """Join along the third axis, lower-rank arrays made 3-D first."""
    out = []
    for x in xs:
        rank = len(_shape(x))
        x = _reshape(x, (1, 1, 1)) if rank == 0 else _reshape(x, (1, -1, 1)) if rank == 1 else x
        out.append(_expand_dims(x, -1) if len(_shape(x)) == 2 else x)
    return _concatenate(out, axis=2)


@op
def append(x1, x2, axis=None):
    """``x2`` appended to ``x1`` along ``axis`` (both flattened when None)."""
    if axis is None:
        return _concatenate([_reshape(x1, (-1,)), _reshape(x2, (-1,))], axis=0)
    return _concatenate([x1, x2], axis=axis)


@op
def array_split(x, indices_or_sections, axis=0):
    """Split ``x`` along ``axis`` into sections of sizes differing by at most one (the first ones larger)."""
    if isinstance(indices_or_sections, int):
        n, parts = _shape(x)[axis], indices_or_sections
        sizes = [n // parts + (1 if i < n % parts else 0) for i in range(parts)]
        indices_or_sections = np.cumsum(sizes)[:-1].tolist()
    return _split(x, indices_or_sections, axis=axis)


@op
def hsplit(x, indices_or_sections):
    """Split along the second axis (the first for 1-D arrays)."""
    return _split(x, indices_or_sections, axis=0 if len(_shape(x)) == 1 else 1)


@op
def vsplit(x, indices_or_sections):
    """Split along the first axis."""
    return _split(x, indices_or_sections, axis=0)


@op
def dsplit(x, indices_or_sections):
    """Split along the third axis."""
    return _split(x, indices_or_sections, axis=2)


@op
def fliplr(x):
    """Reverse the second axis."""
    return _flip(x, axis=1)


@op
def flipud(x):
    """Reverse the first axis."""
    return _flip(x, axis=0)


@op
def rot90(array, k=1, axes=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``axes`` (from the first toward the second)."""
    a0, a1 = axes
    k %= 4
    if k == 0:
        return copy(array)
    if k == 2:
        return _flip(_flip(array, axis=a0), axis=a1)
    return _swapaxes(_flip(array, axis=a1), a0, a1) if k == 1 else _flip(_swapaxes(array, a0, a1), axis=a1)


def _triangle_mask(rows, cols, k, lower):
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    return c - r <= k if lower else c - r >= k


@op
def tril(x, k=0):
    """Zeros above the ``k``-th diagonal of the last two axes."""
    rows, cols = _shape(x)[-2:]
    return _math.where(_triangle_mask(rows, cols, k, True), x, 0)


@op
def triu(x, k=0):
    """Zeros below the ``k``-th diagonal of the last two axes."""
    rows, cols = _shape(x)[-2:]
    return _math.where(_triangle_mask(rows, cols, k, False), x, 0)


@op
def diagonal(x, offset=0, axis1=0, axis2=1):
    """The ``offset`` diagonal over ``axis1`` and ``axis2``, as a new last axis."""
    rank = len(_shape(x))
    a1, a2 = axis1 % rank, axis2 % rank
    x = _moveaxis(x, (a1, a2), (-2, -1))
    rows, cols = _shape(x)[-2:]
    mask = np.eye(rows, cols, offset, dtype=bool)
    picked = _reductions.sum(_math.where(mask, x, 0), axis=-1)
    start, stop = builtins.max(0, -offset), builtins.min(rows, cols - offset)
    return picked[..., start:builtins.max(start, stop)]


@op
def trace(x, offset=0, axis1=0, axis2=1):
    """Sum of the ``offset`` diagonal over ``axis1`` and ``axis2``."""
    return _reductions.sum(diagonal(x, offset, axis1, axis2), axis=-1)


@op
def diag(x, k=0):
    """The ``k``-th diagonal of a 2-D ``x``, or a 2-D array with 1-D ``x`` on its ``k``-th diagonal."""
    rank = len(_shape(x))
    if rank == 2:
        return diagonal(x, k)
    if rank != 1:
        raise ValueError(f"diag expects a 1-D or 2-D input. Received: x.shape={_shape(x)}")
    n = _shape(x)[0] + builtins.abs(k)
    values = _pad(x, (0, builtins.abs(k)))
    values = _reshape(values, (-1, 1) if k >= 0 else (1, -1))
    return _math.where(np.eye(n, n, k, dtype=bool), values, 0)


@op
def diagflat(x, k=0):
    """A 2-D array with the flattened ``x`` on its ``k``-th diagonal."""
    return diag(_reshape(x, (-1,)), k)


def _linspace_values(start, stop, num, endpoint, axis):
    start, stop = floating(start), floating(stop)
    steps = np.arange(num, dtype=np.float64) / builtins.max(num - 1 if endpoint else num, 1)
    delta = stop - start
    shape = (-1,) + (1,) * len(_shape(delta))
    steps = steps.astype(np.result_type(dtype_of(start), dtype_of(stop))).reshape(shape)
    out = _expand_dims(start, 0) + steps * _expand_dims(delta, 0)
    return _moveaxis(out, 0, axis) if axis != 0 else out


@op
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included when ``endpoint``)."""
    out = _linspace_values(start, stop, num, endpoint, axis)
    if dtype is not None:
        out = _math.cast(out, dtype)
    if retstep:
        return out, (floating(stop) - floating(start)) / builtins.max(num - 1 if endpoint else num, 1)
    return out


@op
def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    """``base ** linspace(start, stop)``."""
    out = _math.power(float(base), _linspace_values(start, stop, num, endpoint, axis))
    return out if dtype is None else _math.cast(out, dtype)


@op
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``num`` values from ``start`` to ``stop`` evenly spaced on a log scale (positive bounds)."""
    out = _math.exp(_linspace_values(_math.log(floating(start)), _math.log(floating(stop)), num, endpoint, axis))
    return out if dtype is None else _math.cast(out, dtype)


@op
def meshgrid(*x, indexing="xy"):
    """Coordinate arrays from 1-D vectors (``"xy"``: Cartesian, ``"ij"``: matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij'. Received: indexing={indexing!r}")
    sizes = [_shape(v)[0] for v in x]
    if indexing == "xy" and len(x) > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, v in enumerate(x):
        axis = {0: 1, 1: 0}.get(i, i) if indexing == "xy" and len(x) > 1 else i
        shape = [1] * len(x)
        shape[axis] = -1
        out.append(_broadcast_to(_reshape(v, shape), sizes))
    return out


@op
@primitive
def copy(x):
    """A copy of ``x``."""
    return np.array(x, copy=True), lambda g: g


@op
def size(x):
    """The number of elements of ``x`` (a Python int)."""
    return int(np.prod(_shape(x)))


@op
def array(x, dtype=None):
    """``x`` as an array of ``dtype`` (Keras's conversion rules when None)."""
    return _math.convert_to_tensor(x, dtype=dtype)


@op
def empty(shape, dtype=None):
    """An array of ``shape`` (filled with zeros; dtype defaults to floatx)."""
    return np.zeros(shape, dtype=backend.standardize_dtype(dtype))


@op
def empty_like(x, dtype=None):
    """An array of ``x``'s shape (filled with zeros)."""
    return _creation.zeros_like(x, dtype=dtype)


@op
def identity(n, dtype=None):
    """The ``n x n`` identity matrix (dtype defaults to floatx)."""
    return np.eye(n, dtype=backend.standardize_dtype(dtype))


@op
def tri(N, M=None, k=0, dtype=None):
    """Ones at and below the ``k``-th diagonal of an ``N x M`` array (dtype defaults to floatx)."""
    return np.tri(N, M, k, dtype=backend.standardize_dtype(dtype))


def _window(fn, x, *args):
    return fn(int(_value(x)), *args).astype(backend.floatx())


@op
def bartlett(x):
    """The Bartlett (triangular) window of ``x`` points."""
    return _window(np.bartlett, x)


@op
def blackman(x):
    """The Blackman window of ``x`` points."""
    return _window(np.blackman, x)


@op
def hamming(x):
    """The Hamming window of ``x`` points."""
    return _window(np.hamming, x)


@op
def hanning(x):
    """The Hann window of ``x`` points."""
    return _window(np.hanning, x)


@op
def kaiser(x, beta):
    """The Kaiser window of ``x`` points with shape parameter ``beta``."""
    return _window(np.kaiser, x, float(beta))
