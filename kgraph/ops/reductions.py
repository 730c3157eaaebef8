"""Reductions (sum, mean, max, min, var, std, prod, logsumexp, cumsum), named as in ``keras.ops``."""
import math as _pymath

import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.ops.operations import op

__all__ = ["cumsum", "logsumexp", "max", "mean", "min", "prod", "std", "sum", "var"]


def _axis_arg(axis):
    """NumPy reductions take an int or a tuple of axes; also accept a list."""
    return tuple(axis) if isinstance(axis, list) else axis


def _reduced_axes(axis, ndim):
    """Return the sorted non-negative axes a reduction over ``axis`` removes."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of bounds for an array of rank {ndim}. Received: axis={axis}")
    return tuple(sorted(a % ndim for a in axes))


def _keepdims_shape(shape, axis):
    axes = _reduced_axes(axis, len(shape))
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _count(shape, axis):
    return _pymath.prod(shape[a] for a in _reduced_axes(axis, len(shape)))


_add_reduce = np.add.reduce
_WIDE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _sum_of(x, axis, keepdims):
    """``np.sum(x, axis, keepdims=keepdims)`` for an ndarray: the same ``add.reduce`` without its Python wrapper."""
    return _add_reduce(x, axis, None, None, keepdims)


def _mean_of(x, axis, keepdims, count):
    """``np.mean(x, axis, keepdims=keepdims)``, ``count`` the items each mean divides by (> 0).

    For a float32 or float64 array the steps of NumPy's own mean, without its Python wrappers (about 10 us of a
    loss's reduction at every training step): ``add.reduce``, then the division by the count as an ``intp``, in
    place for an array and through the sum's type for a scalar; the same values, bit for bit. Any other dtype
    (integers and bools average in float64, float16 sums in float32) and an empty reduction (NumPy warns) go to
    ``np.mean`` itself."""
    if type(x) is not np.ndarray or x.dtype not in _WIDE_FLOATS or count == 0:
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = _add_reduce(x, axis, None, None, keepdims)
    items = np.intp(count)
    if type(total) is np.ndarray:
        return np.true_divide(total, items, out=total, casting="unsafe")
    return total.dtype.type(total / items)


# Up to this many elements a reduction's VJP writes its broadcast cotangent out (a loss's mean over a batch, at
# every step: about 4 us less than np.broadcast_to's Python); above it, a read-only broadcast view as before.
_SPREAD_WRITTEN = 1 << 12


def _spread(g, shape):
    """``np.broadcast_to(g, shape)``, ``g`` an array broadcastable to ``shape``: the same values."""
    if _pymath.prod(shape) > _SPREAD_WRITTEN:
        return np.broadcast_to(g, shape)
    out = np.empty(shape, g.dtype)
    out[...] = g
    return out


@op
@primitive
def sum(x, axis=None, keepdims=False):
    """Sum over ``axis`` (all axes when None)."""
    x = np.asarray(x)
    axis = _axis_arg(axis)
    out = _sum_of(x, axis, keepdims)
    return out, lambda g: _spread(g.reshape(_keepdims_shape(x.shape, axis)), x.shape)


@op
@primitive
def mean(x, axis=None, keepdims=False):
    """Mean over ``axis`` (all axes when None)."""
    x = np.asarray(x)
    if axis is None:  # (a loss's mean over the batch, at every step: the same shapes without the axes' Python)
        count, kept = x.size, (1,) * x.ndim
    else:
        axis = _axis_arg(axis)
        count, kept = _count(x.shape, axis), _keepdims_shape(x.shape, axis)
    out = _mean_of(x, axis, keepdims, count)
    return out, lambda g: _spread(g.reshape(kept) / count, x.shape)


def _extremum(reduce, x, axis, keepdims):
    x = np.asarray(x)
    axis = _axis_arg(axis)
    out = reduce(x, axis=axis, keepdims=keepdims)

    def vjp(g):
        kshape = _keepdims_shape(x.shape, axis)
        mask = np.equal(x, out.reshape(kshape))
        # Ties share the gradient evenly.
        count = np.sum(mask, axis=_reduced_axes(axis, x.ndim), keepdims=True).astype(g.dtype)
        return mask * (g.reshape(kshape) / count)

    return out, vjp


@op
@primitive
def max(x, axis=None, keepdims=False):
    """Maximum over ``axis``; tied maxima share the gradient evenly."""
    return _extremum(np.max, x, axis, keepdims)


@op
@primitive
def min(x, axis=None, keepdims=False):
    """Minimum over ``axis``; tied minima share the gradient evenly."""
    return _extremum(np.min, x, axis, keepdims)


@op
@primitive
def var(x, axis=None, keepdims=False):
    """Population variance over ``axis``."""
    x = np.asarray(x)
    axis = _axis_arg(axis)
    out = np.var(x, axis=axis, keepdims=keepdims)

    def vjp(g):
        centered = x - np.mean(x, axis=axis, keepdims=True)
        return centered * (g.reshape(_keepdims_shape(x.shape, axis)) * (2 / _count(x.shape, axis)))

    return out, vjp


@op
@primitive
def std(x, axis=None, keepdims=False):
    """Population standard deviation over ``axis`` (gradient 0 where it is 0)."""
    x = np.asarray(x)
    axis = _axis_arg(axis)
    out = np.std(x, axis=axis, keepdims=keepdims)

    def vjp(g):
        kshape = _keepdims_shape(x.shape, axis)
        s = out.reshape(kshape)
        scale = np.where(s > 0, g.reshape(kshape) / (_count(x.shape, axis) * np.where(s > 0, s, 1)), 0)
        return (x - np.mean(x, axis=axis, keepdims=True)) * scale

    return out, vjp


@op
@primitive
def prod(x, axis=None, keepdims=False):
    """Product over ``axis``; the gradient is exact even where elements are 0."""
    x = np.asarray(x)
    axis = _axis_arg(axis)
    out = np.prod(x, axis=axis, keepdims=keepdims)

    def vjp(g):
        axes = _reduced_axes(axis, x.ndim)
        kept = [a for a in range(x.ndim) if a not in axes]
        order = kept + list(axes)
        moved = np.transpose(x, order)
        flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
        ones = np.ones(flat.shape[:-1] + (1,), dtype=x.dtype)
        # d prod / d x_i = prod(x[:i]) * prod(x[i+1:]), without dividing by x_i.
        before = np.concatenate([ones, np.cumprod(flat[..., :-1], axis=-1)], axis=-1)
        after = np.concatenate([np.cumprod(flat[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
        grad = before * after * g.reshape(flat.shape[:-1] + (1,))
        return np.transpose(grad.reshape(moved.shape), np.argsort(order))

    return out, vjp


@op
@primitive
def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x)))`` over ``axis``, computed without overflow."""
    x = np.asarray(x)
    axis = _axis_arg(axis)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    lse = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    out = lse if keepdims else lse.reshape([d for i, d in enumerate(lse.shape) if i not in _reduced_axes(axis, x.ndim)])
    return out, lambda g: g.reshape(lse.shape) * np.exp(x - lse)


@op
@primitive
def cumsum(x, axis=None, dtype=None):
    """Cumulative sum along ``axis`` (of the flattened array when None)."""
    x = np.asarray(x)
    out = np.cumsum(x, axis=axis, dtype=dtype)

    def vjp(g):
        if axis is None:
            return np.flip(np.cumsum(np.flip(g))).reshape(x.shape)
        return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)

    return out, vjp
