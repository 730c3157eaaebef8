"""Converters for the pooling layers: MaxPool / AveragePool (explicit pads) and the global poolings, channels-first."""
from kgraph import layers

from export.builder import CHANNELS_FIRST, Value
from export.converters.convolutional import onnx_pads
from export.registry import converter


def _pool(op_type, **attrs):
    def convert(ctx):
        layer = ctx.layer
        pads = onnx_pads(ctx, layer.pool_size, layer.strides, layer.padding, (1,) * len(layer.pool_size))
        y = ctx.op(op_type, [ctx.input(0, CHANNELS_FIRST)], kernel_shape=list(layer.pool_size),
                   strides=list(layer.strides), pads=pads, **attrs)
        return Value(y, CHANNELS_FIRST)
    convert.__doc__ = f"One {op_type} node on channels-first data."
    return convert


converter(layers.MaxPooling1D, opset=13)(_pool("MaxPool"))
converter(layers.MaxPooling2D, opset=13)(_pool("MaxPool"))
# Keras averages "same" windows over their real cells only.
converter(layers.AveragePooling1D, opset=13)(_pool("AveragePool", count_include_pad=0))
converter(layers.AveragePooling2D, opset=13)(_pool("AveragePool", count_include_pad=0))


def _global(op_type):
    def convert(ctx):
        y = ctx.op(op_type, [ctx.input(0, CHANNELS_FIRST)])
        if ctx.layer.keepdims:
            return Value(y, CHANNELS_FIRST)
        return ctx.op("Flatten", [y], axis=1)
    convert.__doc__ = f"{op_type} on channels-first data: (batch, channels, 1...), flattened unless keepdims."
    return convert


converter(layers.GlobalAveragePooling1D, opset=13)(_global("GlobalAveragePool"))
converter(layers.GlobalAveragePooling2D, opset=13)(_global("GlobalAveragePool"))
converter(layers.GlobalMaxPooling1D, opset=13)(_global("GlobalMaxPool"))
converter(layers.GlobalMaxPooling2D, opset=13)(_global("GlobalMaxPool"))
