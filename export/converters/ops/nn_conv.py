"""Converters of the convolution and pooling ops of ``keras.ops.nn``, channels-first like the layers' converters."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import CHANNELS_FIRST, Value
from export.converters.layers.convolutional import oihw, onnx_pads
from export.converters.ops.common import folded, operand
from export.registry import op_converter
from kgraph.ops.kernels.windows import normalize_tuple, transpose_crop

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult


def _kernel(ctx, value, transform, variant):
    """A kernel argument (a weight or a constant) re-laid out for ONNX as an initializer."""
    return folded(ctx, value, ctx.output_dtype(), transform, variant)


def _grouped(kernel):
    """A depthwise ``(*window, in, multiplier)`` kernel as ONNX's grouped ``(in * multiplier, 1, *window)``."""
    return oihw(kernel.reshape(kernel.shape[:-2] + (1, kernel.shape[-2] * kernel.shape[-1])))


def _conv(ctx, x, weight, window, args, group, bias=None):
    """One Conv node with the call's strides, dilation and padding written out as pads."""
    rank = len(window)
    strides = normalize_tuple(args["strides"], rank, "strides")
    dilation = normalize_tuple(args["dilation_rate"], rank, "dilation_rate")
    return ctx.op("Conv", [x, weight] + ([bias] if bias else []), kernel_shape=list(window), strides=list(strides),
                  dilations=list(dilation), pads=onnx_pads(ctx, window, strides, args["padding"], dilation),
                  group=group)


def _finish(ctx, y, args):
    """The call's ``relu`` (if asked) on channels-first ``y``; the channels-first value."""
    if args.get("relu"):
        y = ctx.op("Relu", [y])
    return Value(y, CHANNELS_FIRST)


def _bias(ctx, args):
    """The call's ``bias`` as an initializer name, or None."""
    return None if args["bias"] is None else ctx.tensor(args["bias"])


@op_converter("conv", opset=13)
def convert_conv(ctx: ConversionContext) -> ConverterResult:
    """One Conv (groups from the kernel's input channels), bias and relu as asked."""
    args = ctx.arguments
    kernel_shape = np.shape(args["kernel"])
    x = operand(ctx, args["inputs"], layout=CHANNELS_FIRST)
    group = ctx.input_shape()[-1] // kernel_shape[-2]
    y = _conv(ctx, x, _kernel(ctx, args["kernel"], oihw, "oihw"), kernel_shape[:-2], args, group, _bias(ctx, args))
    return _finish(ctx, y, args)


@op_converter("depthwise_conv", opset=13)
def convert_depthwise_conv(ctx: ConversionContext) -> ConverterResult:
    """A Conv with one group per input channel."""
    args = ctx.arguments
    x = operand(ctx, args["inputs"], layout=CHANNELS_FIRST)
    window = np.shape(args["kernel"])[:-2]
    y = _conv(ctx, x, _kernel(ctx, args["kernel"], _grouped, "grouped"), window, args, ctx.input_shape()[-1],
              _bias(ctx, args))
    return _finish(ctx, y, args)


@op_converter("separable_conv", opset=13)
def convert_separable_conv(ctx: ConversionContext) -> ConverterResult:
    """The depthwise Conv, then a 1x1 Conv with the bias (and relu)."""
    args = ctx.arguments
    x = operand(ctx, args["inputs"], layout=CHANNELS_FIRST)
    window = np.shape(args["depthwise_kernel"])[:-2]
    y = _conv(ctx, x, _kernel(ctx, args["depthwise_kernel"], _grouped, "grouped"), window, args,
              ctx.input_shape()[-1])
    pointwise = _kernel(ctx, args["pointwise_kernel"], oihw, "oihw")
    bias = _bias(ctx, args)
    y = ctx.op("Conv", [y, pointwise] + ([bias] if bias else []), kernel_shape=[1] * len(window), name="pointwise")
    return _finish(ctx, y, args)


@op_converter("conv_transpose", opset=13)
def convert_conv_transpose(ctx: ConversionContext) -> ConverterResult:
    """ConvTranspose with Keras's geometry: crops as pads, cells appended beyond the full output as output_padding."""
    args = ctx.arguments
    x = operand(ctx, args["inputs"], layout=CHANNELS_FIRST)
    window = np.shape(args["kernel"])[:-2]
    rank = len(window)
    strides = normalize_tuple(args["strides"], rank, "strides")
    dilation = normalize_tuple(args["dilation_rate"], rank, "dilation_rate")
    extra = args["output_padding"]
    extra = (extra,) * rank if extra is None or isinstance(extra, (int, np.integer)) else tuple(extra)
    crops = [transpose_crop(k, s, d, str(args["padding"]).lower(), p)
             for k, s, d, p in zip(window, strides, dilation, extra)]
    output_padding = [max(e, 0) for _, e in crops]
    # Keras (*window, filters, in) is ONNX's (in, filters, *window): the same axis move as oihw.
    weight = _kernel(ctx, args["kernel"], oihw, "iohw")
    bias = _bias(ctx, args)
    y = ctx.op("ConvTranspose", [x, weight] + ([bias] if bias else []), kernel_shape=list(window),
               strides=list(strides), dilations=list(dilation),
               pads=[c for c, _ in crops] + [max(-e, 0) for _, e in crops],
               output_padding=output_padding if any(output_padding) else None)
    return Value(y, CHANNELS_FIRST)


@op_converter("conv_max_pool", opset=13)
def convert_conv_max_pool(ctx: ConversionContext) -> ConverterResult:
    """The Conv (bias, relu), then a MaxPool whose strides are its window."""
    args = ctx.arguments
    kernel_shape = np.shape(args["kernel"])
    x = operand(ctx, args["inputs"], layout=CHANNELS_FIRST)
    group = ctx.input_shape()[-1] // kernel_shape[-2]
    y = _conv(ctx, x, _kernel(ctx, args["kernel"], oihw, "oihw"), kernel_shape[:-2], args, group, _bias(ctx, args))
    y = _finish(ctx, y, args).name
    pool = list(normalize_tuple(args["pool_size"], len(kernel_shape) - 2, "pool_size"))
    return Value(ctx.op("MaxPool", [y], kernel_shape=pool, strides=pool), CHANNELS_FIRST)


def _pool(op_type, **attrs):
    """A converter for max_pool / average_pool: ``op_type`` with explicit pads, channels-first."""
    def convert(ctx):
        args = ctx.arguments
        rank = ctx.input_rank() - 2
        window = normalize_tuple(args["pool_size"], rank, "pool_size")
        strides = window if args["strides"] is None else normalize_tuple(args["strides"], rank, "strides")
        pads = onnx_pads(ctx, window, strides, args["padding"], (1,) * rank)
        y = ctx.op(op_type, [operand(ctx, args["inputs"], layout=CHANNELS_FIRST)], kernel_shape=list(window),
                   strides=list(strides), pads=pads, **attrs)
        return Value(y, CHANNELS_FIRST)
    convert.__doc__ = f"One {op_type} node on channels-first data, pads written out."
    return convert


op_converter("max_pool", opset=13)(_pool("MaxPool"))
# kgraph (like Keras) averages "same" windows over their real cells only.
op_converter("average_pool", opset=13)(_pool("AveragePool", count_include_pad=0))
