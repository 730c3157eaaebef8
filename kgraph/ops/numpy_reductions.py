"""Sorting, order statistics and NaN-aware reductions of ``keras.ops.numpy``."""
import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import primitive
from kgraph.ops import creation as _creation
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.math import _no_gradient
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op
from kgraph.ops.reductions import _axis_arg

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import take as _take
from kgraph.ops.shape import transpose as _transpose

__all__ = [
    "amax", "amin", "argpartition", "argsort", "average", "count_nonzero", "cumprod", "diff", "in_top_k", "median",
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin",
    "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar", "percentile", "ptp", "quantile",
    "sort", "top_k",
]


def _scatter_back(g, shape, idx, axis):
    """The cotangent of ``take_along_axis(x, idx, axis)`` written back into ``x``'s shape."""
    grad = np.zeros(shape, dtype=g.dtype)
    np.put_along_axis(grad, idx, g, axis=axis)
    return grad


@op
@primitive(num_inputs=1)
def sort(x, axis=-1):
    """Sort ``x`` along ``axis`` (of the flattened array when None); the gradient follows each element."""
    x = np.asarray(x)
    if axis is None:
        flat = x.reshape(-1)
        idx = np.argsort(flat, kind="stable")
        return flat[idx], lambda g: _scatter_back(g, flat.shape, idx, 0).reshape(x.shape)
    idx = np.argsort(x, axis=axis, kind="stable")
    return np.take_along_axis(x, idx, axis=axis), lambda g: _scatter_back(g, x.shape, idx, axis)


@op
@_no_gradient
def argsort(x, axis=-1):
    """Indices that sort ``x`` along ``axis`` (stable; int32)."""
    return np.argsort(x, axis=axis, kind="stable").astype(np.int32)


@op
@_no_gradient
def argpartition(x, kth, axis=-1):
    """Indices that partition ``x`` around its ``kth`` element along ``axis`` (int32)."""
    return np.argpartition(x, kth, axis=axis).astype(np.int32)


@op
@primitive(num_inputs=1)
def top_k(x, k, sorted=True):
    """The ``k`` largest values along the last axis and their int32 indices (ties: the lower index first)."""
    x = np.asarray(x)
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    values = np.take_along_axis(x, idx, axis=-1)

    def vjp(gs):
        return _scatter_back(gs[0], x.shape, idx, -1)

    return (values, idx.astype(np.int32)), vjp


@op
@_no_gradient
def in_top_k(targets, predictions, k):
    """Whether each target class is among the ``k`` largest predictions of its row."""
    predictions = np.asarray(predictions)
    target_score = np.take_along_axis(predictions, np.asarray(targets).astype(np.int64)[:, None], axis=-1)
    return np.sum(predictions > target_score, axis=-1) < k


@op
@primitive(num_inputs=1)
def cumprod(x, axis=None, dtype=None):
    """Cumulative product along ``axis`` (of the flattened array when None); the gradient is exact at zeros."""
    x = np.asarray(x)
    work = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis % x.ndim
    out = np.cumprod(work, axis=ax, dtype=dtype)

    def vjp(g):
        g, xs = np.moveaxis(g, ax, 0), np.moveaxis(work, ax, 0)
        # d/dx_i = prod(x[:i]) * h_i, with h_i = g_i + x_{i+1} * h_{i+1} (no division by x_i).
        before = np.concatenate([np.ones_like(xs[:1]), np.cumprod(xs[:-1], axis=0)], axis=0)
        h = np.empty_like(g)
        carry = np.zeros_like(g[0]) if len(g) else None
        for i in range(len(g) - 1, -1, -1):
            carry = g[i] + (xs[i + 1] * carry if i + 1 < len(g) else 0)
            h[i] = carry
        return np.moveaxis(before * h, 0, ax).reshape(x.shape)

    return out, vjp


@op
def amax(x, axis=None, keepdims=False):
    """Maximum over ``axis`` (``max``)."""
    return _reductions.max(x, axis=axis, keepdims=keepdims)


@op
def amin(x, axis=None, keepdims=False):
    """Minimum over ``axis`` (``min``)."""
    return _reductions.min(x, axis=axis, keepdims=keepdims)


@op
def ptp(x, axis=None, keepdims=False):
    """Range (maximum minus minimum) over ``axis``."""
    return _reductions.max(x, axis=axis, keepdims=keepdims) - _reductions.min(x, axis=axis, keepdims=keepdims)


@op
@_no_gradient
def count_nonzero(x, axis=None):
    """Number of non-zero elements over ``axis`` (int32)."""
    return np.asarray(np.count_nonzero(x, axis=_axis_arg(axis)), dtype=np.int32)


@op
def average(x, axis=None, weights=None):
    """Mean over ``axis`` weighted by ``weights`` (of ``x``'s shape, or 1-D along an int ``axis``)."""
    x = floating(x)
    if weights is None:
        return _reductions.mean(x, axis=axis)
    weights = floating(weights)
    if len(_shape(weights)) == 1 and len(_shape(x)) > 1 and isinstance(axis, int):
        shape = [1] * len(_shape(x))
        shape[axis] = -1
        weights = _reshape(weights, shape)
    return _reductions.sum(x * weights, axis=axis) / _reductions.sum(weights * _creation.ones_like(x), axis=axis)


@op
def diff(a, n=1, axis=-1):
    """The ``n``-th discrete difference along ``axis``."""
    for _ in range(n):
        size = _shape(a)[axis]
        a = _take(a, list(range(1, size)), axis=axis) - _take(a, list(range(size - 1)), axis=axis)
    return a


def _quantile_sorted(values, q, axis, keepdims, method):
    """The ``q`` quantiles (a scalar or 1-D) of ``values`` along the int ``axis`` by NumPy's named methods."""
    methods = ("linear", "lower", "higher", "midpoint", "nearest")
    if method not in methods:
        raise ValueError(f"method must be one of {methods}. Received: method={method!r}")
    n = _shape(values)[axis]
    qs = np.asarray(q, dtype=np.float64)
    if np.any((qs < 0) | (qs > 1)):
        raise ValueError(f"Quantiles must be in the range [0, 1]. Received: q={q}")
    position = qs.reshape(-1) * (n - 1)
    low, high = np.floor(position).astype(np.int64), np.ceil(position).astype(np.int64)
    frac = {"linear": position - low, "lower": 0 * position, "higher": (high > low).astype(np.float64),
            "midpoint": 0.5 * (high > low), "nearest": (np.round(position) > low).astype(np.float64)}[method]
    a, b = _take(values, low.tolist(), axis=axis), _take(values, high.tolist(), axis=axis)
    shape = [1] * len(_shape(values))
    shape[axis] = -1
    out = a + (b - a) * frac.astype(dtype_of(values)).reshape(shape)
    out = _moveaxis(out, axis, 0)
    if keepdims:
        out = _expand_dims(out, axis + 1)
    return out if qs.ndim else out[0]


def _along_one_axis(x, axis):
    """``x`` with the reduced axes moved to the end and merged, and that axis (-1); all of it when None."""
    if axis is None:
        return _reshape(x, (-1,)), -1
    axes = sorted(a % len(_shape(x)) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(axes) == 1:
        return x, axes[0]
    kept = [a for a in range(len(_shape(x))) if a not in axes]
    moved = _transpose(x, kept + axes)
    reduced = [_shape(x)[a] for a in axes]
    if None in reduced:
        return _reshape(moved, [_shape(x)[a] for a in kept] + [-1]), -1
    return _reshape(moved, [-1 if _shape(x)[a] is None else _shape(x)[a] for a in kept]
                      + [int(np.prod(reduced))]), -1


def _restore_dims(out, x, axis, q_dims):
    """Reduced axes as size 1 (keepdims with several axes or all of them)."""
    rank = len(_shape(x))
    axes = range(rank) if axis is None else [a % rank for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
    shape = list(_shape(out)[:q_dims]) + [1 if i in axes else d for i, d in enumerate(_shape(x))]
    return _reshape(out, [-1 if d is None else d for d in shape])


@op
def quantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantiles (``q`` in [0, 1], a scalar or 1-D) of ``x`` over ``axis``, as NumPy computes them."""
    x = floating(x)
    values, ax = _along_one_axis(x, axis)
    several = axis is None or isinstance(axis, (tuple, list))
    out = _quantile_sorted(sort(values, axis=ax), q, ax, keepdims and not several, method)
    return _restore_dims(out, x, axis, np.ndim(q)) if keepdims and several else out


@op
def percentile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th percentiles (``q`` in [0, 100]) of ``x`` over ``axis``."""
    return quantile(x, np.asarray(q, dtype=np.float64) / 100, axis=axis, method=method, keepdims=keepdims)


@op
def median(x, axis=None, keepdims=False):
    """Median of ``x`` over ``axis``."""
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


def _without_nans(x, fill):
    x = floating(x)
    return _math.where(_math.isnan(x), fill, x)


@op
def nansum(x, axis=None, keepdims=False):
    """Sum over ``axis`` treating NaNs as 0."""
    return _reductions.sum(_without_nans(x, 0), axis=axis, keepdims=keepdims)


@op
def nanprod(x, axis=None, keepdims=False):
    """Product over ``axis`` treating NaNs as 1."""
    return _reductions.prod(_without_nans(x, 1), axis=axis, keepdims=keepdims)


@op
def nanmax(x, axis=None, keepdims=False):
    """Maximum over ``axis`` ignoring NaNs."""
    return _reductions.max(_without_nans(x, -np.inf), axis=axis, keepdims=keepdims)


@op
def nanmin(x, axis=None, keepdims=False):
    """Minimum over ``axis`` ignoring NaNs."""
    return _reductions.min(_without_nans(x, np.inf), axis=axis, keepdims=keepdims)


@op
def nanmean(x, axis=None, keepdims=False):
    """Mean over ``axis`` ignoring NaNs."""
    count = _reductions.sum(_math.cast(_math.logical_not(_math.isnan(floating(x))), dtype_of(floating(x))), axis=axis,
                   keepdims=keepdims)
    return nansum(x, axis=axis, keepdims=keepdims) / count


@op
def nanvar(x, axis=None, keepdims=False):
    """Population variance over ``axis`` ignoring NaNs."""
    x = floating(x)
    centered = x - nanmean(x, axis=axis, keepdims=True)
    return nanmean(centered * centered, axis=axis, keepdims=keepdims)


@op
def nanstd(x, axis=None, keepdims=False):
    """Population standard deviation over ``axis`` ignoring NaNs."""
    return _math.sqrt(nanvar(x, axis=axis, keepdims=keepdims))


@op
def nancumsum(x, axis=None, dtype=None):
    """Cumulative sum along ``axis`` treating NaNs as 0."""
    return _reductions.cumsum(_without_nans(x, 0), axis=axis, dtype=dtype)


@op
def nancumprod(x, axis=None, dtype=None):
    """Cumulative product along ``axis`` treating NaNs as 1."""
    return cumprod(_without_nans(x, 1), axis=axis, dtype=dtype)


@op
@_no_gradient
def nanargmax(x, axis=None, keepdims=False):
    """Index of the maximum along ``axis`` ignoring NaNs (-1 where all are NaN)."""
    x = np.asarray(x, dtype=np.result_type(x, backend.floatx()))
    out = np.argmax(np.where(np.isnan(x), -np.inf, x), axis=axis, keepdims=keepdims)
    return np.where(np.all(np.isnan(x), axis=axis, keepdims=keepdims), -1, out).astype(np.int32)


@op
@_no_gradient
def nanargmin(x, axis=None, keepdims=False):
    """Index of the minimum along ``axis`` ignoring NaNs (-1 where all are NaN)."""
    x = np.asarray(x, dtype=np.result_type(x, backend.floatx()))
    out = np.argmin(np.where(np.isnan(x), np.inf, x), axis=axis, keepdims=keepdims)
    return np.where(np.all(np.isnan(x), axis=axis, keepdims=keepdims), -1, out).astype(np.int32)


@op
@_no_gradient
def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th quantiles of ``x`` over ``axis`` ignoring NaNs; no gradient."""
    x = np.asarray(x)
    out = np.nanquantile(x, q, axis=_axis_arg(axis), method=method, keepdims=keepdims)
    return out.astype(x.dtype if x.dtype.kind == "f" else backend.floatx())


@op
def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    """The ``q``-th percentiles of ``x`` over ``axis`` ignoring NaNs; no gradient."""
    return nanquantile(x, np.asarray(q, dtype=np.float64) / 100, axis=axis, method=method, keepdims=keepdims)


@op
def nanmedian(x, axis=None, keepdims=False):
    """Median of ``x`` over ``axis`` ignoring NaNs; no gradient."""
    return nanquantile(x, 0.5, axis=axis, keepdims=keepdims)
