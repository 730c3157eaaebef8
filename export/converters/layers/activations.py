"""Converters for the activation layers Activation, ReLU, LeakyReLU, PReLU, ELU, Softmax: each keeps its layout."""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, FeatureOrder, Value, onnx_dtype
from export.converters.activations import emit_activation
from export.registry import converter
from kgraph import layers
from kgraph.layers.activations.activation_layers import large_negative_number

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult


@converter(layers.Activation, opset=13)
def convert_activation(ctx: ConversionContext) -> ConverterResult:
    """The activation's emitter, on the input in whatever layout it is in."""
    layout = ctx.layout()
    y = emit_activation(ctx, ctx.layer.activation, ctx.input(0, layout=None), layout=layout,
                        rank=ctx.input_rank(), dtype=ctx.input_dtype())
    return Value(y, layout)


def _where_rectifier(ctx, x, dtype, slope, threshold=0.0, cap=None):
    """``x`` (capped at ``cap``) where ``x > threshold``, else ``slope * (x - threshold)``: Keras's general ReLU."""
    limit = ctx.const(np.asarray(threshold, dtype), name="threshold")
    positive = x if cap is None else ctx.op("Min", [x, ctx.const(np.asarray(cap, dtype), name="max_value")])
    shifted = ctx.op("Sub", [x, limit]) if threshold else x
    negative = ctx.op("Mul", [shifted, ctx.const(np.asarray(slope, dtype), name="negative_slope")])
    return ctx.op("Where", [ctx.op("Greater", [x, limit]), positive, negative])


def _leaky(ctx, x, dtype, slope):
    # onnxruntime's LeakyRelu kernel is float32-only at some opsets; other types take the Where form.
    if dtype == "float32":
        return ctx.op("LeakyRelu", [x], alpha=slope)
    return _where_rectifier(ctx, x, dtype, slope)


@converter(layers.ReLU, opset=13)
def convert_relu(ctx: ConversionContext) -> ConverterResult:
    """Relu, Clip (with ``max_value``), LeakyRelu, or the Where form with a threshold."""
    layer = ctx.layer
    layout, dtype = ctx.layout(), np.dtype(ctx.input_dtype()).name
    x = ctx.input(0, layout=None)
    slope, threshold, cap = layer.negative_slope, layer.threshold, layer.max_value
    if slope == 0.0 and threshold == 0.0:
        if cap is None:
            return Value(ctx.op("Relu", [x]), layout)
        bounds = [ctx.const(np.asarray(0, dtype), name="zero"), ctx.const(np.asarray(cap, dtype), name="max_value")]
        return Value(ctx.op("Clip", [x] + bounds), layout)
    if threshold == 0.0 and cap is None:
        return Value(_leaky(ctx, x, dtype, slope), layout)
    return Value(_where_rectifier(ctx, x, dtype, slope, threshold, cap), layout)


@converter(layers.LeakyReLU, opset=13)
def convert_leaky_relu(ctx: ConversionContext) -> ConverterResult:
    """LeakyRelu with Keras's ``negative_slope`` written out."""
    layout = ctx.layout()
    return Value(_leaky(ctx, ctx.input(0, layout=None), np.dtype(ctx.input_dtype()).name,
                        ctx.layer.negative_slope), layout)


@converter(layers.PReLU, opset=13)
def convert_prelu(ctx: ConversionContext) -> ConverterResult:
    """PRelu with ``alpha`` laid out like the input (it broadcasts from the trailing axes)."""
    layout, rank = ctx.layout(), ctx.input_rank()
    alpha = ctx.layer.alpha
    if isinstance(layout, FeatureOrder):
        order = layout.order
        slope = ctx.weight(alpha, transform=lambda v: v[order] if v.shape[0] > 1 else v,
                           variant="features_" + hashlib.sha1(order.tobytes()).hexdigest()[:8])
    else:
        perm = layout.perm(rank)
        if perm == tuple(range(rank)):
            slope = ctx.weight(alpha)
        else:
            slope = ctx.weight(alpha, transform=lambda v: np.transpose(v[None], perm)[0],
                               variant="perm_" + "".join(str(p) for p in perm))
    return Value(ctx.op("PRelu", [ctx.input(0, layout=None), slope]), layout)


@converter(layers.ELU, opset=13)
def convert_elu(ctx: ConversionContext) -> ConverterResult:
    """Elu with the layer's ``alpha`` (onnxruntime runs Elu in float32: other types are cast around it)."""
    layout, dtype = ctx.layout(), np.dtype(ctx.input_dtype()).name
    x = ctx.input(0, layout=None)
    if dtype != "float32":
        y = ctx.op("Elu", [ctx.op("Cast", [x], to=onnx_dtype("float32"))], alpha=ctx.layer.alpha)
        return Value(ctx.op("Cast", [y], to=onnx_dtype(dtype)), layout)
    return Value(ctx.op("Elu", [x], alpha=ctx.layer.alpha), layout)


def _reduce_log_sum_exp(ctx, x, axes):
    if ctx.opset >= 18:
        return ctx.op("ReduceLogSumExp", [x, ctx.const(np.array(axes, dtype=np.int64), name="axes")], keepdims=1)
    return ctx.op("ReduceLogSumExp", [x], axes=list(axes), keepdims=1)


@converter(layers.Softmax, opset=13)
def convert_softmax(ctx: ConversionContext) -> ConverterResult:
    """Softmax on the physical axis; several axes as ``exp(x - logsumexp(x))``; a ``mask`` input as Keras fills it."""
    layer = ctx.layer
    rank, dtype = ctx.input_rank(), np.dtype(ctx.input_dtype()).name
    node = ctx.node
    given = node.call_kwargs.get("mask", node.call_args[1] if len(node.call_args) > 1 else None)
    masked = given is not None
    layout = NATIVE if masked else ctx.layout()
    x = ctx.input(0, layout)
    if masked:
        # A tensor of the graph, or a constant array given in the call.
        if hasattr(given, "_keras_history"):
            mask_dtype = np.dtype(given.dtype)
            mask = ctx.tensor(given, mask_dtype.name)
        else:
            mask_dtype = np.asarray(given).dtype
            mask = ctx.const(np.asarray(given), name="mask")
        if mask_dtype != np.bool_:
            mask = ctx.op("Greater", [mask, ctx.const(np.asarray(0.5, mask_dtype), name="half")])
        fill = ctx.const(np.asarray(large_negative_number(dtype), dtype), name="masked_logit")
        x = ctx.op("Where", [mask, x, fill])
    axes = layer.axis if isinstance(layer.axis, list) else [layer.axis]
    physical = sorted({layout.physical_axis(a, rank) for a in axes})
    if len(physical) == 1:
        y = ctx.op("Softmax", [x], axis=physical[0])
    else:
        y = ctx.op("Exp", [ctx.op("Sub", [x, _reduce_log_sum_exp(ctx, x, physical)])])
    if masked:
        y = ctx.op("Where", [mask, y, ctx.const(np.asarray(0, dtype), name="zero")])
    return Value(y, layout)
