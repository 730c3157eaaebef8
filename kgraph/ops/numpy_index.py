"""Products, slicing, scattering and searching of ``keras.ops``.

``unique``, ``nonzero``, ``bincount`` and ``histogram`` give outputs whose
shape depends on the values: they run eagerly only.
"""
import string

import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import primitive
from kgraph.ops import creation as _creation
from kgraph.ops import math as _math
from kgraph.ops import numpy_shape as _numpy_shape
from kgraph.ops import reductions as _reductions
from kgraph.ops.math import _no_gradient
from kgraph.ops.numpy_math import floating
from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import flip as _flip
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import pad as _pad
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import stack as _stack
from kgraph.ops.shape import take as _take
from kgraph.ops.shape import transpose as _transpose

__all__ = [
    "bincount", "corrcoef", "correlate", "cross", "digitize", "dot", "histogram", "inner", "isin", "kron",
    "nonzero", "outer", "scatter", "scatter_update", "searchsorted", "select", "slice", "slice_update",
    "tensordot", "trapezoid", "unique", "unravel_index", "vander", "vdot",
]


def _rank(x):
    return len(_shape(x))


@op
def tensordot(x1, x2, axes=2):
    """Sum of products over the last ``axes`` axes of ``x1`` and the first of ``x2`` (or two lists of axes)."""
    r1, r2 = _rank(x1), _rank(x2)
    if isinstance(axes, int):
        a1, a2 = list(range(r1 - axes, r1)), list(range(axes))
    else:
        a1, a2 = ([a] if isinstance(a, int) else list(a) for a in axes)
    a1, a2 = [a % r1 for a in a1], [a % r2 for a in a2]
    letters = iter(string.ascii_lowercase)
    s1 = [next(letters) for _ in range(r1)]
    s2 = [next(letters) for _ in range(r2)]
    for i, j in zip(a1, a2):
        s2[j] = s1[i]
    out = [c for i, c in enumerate(s1) if i not in a1] + [c for j, c in enumerate(s2) if j not in a2]
    return _math.einsum(f"{''.join(s1)},{''.join(s2)}->{''.join(out)}", x1, x2)


@op
def dot(x1, x2):
    """NumPy's dot: products of scalars, vectors, matrices, and over the last/second-to-last axes."""
    r1, r2 = _rank(x1), _rank(x2)
    if r1 == 0 or r2 == 0:
        return _math.multiply(x1, x2)
    return tensordot(x1, x2, axes=([-1], [0 if r2 == 1 else -2]))


@op
def inner(x1, x2):
    """Sum of products over the last axes of ``x1`` and ``x2``."""
    if _rank(x1) == 0 or _rank(x2) == 0:
        return _math.multiply(x1, x2)
    return tensordot(x1, x2, axes=([-1], [-1]))


@op
def outer(x1, x2):
    """Products of every element of the flattened ``x1`` with every element of the flattened ``x2``."""
    return _reshape(x1, (-1, 1)) * _reshape(x2, (1, -1))


@op
def vdot(x1, x2):
    """Dot product of the flattened ``x1`` and ``x2``."""
    return _reductions.sum(_reshape(x1, (-1,)) * _reshape(x2, (-1,)))


@op
def kron(x1, x2):
    """Kronecker product: blocks of ``x2`` scaled by each element of ``x1``."""
    r = max(_rank(x1), _rank(x2))
    s1 = (1,) * (r - _rank(x1)) + tuple(_shape(x1))
    s2 = (1,) * (r - _rank(x2)) + tuple(_shape(x2))
    a = _reshape(x1, _known([d for n in s1 for d in (n, 1)]))
    b = _reshape(x2, _known([d for n in s2 for d in (1, n)]))
    return _reshape(a * b, _known([None if m is None or n is None else m * n for m, n in zip(s1, s2)]))


def _known(shape):
    """A reshape target: an unknown (batch) size as -1."""
    return [-1 if d is None else d for d in shape]


@op
def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors (or the z-component of 2-vectors) along the given axes."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _moveaxis(x1, axisa, -1), _moveaxis(x2, axisb, -1)
    na, nb = _shape(a)[-1], _shape(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross expects vectors of 2 or 3 components. Received: x1.shape={_shape(x1)}, "
                         f"x2.shape={_shape(x2)}")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2] if na == 3 else None
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2] if nb == 3 else None
    z = a0 * b1 - a1 * b0
    if a2 is None and b2 is None:
        return z
    zero = _creation.zeros_like(z)
    a2 = zero if a2 is None else a2
    b2 = zero if b2 is None else b2
    out = _stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z], axis=-1)
    return _moveaxis(out, -1, axisc)


@op
def select(condlist, choicelist, default=0):
    """Per element, the choice of the first true condition (``default`` where none is)."""
    if len(condlist) != len(choicelist):
        raise ValueError("select needs one choice per condition. "
                         f"Received: len(condlist)={len(condlist)}, len(choicelist)={len(choicelist)}")
    out = default
    for cond, choice in zip(reversed(condlist), reversed(choicelist)):
        out = _math.where(cond, choice, out)
    return out


@op
def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (sample points ``x`` or spacing ``dx``)."""
    y = floating(y)
    n = _shape(y)[axis]
    head, tail = _take(y, list(range(n - 1)), axis=axis), _take(y, list(range(1, n)), axis=axis)
    if x is None:
        widths = dx
    else:
        x = floating(x)
        widths = _take(x, list(range(1, n)), axis=-1) - _take(x, list(range(n - 1)), axis=-1)
        if _rank(x) == 1 and _rank(y) > 1:
            shape = [1] * _rank(y)
            shape[axis] = -1
            widths = _reshape(widths, shape)
    return _reductions.sum((head + tail) * widths, axis=axis) / 2


@op
def vander(x, N=None, increasing=False):
    """Columns of powers of the 1-D ``x`` (decreasing unless ``increasing``)."""
    n = _shape(x)[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    return _math.power(_expand_dims(x, -1), powers.astype(np.int32))


@op
def corrcoef(x):
    """Pearson correlation coefficients between the rows of ``x``."""
    x = floating(x)
    centered = x - _reductions.mean(x, axis=-1, keepdims=True)
    cov = _math.matmul(centered, _transpose(centered))
    d = _math.sqrt(_numpy_shape.diagonal(cov))
    return _math.clip(cov / (_expand_dims(d, -1) * _expand_dims(d, 0)), -1.0, 1.0)


@op
def correlate(x1, x2, mode="valid"):
    """Cross-correlation of two 1-D sequences (``"valid"``, ``"same"`` or ``"full"``)."""
    if mode not in ("valid", "same", "full"):
        raise ValueError(f"mode must be 'valid', 'same' or 'full'. Received: mode={mode!r}")
    n, m = _shape(x1)[0], _shape(x2)[0]
    if m > n:
        return _flip(correlate(x2, x1, mode), axis=0)
    pad = {"valid": (0, 0), "same": (m // 2, (m - 1) // 2), "full": (m - 1, m - 1)}[mode]
    x = _pad(floating(x1), pad)
    windows = _stack([x[i:i + m] for i in range(_shape(x)[0] - m + 1)], axis=0)
    return _math.matmul(windows, floating(x2))


@op
@primitive(num_inputs=1)
def slice(inputs, start_indices, shape):
    """The block of ``inputs`` of ``shape`` starting at ``start_indices``."""
    x = np.asarray(inputs)
    key = tuple(np.s_[int(s):int(s) + int(n if n != -1 else d - s)]
                for s, n, d in zip(np.asarray(start_indices).tolist(), shape, x.shape))

    def vjp(g):
        grad = np.zeros(x.shape, dtype=g.dtype)
        grad[key] = g
        return grad

    return x[key].copy(), vjp


@op
@primitive(num_inputs=3)
def slice_update(inputs, start_indices, updates):
    """``inputs`` with the block at ``start_indices`` replaced by ``updates``."""
    x, u = np.asarray(inputs), np.asarray(updates)
    key = tuple(np.s_[int(s):int(s) + n] for s, n in zip(np.asarray(start_indices).tolist(), u.shape))
    out = x.copy()
    out[key] = u

    def vjp(g):
        inner = g.copy()
        inner[key] = 0
        return inner, None, lambda: g[key]

    return out, vjp


def _index_tuple(indices):
    indices = np.asarray(indices).astype(np.int64)
    return tuple(np.moveaxis(indices, -1, 0))


@op
@primitive(num_inputs=2)
def scatter(indices, values, shape):
    """Zeros of ``shape`` with ``values`` added at ``indices`` (rows of leading coordinates)."""
    v = np.asarray(values)
    index = _index_tuple(indices)
    out = np.zeros(shape, dtype=v.dtype)
    np.add.at(out, index, v)
    return out, lambda g: (None, g[index])


@op
@primitive(num_inputs=3)
def scatter_update(inputs, indices, updates, reduction=None):
    """``inputs`` with ``updates`` written at ``indices`` (``reduction``: None replaces, "add" adds...)."""
    x, u = np.asarray(inputs), np.asarray(updates)
    index = _index_tuple(indices)
    reducers = {None: None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
    if reduction not in reducers:
        raise ValueError(f"reduction must be one of {list(reducers)}. Received: reduction={reduction!r}")
    out = x.copy()
    if reduction is None:
        out[index] = u
    else:
        reducers[reduction].at(out, index, u.astype(x.dtype))
    if reduction not in (None, "add"):
        return out, lambda g: (None, None, None)

    def vjp(g):
        if reduction == "add":
            return g, None, lambda: g[index]
        kept = g.copy()
        kept[index] = 0
        return kept, None, lambda: g[index]

    return out, vjp


@op
@_no_gradient
def searchsorted(sorted_sequence, values, side="left"):
    """Indices at which ``values`` would be inserted to keep the 1-D ``sorted_sequence`` sorted (int32)."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right'. Received: side={side!r}")
    return np.searchsorted(sorted_sequence, values, side=side).astype(np.int32)


@op
@_no_gradient
def digitize(x, bins):
    """Index of the bin of each value of ``x`` (``bins`` increasing; int32)."""
    return np.digitize(x, bins).astype(np.int32)


@op
@_no_gradient
def isin(x1, x2, assume_unique=False, invert=False):
    """Whether each element of ``x1`` is in ``x2``."""
    return np.isin(x1, x2, assume_unique=assume_unique, invert=invert)


@op
def unravel_index(indices, shape):
    """Coordinates in ``shape`` of flat ``indices``, as a tuple of int32 arrays."""
    return tuple(np.asarray(c, dtype=np.int32) for c in np.unravel_index(_math.convert_to_numpy(indices), shape))


@op
def nonzero(x):
    """Indices of the non-zero elements, one int32 array per axis (eager only)."""
    return tuple(i.astype(np.int32) for i in np.nonzero(_math.convert_to_numpy(x)))


@op
def unique(x, sorted=True, return_index=False, return_inverse=False, return_counts=False, axis=None,
           size=None, fill_value=None):
    """The sorted unique elements of ``x`` (eager only); ``size`` pads or cuts them to a fixed length."""
    if not sorted:
        raise ValueError("unique returns its values sorted; sorted=False is not supported. Received: sorted=False")
    out = np.unique(_math.convert_to_numpy(x), return_index=return_index, return_inverse=return_inverse,
                    return_counts=return_counts, axis=axis)
    if size is None:
        return out
    values = out[0] if isinstance(out, tuple) else out
    fill = values[0] if fill_value is None and values.size else (fill_value or 0)
    padded = np.full((size,) + values.shape[1:], fill, dtype=values.dtype)
    padded[:min(size, len(values))] = values[:size]
    return (padded,) + tuple(out[1:]) if isinstance(out, tuple) else padded


@op
@_no_gradient
def bincount(x, weights=None, minlength=0, sparse=False):
    """Counts of each non-negative integer of the 1-D ``x`` (or sums of ``weights``)."""
    if sparse:
        raise ValueError("bincount has no sparse output in kgraph. Received: sparse=True")
    out = np.bincount(x, weights=weights, minlength=minlength)
    return out.astype(np.int32) if weights is None else out.astype(np.asarray(weights).dtype)


@op
def histogram(x, bins=10, range=None):
    """Counts of ``x`` in ``bins`` equal bins over ``range``, and the bin edges."""
    counts, edges = np.histogram(_math.convert_to_numpy(x), bins=bins, range=range)
    return counts.astype(np.int32), edges.astype(backend.floatx())
