"""Converters for the convolution layers (1D to 3D): Conv, DepthwiseConv, SeparableConv, ConvTranspose."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import CHANNELS_FIRST, Value
from export.converters.activations import emit_activation
from export.registry import converter
from kgraph import layers
from kgraph.ops.kernels.windows import conv_pads

if TYPE_CHECKING:
    from collections.abc import Sequence

    from export.context import ConversionContext
    from export.registry import ConverterResult

# They work channels-first (what ONNX Conv wants) and return channels-first values, so a chain of
# convolutions, pooling and normalization transposes once. Padding is always written out as explicit,
# possibly asymmetric ``pads``.


def onnx_pads(ctx: ConversionContext, window: Sequence[int], strides: Sequence[int], padding: str,
              dilation: Sequence[int]) -> list[int]:
    """ONNX ``pads`` (all begins, then all ends) for a window over the layer's spatial input axes.

    "same" with a stride above 1 depends on each input length, so those
    lengths must be static.
    """
    spatial = ctx.input_shape()[1:-1]
    if padding == "same" and any(n is None and s > 1 for n, s in zip(spatial, strides)):
        raise ctx.error(f"padding='same' with strides {tuple(strides)} needs static spatial dimensions to write "
                        f"explicit pads; received input shape {ctx.input_shape()}.")
    # With stride 1 the "same" padding does not depend on the length: any stand-in works.
    lengths = [k if n is None else n for n, k in zip(spatial, window)]
    pads = conv_pads(lengths, window, strides, padding, dilation)
    return [b for b, _ in pads] + [a for _, a in pads]


def oihw(kernel: np.ndarray) -> np.ndarray:
    """Keras ``(*window, in, out)`` kernel as ONNX ``(out, in, *window)``."""
    r = kernel.ndim - 2
    return np.transpose(kernel, (r + 1, r) + tuple(range(r)))


def _finish(ctx, y):
    """The layer's activation on channels-first ``y``; the channels-first result."""
    layer = ctx.layer
    y = emit_activation(ctx, layer.activation, y, layout=CHANNELS_FIRST, rank=ctx.output_rank(),
                        dtype=ctx.output_dtype())
    return Value(y, CHANNELS_FIRST)


def _conv_node(ctx, x, weight, bias, window, strides, padding, dilation, group):
    return ctx.op("Conv", [x, weight] + ([bias] if bias else []), kernel_shape=list(window),
                  strides=list(strides), dilations=list(dilation),
                  pads=onnx_pads(ctx, window, strides, padding, dilation), group=group)


@converter(layers.Conv1D, opset=13)
@converter(layers.Conv2D, opset=13)
@converter(layers.Conv3D, opset=13)
def convert_conv(ctx: ConversionContext) -> ConverterResult:
    """One Conv node; "causal" padding becomes pads before the steps only."""
    layer = ctx.layer
    x = ctx.input(0, CHANNELS_FIRST)
    weight = ctx.weight(layer.kernel, transform=oihw, variant="oihw")
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    y = _conv_node(ctx, x, weight, bias, layer.kernel_size, layer.strides, layer.padding, layer.dilation_rate,
                   layer.groups)
    return _finish(ctx, y)


def _depthwise_weight(kernel):
    """Keras depthwise ``(*window, in, multiplier)`` as a grouped ONNX weight ``(in * multiplier, 1, *window)``."""
    return oihw(kernel.reshape(kernel.shape[:-2] + (1, -1)))


@converter(layers.DepthwiseConv1D, opset=13)
@converter(layers.DepthwiseConv2D, opset=13)
def convert_depthwise_conv(ctx: ConversionContext) -> ConverterResult:
    """A Conv with one group per input channel."""
    layer = ctx.layer
    x = ctx.input(0, CHANNELS_FIRST)
    weight = ctx.weight(layer.kernel, transform=_depthwise_weight, variant="grouped")
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    y = _conv_node(ctx, x, weight, bias, layer.kernel_size, layer.strides, layer.padding, layer.dilation_rate,
                   ctx.input_shape()[-1])
    return _finish(ctx, y)


@converter(layers.SeparableConv1D, opset=13)
@converter(layers.SeparableConv2D, opset=13)
def convert_separable_conv(ctx: ConversionContext) -> ConverterResult:
    """The depthwise Conv (one group per channel), then a size-1 Conv with the bias."""
    layer = ctx.layer
    x = ctx.input(0, CHANNELS_FIRST)
    depthwise = ctx.weight(layer.depthwise_kernel, transform=_depthwise_weight, variant="grouped")
    y = _conv_node(ctx, x, depthwise, None, layer.kernel_size, layer.strides, layer.padding, layer.dilation_rate,
                   ctx.input_shape()[-1])
    pointwise = ctx.weight(layer.pointwise_kernel, transform=oihw, variant="oihw")
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    y = ctx.op("Conv", [y, pointwise] + ([bias] if bias else []), kernel_shape=[1] * (ctx.input_rank() - 2),
               name="pointwise")
    return _finish(ctx, y)


@converter(layers.Conv1DTranspose, opset=13)
@converter(layers.Conv2DTranspose, opset=13)
@converter(layers.Conv3DTranspose, opset=13)
def convert_conv_transpose(ctx: ConversionContext) -> ConverterResult:
    """ConvTranspose with explicit pads; cells Keras appends beyond the full output become output_padding."""
    layer = ctx.layer
    x = ctx.input(0, CHANNELS_FIRST)
    # Keras (*window, filters, in) is ONNX's (in, filters, *window): the same axis move as a Conv kernel's.
    weight = ctx.weight(layer.kernel, transform=oihw, variant="iohw")
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    crops = layer.crops()
    begins = [crop for crop, _ in crops]
    ends = [max(-extra, 0) for _, extra in crops]
    output_padding = [max(extra, 0) for _, extra in crops]
    y = ctx.op("ConvTranspose", [x, weight] + ([bias] if bias else []), kernel_shape=list(layer.kernel_size),
               strides=list(layer.strides), dilations=list(layer.dilation_rate), pads=begins + ends,
               output_padding=output_padding if any(output_padding) else None)
    return _finish(ctx, y)
