"""Activations of ``keras.ops.nn`` written with other ops: celu, glu, shrinkages, sparsemax and the rest."""
import numpy as np

from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.nn import relu as _relu
from kgraph.ops.nn import sigmoid as _sigmoid
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.numpy_reductions import sort
from kgraph.ops.operations import op
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import split as _split

__all__ = ["celu", "glu", "hard_shrink", "hard_tanh", "soft_shrink", "sparse_plus", "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink", "threshold"]


@op
def celu(x, alpha=1.0):
    """``max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0)``, written as a choice so that the gradient at 0 is 1
    (the exponential side's), as torch's ``celu`` gives it."""
    x = floating(x)
    positive = _math.greater(x, 0)
    negative_part = _math.where(positive, np.zeros((), dtype_of(x)), x)
    return _math.where(positive, x, alpha * _math.expm1(negative_part / alpha))


@op
def glu(x, axis=-1):
    """Gated linear unit: the first half of ``axis`` times the sigmoid of the second half."""
    if _shape(x)[axis] % 2:
        raise ValueError(f"glu splits axis {axis} in halves; its size must be even. Received: x.shape={_shape(x)}")
    a, b = _split(x, 2, axis=axis)
    return a * _sigmoid(b)


@op
def hard_tanh(x):
    """``x`` clipped to [-1, 1]."""
    return _math.clip(floating(x), -1.0, 1.0)


@op
def hard_shrink(x, threshold=0.5):
    """``x`` where ``|x| > threshold``, 0 elsewhere."""
    x = floating(x)
    return _math.where(_math.greater(_math.abs(x), threshold), x, 0)


@op
def soft_shrink(x, threshold=0.5):
    """``x`` moved toward 0 by ``threshold`` (0 within it)."""
    x = floating(x)
    return _math.where(_math.greater(x, threshold), x - threshold,
                       _math.where(_math.less(x, -threshold), x + threshold, 0))


@op
def tanh_shrink(x):
    """``x - tanh(x)``."""
    x = floating(x)
    return x - _math.tanh(x)


@op
def threshold(x, threshold, default_value):
    """``x`` where ``x > threshold``, ``default_value`` elsewhere."""
    x = floating(x)
    return _math.where(_math.greater(x, threshold), x, default_value)


@op
def sparse_plus(x):
    """0 below -1, ``x`` above 1, ``(x + 1) ** 2 / 4`` between."""
    x = floating(x)
    return _math.where(_math.less_equal(x, -1), 0, _math.where(_math.greater_equal(x, 1), x, _math.square(x + 1) / 4))


@op
def sparse_sigmoid(x):
    """0 below -1, 1 above 1, ``(x + 1) / 2`` between."""
    return _math.clip((floating(x) + 1) / 2, 0.0, 1.0)


@op
def squareplus(x, b=4):
    """``(x + sqrt(x ** 2 + b)) / 2``."""
    x = floating(x)
    return (x + _math.sqrt(_math.square(x) + b)) / 2


@op
def sparsemax(x, axis=-1):
    """Euclidean projection of ``x`` onto the probability simplex along ``axis``."""
    x = floating(x)
    z = _moveaxis(x, axis, -1)
    n = _shape(z)[-1]
    ranked = -sort(-z, axis=-1)
    k = np.arange(1, n + 1).astype(dtype_of(z))
    cumulative = _reductions.cumsum(ranked, axis=-1)
    support = _math.cast(_math.greater(1 + k * ranked, cumulative), dtype_of(z))
    size = _reductions.sum(support, axis=-1, keepdims=True)
    tau = (_reductions.sum(ranked * support, axis=-1, keepdims=True) - 1) / size
    return _moveaxis(_relu(z - tau), -1, axis)


