"""Converters for Conv1DTranspose, Conv3DTranspose, DepthwiseConv1D and SeparableConv1D, channels-first.

As the 2D converters: one ConvTranspose, or Conv nodes with one group per
input channel, with explicit pads and the activation after.
"""
from kgraph import layers

from export.builder import CHANNELS_FIRST
from export.converters.convolutional import _conv_node, _finish, oihw
from export.registry import converter


def _grouped(kernel):
    """Keras depthwise ``(*window, in, multiplier)`` as a grouped ONNX weight ``(in * multiplier, 1, *window)``."""
    return oihw(kernel.reshape(kernel.shape[:-2] + (1, -1)))


@converter(layers.DepthwiseConv1D, opset=13)
def convert_depthwise_conv_1d(ctx):
    """A Conv with one group per input channel."""
    layer = ctx.layer
    x = ctx.input(0, CHANNELS_FIRST)
    weight = ctx.weight(layer.kernel, transform=_grouped, variant="grouped")
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    y = _conv_node(ctx, x, weight, bias, layer.kernel_size, layer.strides, layer.padding, layer.dilation_rate,
                   ctx.input_shape()[-1])
    return _finish(ctx, y)


@converter(layers.SeparableConv1D, opset=13)
def convert_separable_conv_1d(ctx):
    """The depthwise Conv (one group per channel), then a size-1 Conv with the bias."""
    layer = ctx.layer
    x = ctx.input(0, CHANNELS_FIRST)
    depthwise = ctx.weight(layer.depthwise_kernel, transform=_grouped, variant="grouped")
    y = _conv_node(ctx, x, depthwise, None, layer.kernel_size, layer.strides, layer.padding, layer.dilation_rate,
                   ctx.input_shape()[-1])
    pointwise = ctx.weight(layer.pointwise_kernel, transform=oihw, variant="oihw")
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    y = ctx.op("Conv", [y, pointwise] + ([bias] if bias else []), kernel_shape=[1], name="pointwise")
    return _finish(ctx, y)


@converter(layers.Conv1DTranspose, opset=13)
@converter(layers.Conv3DTranspose, opset=13)
def convert_conv_transpose_nd(ctx):
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
