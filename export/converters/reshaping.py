"""Converters for the reshaping layers: Flatten, Reshape."""
import numpy as np

from kgraph import layers

from export.builder import FeatureOrder, Value
from export.registry import converter


def _keras_perm(rank, data_format):
    """Axis order Keras flattens in: channels_first data is moved to channels-last first."""
    if data_format == "channels_first" and rank > 2:
        return (0,) + tuple(range(2, rank)) + (1,)
    return tuple(range(rank))


@converter(layers.Flatten, opset=13)
def convert_flatten(ctx):
    """ONNX Flatten(axis=1) of the data as laid out; a feature order differing from Keras's becomes a FeatureOrder."""
    # No Transpose back to channels-last: a following Dense folds the order into its kernel, others get one Gather.
    rank = ctx.input_rank()
    layout = ctx.layout()
    if rank == 2:
        return Value(ctx.input(0, layout=None), layout)
    dims = ctx.input_shape()[1:]
    keras_perm = _keras_perm(rank, ctx.layer.data_format)
    physical_perm = layout.perm(rank)
    if None in dims or physical_perm is None:
        x = ctx.input(0)
        if keras_perm != tuple(range(rank)):
            x = ctx.op("Transpose", [x], perm=list(keras_perm))
        return ctx.op("Flatten", [x], axis=1)
    size = int(np.prod(dims))
    # keras_index[m] = position of logical element m in Keras's flattened output.
    keras_dims = [dims[a - 1] for a in keras_perm[1:]]
    keras_index = np.arange(size).reshape(keras_dims).transpose(np.argsort([a - 1 for a in keras_perm[1:]]))
    order = keras_index.transpose([a - 1 for a in physical_perm[1:]]).ravel()
    y = ctx.op("Flatten", [ctx.input(0, layout=None)], axis=1)
    return Value(y, FeatureOrder(order))


def _int64(values):
    return np.array(values, dtype=np.int64)


@converter(layers.Reshape, opset=13)
def convert_reshape(ctx):
    """Reshape to ``[0, *output shape]`` with every size written out; 0 copies the batch size (none is baked in)."""
    # Never a -1: onnxruntime cannot infer a -1 from a 0-row batch. A size that depends on a dynamic input
    # axis is computed from the input's shape (its elements per row over the product of the known sizes)
    # and put in place by Mul and Add, not Concat, which onnxruntime's ReshapeFusion would turn back into -1.
    x = ctx.input(0)
    dims = (0,) + ctx.output_shape()[1:]
    if None not in dims:
        return ctx.op("Reshape", [x, ctx.const(_int64(dims), name="shape")])
    known = int(np.prod([d for d in dims[1:] if d is not None]))
    rest = ctx.op("Slice", [ctx.op("Shape", [x]), ctx.const(_int64([1]), name="one"),
                            ctx.const(_int64([ctx.input_rank()]), name="rank")])
    size = ctx.op("Div", [ctx.op("ReduceProd", [rest], keepdims=1), ctx.const(_int64([known]), name="known")])
    slot = ctx.const(_int64([int(d is None) for d in dims]), name="unknown_axis")
    shape = ctx.op("Add", [ctx.const(_int64([d or 0 for d in dims]), name="known_sizes"),
                           ctx.op("Mul", [slot, size])])
    return ctx.op("Reshape", [x, shape])
