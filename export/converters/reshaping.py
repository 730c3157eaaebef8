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


@converter(layers.Reshape, opset=13)
def convert_reshape(ctx):
    """Reshape to ``[0, *target_shape]``: 0 copies the batch size, so none is baked in."""
    shape = ctx.const(np.array((0,) + tuple(ctx.layer.target_shape), dtype=np.int64), name="shape")
    return ctx.op("Reshape", [ctx.input(0), shape])
