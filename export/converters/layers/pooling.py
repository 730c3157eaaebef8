"""Converters for the pooling layers (1D to 3D): max, average, global and adaptive pooling, channels-first."""
from export.builder import CHANNELS_FIRST, Value
from export.converters.layers.convolutional import onnx_pads
from export.converters.ops.common import int64, reduce
from export.registry import converter
from kgraph import layers
from kgraph.layers.pooling.adaptive_pooling import adaptive_windows


def _pool(op_type, **attrs):
    def convert(ctx):
        layer = ctx.layer
        pads = onnx_pads(ctx, layer.pool_size, layer.strides, layer.padding, (1,) * len(layer.pool_size))
        y = ctx.op(op_type, [ctx.input(0, CHANNELS_FIRST)], kernel_shape=list(layer.pool_size),
                   strides=list(layer.strides), pads=pads, **attrs)
        return Value(y, CHANNELS_FIRST)
    convert.__doc__ = f"One {op_type} node on channels-first data."
    return convert


for _cls in (layers.MaxPooling1D, layers.MaxPooling2D, layers.MaxPooling3D):
    converter(_cls, opset=13)(_pool("MaxPool"))
# Keras averages "same" windows over their real cells only.
for _cls in (layers.AveragePooling1D, layers.AveragePooling2D, layers.AveragePooling3D):
    converter(_cls, opset=13)(_pool("AveragePool", count_include_pad=0))


def _global(op_type):
    def convert(ctx):
        y = ctx.op(op_type, [ctx.input(0, CHANNELS_FIRST)])
        if ctx.layer.keepdims:
            return Value(y, CHANNELS_FIRST)
        return ctx.op("Flatten", [y], axis=1)
    convert.__doc__ = f"{op_type} on channels-first data: (batch, channels, 1...), flattened unless keepdims."
    return convert


for _cls in (layers.GlobalAveragePooling1D, layers.GlobalAveragePooling2D, layers.GlobalAveragePooling3D):
    converter(_cls, opset=13)(_global("GlobalAveragePool"))
for _cls in (layers.GlobalMaxPooling1D, layers.GlobalMaxPooling2D, layers.GlobalMaxPooling3D):
    converter(_cls, opset=13)(_global("GlobalMaxPool"))


# Adaptive pooling needs static spatial dimensions. When every axis is a multiple of its output size the
# windows are a plain pooling (one MaxPool / AveragePool). Otherwise each spatial axis is one Gather of the
# windows' cells (an ``(output, widest window)`` index matrix) and one reduction over the window axis, as
# ``kgraph`` computes it; an axis already of the output size is left as it is.
def _adaptive(pool_type, reduce_type):
    def convert(ctx):
        layer = ctx.layer
        spatial = ctx.input_shape()[1:-1]
        if any(n is None for n in spatial):
            raise ctx.error(f"adaptive pooling needs static spatial dimensions to choose its windows; received "
                            f"input shape {ctx.input_shape()}.")
        y = ctx.input(0, CHANNELS_FIRST)
        window = layer.uniform_windows(spatial)
        if window is not None:
            attrs = {"count_include_pad": 0} if pool_type == "AveragePool" else {}
            return Value(ctx.op(pool_type, [y], kernel_shape=list(window), strides=list(window), **attrs),
                         CHANNELS_FIRST)
        rank = len(spatial) + 2
        for i, (n, o) in enumerate(zip(spatial, layer.output_size)):
            if n == o:
                continue
            axis = 2 + i
            index, lengths = adaptive_windows(n, o)
            y = ctx.op("Gather", [y, ctx.const(int64(index), name="windows")], axis=axis)
            if reduce_type == "ReduceSum":
                weights = layer.window_weights(index.shape[1], lengths)
                weights = weights.reshape(index.shape + (1,) * (rank - axis - 1)).astype(ctx.output_dtype())
                y = ctx.op("Mul", [y, ctx.const(weights, name="weights")])
            y = reduce(ctx, reduce_type, y, [axis + 1], keepdims=False)
        return Value(y, CHANNELS_FIRST)
    convert.__doc__ = f"One {pool_type} over uniform windows, else per spatial axis a Gather and a {reduce_type}."
    return convert


for _cls in (layers.AdaptiveAveragePooling1D, layers.AdaptiveAveragePooling2D, layers.AdaptiveAveragePooling3D):
    converter(_cls, opset=13)(_adaptive("AveragePool", "ReduceSum"))
for _cls in (layers.AdaptiveMaxPooling1D, layers.AdaptiveMaxPooling2D, layers.AdaptiveMaxPooling3D):
    converter(_cls, opset=13)(_adaptive("MaxPool", "ReduceMax"))
