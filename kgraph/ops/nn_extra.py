"""Activations, losses, normalization and attention of ``keras.ops.nn`` beyond ``kgraph.ops.nn``."""
import math as _pymath

import numpy as np

from kgraph import backend
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
# ``kgraph.ops.nn`` and ``.shape`` name a Keras namespace and an op, not the modules: ops imported by name.
from kgraph.ops.nn import (log_softmax as _log_softmax, one_hot as _one_hot, relu as _relu, sigmoid as _sigmoid,
                           softmax as _softmax)
from kgraph.ops.shape import (concatenate as _concatenate, moveaxis as _moveaxis, repeat as _repeat,
                              reshape as _reshape, shape as _shape, split as _split, squeeze as _squeeze,
                              take as _take, transpose as _transpose)
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.numpy_reductions import sort
from kgraph.ops.operations import op

__all__ = [
    "adaptive_average_pool", "adaptive_max_pool", "binary_crossentropy", "categorical_crossentropy", "celu",
    "depth_to_space", "dot_product_attention", "glu", "hard_shrink", "hard_tanh", "multi_hot", "normalize", "psnr",
    "rms_normalization", "soft_shrink", "space_to_depth", "sparse_categorical_crossentropy", "sparse_plus",
    "sparse_sigmoid", "sparsemax", "squareplus", "tanh_shrink", "threshold",
]


@op
def celu(x, alpha=1.0):
    """``max(x, 0) + min(alpha * (exp(x / alpha) - 1), 0)``."""
    x = floating(x)
    return _relu(x) + _math.minimum(alpha * _math.expm1(_math.minimum(x, 0) / alpha), 0)


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


@op
def normalize(x, axis=-1, order=2, epsilon=None):
    """``x`` divided by its ``order``-norm over ``axis`` (at least ``epsilon``)."""
    x = floating(x)
    epsilon = backend.epsilon() if epsilon is None else epsilon
    if order == 2:
        squares = _reductions.sum(_math.square(x), axis=axis, keepdims=True)
        return x * _math.rsqrt(_math.maximum(squares, epsilon * epsilon))
    norm = _math.power(_reductions.sum(_math.power(_math.abs(x), order), axis=axis, keepdims=True), 1 / order)
    return x / _math.maximum(norm, epsilon)


@op
def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    """``x`` divided by its root mean square over ``axis``, times ``scale``."""
    x = floating(x)
    epsilon = backend.epsilon() if epsilon is None else epsilon
    out = x * _math.rsqrt(_reductions.mean(_math.square(x), axis=axis, keepdims=True) + epsilon)
    return out if scale is None else out * scale


@op
def psnr(x1, x2, max_val):
    """Peak signal-to-noise ratio of ``x2`` against ``x1`` in decibels, over all elements."""
    mse = _reductions.mean(_math.square(floating(x1) - floating(x2)))
    return 20 * _pymath.log10(max_val) - 10 * _math.log(mse) / _pymath.log(10)


def _probabilities(output, axis):
    output = output / _reductions.sum(output, axis=axis, keepdims=True)
    eps = backend.epsilon()
    return _math.clip(output, eps, 1 - eps)


@op
def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between one-hot (or soft) ``target`` and ``output`` probabilities (or logits) on ``axis``."""
    output = floating(output)
    target = _math.cast(target, dtype_of(output))
    if from_logits:
        return -_reductions.sum(target * _log_softmax(output, axis=axis), axis=axis)
    return -_reductions.sum(target * _math.log(_probabilities(output, axis)), axis=axis)


@op
def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """Cross-entropy between integer class ``target`` and ``output`` probabilities (or logits) on ``axis``."""
    output = floating(output)
    if len(_shape(target)) == len(_shape(output)) and _shape(target)[-1] == 1:
        target = _squeeze(target, axis=-1)
    one_hot = _one_hot(_math.cast(target, "int32"), _shape(output)[axis], axis=axis, dtype=dtype_of(output))
    return categorical_crossentropy(one_hot, output, from_logits=from_logits, axis=axis)


@op
def binary_crossentropy(target, output, from_logits=False):
    """Elementwise binary cross-entropy of ``output`` probabilities (or logits) against ``target``."""
    output = floating(output)
    target = _math.cast(target, dtype_of(output))
    if from_logits:
        return _relu(output) - output * target + _math.log1p(_math.exp(-_math.abs(output)))
    eps = backend.epsilon()
    output = _math.clip(output, eps, 1 - eps)
    return -(target * _math.log(output) + (1 - target) * _math.log(1 - output))


@op
def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    """Multi-hot encode rows of integer class ids: 1 for each class a row contains (no gradient)."""
    if sparse:
        raise ValueError("multi_hot has no sparse output in kgraph. Received: sparse=True")
    num_classes = kwargs.pop("num_tokens", num_classes)
    if kwargs or num_classes is None:
        raise ValueError(f"multi_hot needs num_classes. Received: num_classes={num_classes}, kwargs={kwargs}")
    rank = len(_shape(inputs))
    encoded = _one_hot(inputs, num_classes, dtype=dtype)
    out = _reductions.max(encoded, axis=-2) if rank > 1 else encoded
    return out if axis == -1 else _moveaxis(out, -1, axis)


def _blocks(x, block_size, data_format):
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("data_format must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={data_format!r}")
    return x if data_format == "channels_last" else _transpose(x, (0, 2, 3, 1))


@op
def depth_to_space(x, block_size, data_format="channels_last"):
    """Move channel blocks into ``block_size x block_size`` spatial tiles (4-D input)."""
    x = _blocks(x, block_size, data_format)
    _, h, w, c = _shape(x)
    b = block_size
    y = _reshape(x, (-1, h, w, b, b, c // (b * b)))
    y = _reshape(_transpose(y, (0, 1, 3, 2, 4, 5)), (-1, h * b, w * b, c // (b * b)))
    return y if data_format == "channels_last" else _transpose(y, (0, 3, 1, 2))


@op
def space_to_depth(x, block_size, data_format="channels_last"):
    """Move ``block_size x block_size`` spatial tiles into channels (4-D input)."""
    x = _blocks(x, block_size, data_format)
    _, h, w, c = _shape(x)
    b = block_size
    y = _reshape(x, (-1, h // b, b, w // b, b, c))
    y = _reshape(_transpose(y, (0, 1, 3, 2, 4, 5)), (-1, h // b, w // b, c * b * b))
    return y if data_format == "channels_last" else _transpose(y, (0, 3, 1, 2))


@op
def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False,
                          flash_attention=None, attn_logits_soft_cap=None):
    """Scaled dot-product attention over ``(batch, length, heads, head_dim)`` tensors (grouped key heads too)."""
    if flash_attention:
        raise ValueError("kgraph has no flash attention kernel. Received: flash_attention=True")
    heads, kv_heads = _shape(query)[-2], _shape(key)[-2]
    if heads != kv_heads:
        key = _repeat(key, heads // kv_heads, axis=-2)
        value = _repeat(value, heads // kv_heads, axis=-2)
    scale = 1 / _pymath.sqrt(_shape(query)[-1]) if scale is None else scale
    logits = _math.einsum("btnh,bsnh->bnts", query, key) * scale
    if attn_logits_soft_cap is not None:
        logits = _math.tanh(logits / attn_logits_soft_cap) * attn_logits_soft_cap
    if bias is not None:
        logits = logits + bias
    allowed = None if mask is None else _math.cast(mask, "bool")
    if is_causal:
        t, s = _shape(query)[1], _shape(key)[1]
        causal = np.tril(np.ones((t, s), dtype=bool))
        allowed = causal if allowed is None else _math.logical_and(allowed, causal)
    if allowed is not None:
        logits = _math.where(allowed, logits, np.finfo(dtype_of(logits)).min)
    weights = _softmax(logits, axis=-1)
    return _math.einsum("bnts,bsnh->btnh", weights, value)


def _adaptive_windows(size, out):
    """PyTorch's adaptive windows: output ``i`` pools ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_pool(inputs, output_size, data_format, average):
    rank = len(_shape(inputs))
    if rank not in (3, 4, 5):
        raise ValueError(f"Adaptive pooling expects a rank 3, 4 or 5 input (batch, spatial..., channels). "
                         f"Received: inputs.shape={_shape(inputs)}")
    data_format = "channels_last" if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("data_format must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={data_format!r}")
    sizes = (output_size,) * (rank - 2) if isinstance(output_size, int) else tuple(output_size)
    axes = range(1, rank - 1) if data_format == "channels_last" else range(2, rank)
    x = floating(inputs) if average else inputs
    for axis, out in zip(axes, sizes):
        windows = _adaptive_windows(_shape(x)[axis], out)
        if average:
            weights = np.zeros((out, _shape(x)[axis]), dtype=dtype_of(x))
            for i, (start, stop) in enumerate(windows):
                weights[i, start:stop] = 1 / (stop - start)
            x = _moveaxis(_math.matmul(_moveaxis(x, axis, -1), weights.T), -1, axis)
        else:
            x = _concatenate([_reductions.max(_take(x, list(range(start, stop)), axis=axis), axis=axis, keepdims=True)
                                for start, stop in windows], axis=axis)
    return x


@op
def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to ``output_size`` (per spatial axis) with PyTorch's adaptive windows."""
    return _adaptive_pool(inputs, output_size, data_format, average=True)


@op
def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to ``output_size`` (per spatial axis) with PyTorch's adaptive windows."""
    return _adaptive_pool(inputs, output_size, data_format, average=False)
