"""Crossentropies, PSNR and multi-hot encoding of ``keras.ops.nn``."""
import math as _pymath

from kgraph import backend
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.nn import log_softmax as _log_softmax
from kgraph.ops.nn import one_hot as _one_hot
from kgraph.ops.nn import relu as _relu
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import squeeze as _squeeze

__all__ = ["binary_crossentropy", "categorical_crossentropy", "multi_hot", "psnr", "sparse_categorical_crossentropy"]


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
