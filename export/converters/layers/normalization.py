"""Converters for BatchNormalization (inference) and LayerNormalization."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from export.builder import CHANNELS_FIRST, NATIVE, FeatureOrder, Value
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from collections.abc import Sequence

    from export.context import ConversionContext
    from export.registry import ConverterResult


def _order_tag(order):
    return "rows_" + hashlib.sha1(order.tobytes()).hexdigest()[:8]


def _feature_weight(ctx, variable, order, shape=None):
    """``variable`` as an initializer, reshaped to ``shape`` and/or permuted by a FeatureOrder's ``order``."""
    if variable is None:
        return None
    if order is None and (shape is None or tuple(shape) == tuple(variable.shape)):
        return ctx.weight(variable)

    def transform(v):
        v = v.reshape(shape) if shape is not None else v
        return v[order] if order is not None else v
    tag = "x".join(str(d) for d in (shape or variable.shape))
    return ctx.weight(variable, transform=transform, variant=tag if order is None else f"{tag}_{_order_tag(order)}")


def reduce_mean(ctx: ConversionContext, x: str, axes: Sequence[int]) -> str:
    """ReduceMean over ``axes`` keeping them (``axes`` is an attribute before opset 18, an input from 18)."""
    if ctx.opset >= 18:
        return ctx.op("ReduceMean", [x, ctx.const(np.array(axes, dtype=np.int64), name="axes")], keepdims=1)
    return ctx.op("ReduceMean", [x], axes=list(axes), keepdims=1)


@converter(layers.BatchNormalization, opset=13)
def convert_batch_normalization(ctx: ConversionContext) -> ConverterResult:
    """ONNX BatchNormalization (moving statistics, epsilon written out) on the channel axis.

    The channel axis is where ONNX wants it for channels-first data of rank 3
    and more and for any rank-2 input (a FeatureOrder permutes the four
    vectors instead); any other axis is normalized with Sub/Mul/Add.
    """
    layer = ctx.layer
    rank = ctx.input_rank()
    axis = layer.axis % rank
    channels = ctx.input_shape()[axis]
    dtype = layer.moving_mean.dtype
    layout = ctx.layout()
    if axis != rank - 1:
        return _batch_normalization_affine(ctx, axis, layout)
    order = layout.order if isinstance(layout, FeatureOrder) else None
    if rank == 2:
        x = ctx.input(0, layout=None)
        out_layout = layout
    else:
        x = ctx.input(0, CHANNELS_FIRST)
        out_layout = CHANNELS_FIRST
    scale = _feature_weight(ctx, layer.gamma, order) or ctx.const(np.ones(channels, dtype), name="ones")
    offset = _feature_weight(ctx, layer.beta, order) or ctx.const(np.zeros(channels, dtype), name="zeros")
    mean = _feature_weight(ctx, layer.moving_mean, order)
    variance = _feature_weight(ctx, layer.moving_variance, order)
    y = ctx.op("BatchNormalization", [x, scale, offset, mean, variance], epsilon=layer.epsilon)
    return Value(y, out_layout)


def _batch_normalization_affine(ctx, axis, layout):
    """``(x - mean) * (gamma / sqrt(variance + epsilon)) + beta`` broadcast on the physical position of ``axis``."""
    layer = ctx.layer
    rank = ctx.input_rank()
    if layout.perm(rank) is None:
        layout = NATIVE
    x = ctx.input(0, layout)
    shape = [1] * (rank - 1)
    shape[layout.physical_axis(axis, rank) - 1] = -1
    tag = "bcast_" + "x".join(str(d) for d in shape)
    mean = ctx.weight(layer.moving_mean, transform=lambda v: v.reshape(shape), variant=tag)
    variance = layer.moving_variance.value
    factor = 1.0 / np.sqrt(variance + np.asarray(layer.epsilon, variance.dtype))
    if layer.gamma is not None:
        factor = factor * layer.gamma.value
    y = ctx.op("Mul", [ctx.op("Sub", [x, mean]), ctx.const(factor.reshape(shape), name="factor")])
    if layer.beta is not None:
        y = ctx.op("Add", [y, ctx.weight(layer.beta, transform=lambda v: v.reshape(shape), variant=tag)])
    return Value(y, layout)


@converter(layers.LayerNormalization, opset=13)
def convert_layer_normalization(ctx: ConversionContext) -> ConverterResult:
    """ONNX LayerNormalization (opset 17+) over trailing axes; otherwise the decomposed mean/variance form."""
    layer = ctx.layer
    rank = ctx.input_rank()
    axes = sorted({a % rank for a in layer.axes})
    trailing = axes == list(range(rank - len(axes), rank))
    layout = ctx.layout()
    # Normalizing all features of a rank-2 tensor is order-invariant: a FeatureOrder only permutes gamma and beta.
    order = layout.order if isinstance(layout, FeatureOrder) else None
    if order is None and ctx.opset >= 17 and trailing:
        layout = NATIVE
    x = ctx.input(0, layout=None if order is not None else layout)
    if ctx.opset >= 17 and trailing:
        dims = tuple(ctx.input_shape()[a] for a in axes)
        scale = _feature_weight(ctx, layer.gamma, order, dims) or ctx.const(
            np.ones(dims, layer.compute_dtype), name="ones")
        bias = _feature_weight(ctx, layer.beta, order, dims)
        y = ctx.op("LayerNormalization", [x, scale] + ([bias] if bias else []), axis=axes[0],
                   epsilon=layer.epsilon)
        return Value(y, layout)
    return Value(_decomposed(ctx, x, axes, layout, order, rank), layout)


def _decomposed(ctx, x, axes, layout, order, rank):
    layer = ctx.layer
    physical = [layout.physical_axis(a, rank) for a in axes] if order is None else [rank - 1]
    logical = [1] * rank
    for a in axes:
        logical[a] = ctx.input_shape()[a]
    perm = list(range(rank)) if order is not None else list(layout.perm(rank))

    def broadcast(v):
        v = np.transpose(v.reshape(logical), perm)
        return v[..., order] if order is not None else v
    tag = "bcast_" + "".join(str(a) for a in perm) if order is None else f"bcast_{_order_tag(order)}"
    dtype = layer.compute_dtype
    centered = ctx.op("Sub", [x, reduce_mean(ctx, x, physical)])
    variance = reduce_mean(ctx, ctx.op("Mul", [centered, centered]), physical)
    std = ctx.op("Sqrt", [ctx.op("Add", [variance, ctx.const(np.asarray(layer.epsilon, dtype), name="epsilon")])])
    y = ctx.op("Div", [centered, std])
    if layer.gamma is not None:
        y = ctx.op("Mul", [y, ctx.weight(layer.gamma, transform=broadcast, variant=tag)])
    if layer.beta is not None:
        y = ctx.op("Add", [y, ctx.weight(layer.beta, transform=broadcast, variant=tag)])
    return y
