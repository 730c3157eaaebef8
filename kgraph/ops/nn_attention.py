"""``normalize``, ``rms_normalization`` and ``dot_product_attention`` of ``keras.ops.nn``."""
import math as _pymath

import numpy as np

from kgraph import backend
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.nn import softmax as _softmax
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op
from kgraph.ops.shape import repeat as _repeat
from kgraph.ops.shape import shape as _shape

__all__ = ["dot_product_attention", "normalize", "rms_normalization"]


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
