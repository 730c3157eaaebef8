"""Converters for the reshaping layers: Flatten, Reshape, Permute, RepeatVector, UpSampling, ZeroPadding, Cropping."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, FeatureOrder, Value
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

_INT64_MAX = np.iinfo(np.int64).max


def _keras_perm(rank, data_format):
    """Axis order Keras flattens in: channels_first data is moved to channels-last first."""
    if data_format == "channels_first" and rank > 2:
        return (0,) + tuple(range(2, rank)) + (1,)
    return tuple(range(rank))


@converter(layers.Flatten, opset=13)
def convert_flatten(ctx: ConversionContext) -> ConverterResult:
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
def convert_reshape(ctx: ConversionContext) -> ConverterResult:
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


# UpSampling, ZeroPadding and Cropping work in whatever axis-permutation layout their input is in (mapping each
# logical axis to its physical position), so they never add a Transpose inside a channels-first convolution stack.
def _axis_layout(ctx):
    """The input's layout if it is an axis permutation (else NATIVE) and that layout's permutation."""
    rank = ctx.input_rank()
    layout = ctx.layout()
    if layout.perm(rank) is None:
        layout = NATIVE
    return layout, layout.perm(rank)


def _upsampling(ctx):
    """Resize (nearest, floor of ``i / size``: exact repetition; or bilinear) with the scales on the physical axes."""
    layout, perm = _axis_layout(ctx)
    logical = [1.0] + [float(s) for s in ctx.layer.size] + [1.0]
    scales = ctx.const(np.array([logical[a] for a in perm], dtype=np.float32), name="scales")
    if getattr(ctx.layer, "interpolation", "nearest") == "bilinear":  # Keras's image.resize: half-pixel centres
        y = ctx.op("Resize", [ctx.input(0, layout), "", scales], mode="linear",
                   coordinate_transformation_mode="half_pixel")
    else:
        y = ctx.op("Resize", [ctx.input(0, layout), "", scales], mode="nearest",
                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return Value(y, layout)


for _cls in (layers.UpSampling1D, layers.UpSampling2D, layers.UpSampling3D):
    converter(_cls, opset=13)(_upsampling)


def _zero_padding(ctx):
    """Pad (constant zeros) with the begins and ends of each physical axis."""
    layout, perm = _axis_layout(ctx)
    logical = [(0, 0)] + list(ctx.layer.padding) + [(0, 0)]
    physical = [logical[a] for a in perm]
    pads = ctx.const(np.array([b for b, _ in physical] + [e for _, e in physical], dtype=np.int64), name="pads")
    return Value(ctx.op("Pad", [ctx.input(0, layout), pads], mode="constant"), layout)


for _cls in (layers.ZeroPadding1D, layers.ZeroPadding2D, layers.ZeroPadding3D):
    converter(_cls, opset=13)(_zero_padding)


def _cropping(ctx):
    """Slice of the cropped physical axes (ends counted from the end, so no length is baked in)."""
    layout, _ = _axis_layout(ctx)
    rank = ctx.input_rank()
    crops = list(ctx.layer.cropping)
    axes = [layout.physical_axis(1 + i, rank) for i in range(len(crops))]
    starts = [b for b, _ in crops]
    ends = [-e if e else _INT64_MAX for _, e in crops]
    y = ctx.op("Slice", [ctx.input(0, layout), ctx.const(np.array(starts, np.int64), name="starts"),
                         ctx.const(np.array(ends, np.int64), name="ends"),
                         ctx.const(np.array(axes, np.int64), name="axes")])
    return Value(y, layout)


for _cls in (layers.Cropping1D, layers.Cropping2D, layers.Cropping3D):
    converter(_cls, opset=13)(_cropping)


@converter(layers.Permute, opset=13)
def convert_permute(ctx: ConversionContext) -> ConverterResult:
    """One Transpose from the input's physical layout straight to the permuted native layout."""
    layout, perm = _axis_layout(ctx)
    target = (0,) + tuple(ctx.layer.dims)
    return ctx.op("Transpose", [ctx.input(0, layout)], perm=[perm.index(a) for a in target])


@converter(layers.RepeatVector, opset=13)
def convert_repeat_vector(ctx: ConversionContext) -> ConverterResult:
    """Unsqueeze to (batch, 1, features), then Tile ``n`` times on axis 1."""
    x = ctx.op("Unsqueeze", [ctx.input(0), ctx.const(np.array([1], np.int64), name="axes")])
    return ctx.op("Tile", [x, ctx.const(np.array([1, ctx.layer.n, 1], np.int64), name="repeats")])
