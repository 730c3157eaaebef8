"""Converters for the shape layers: UpSampling, ZeroPadding, Cropping, Permute, RepeatVector, Rescaling, SpatialDropout.

The spatial ones work in whatever axis-permutation layout their input is in
(mapping each logical axis to its physical position), so they never add a
Transpose inside a channels-first convolution stack.
"""
import numpy as np

from kgraph import layers

from export.builder import NATIVE, Value
from export.registry import converter

_INT64_MAX = np.iinfo(np.int64).max


def _axis_layout(ctx):
    """The input's layout if it is an axis permutation (else NATIVE) and that layout's permutation."""
    rank = ctx.input_rank()
    layout = ctx.layout()
    if layout.perm(rank) is None:
        layout = NATIVE
    return layout, layout.perm(rank)


def _upsampling(ctx):
    """Resize (nearest, floor of ``i / size``: exact repetition) with the scales on the physical axes."""
    layout, perm = _axis_layout(ctx)
    logical = [1.0] + [float(s) for s in ctx.layer.size] + [1.0]
    scales = ctx.const(np.array([logical[a] for a in perm], dtype=np.float32), name="scales")
    y = ctx.op("Resize", [ctx.input(0, layout), "", scales], mode="nearest",
               coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    return Value(y, layout)


converter(layers.UpSampling1D, opset=13)(_upsampling)
converter(layers.UpSampling2D, opset=13)(_upsampling)


def _zero_padding(ctx):
    """Pad (constant zeros) with the begins and ends of each physical axis."""
    layout, perm = _axis_layout(ctx)
    logical = [(0, 0)] + list(ctx.layer.padding) + [(0, 0)]
    physical = [logical[a] for a in perm]
    pads = ctx.const(np.array([b for b, _ in physical] + [e for _, e in physical], dtype=np.int64), name="pads")
    return Value(ctx.op("Pad", [ctx.input(0, layout), pads], mode="constant"), layout)


converter(layers.ZeroPadding1D, opset=13)(_zero_padding)
converter(layers.ZeroPadding2D, opset=13)(_zero_padding)


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


converter(layers.Cropping1D, opset=13)(_cropping)
converter(layers.Cropping2D, opset=13)(_cropping)


@converter(layers.Permute, opset=13)
def convert_permute(ctx):
    """One Transpose from the input's physical layout straight to the permuted native layout."""
    layout, perm = _axis_layout(ctx)
    target = (0,) + tuple(ctx.layer.dims)
    return ctx.op("Transpose", [ctx.input(0, layout)], perm=[perm.index(a) for a in target])


@converter(layers.RepeatVector, opset=13)
def convert_repeat_vector(ctx):
    """Unsqueeze to (batch, 1, features), then Tile ``n`` times on axis 1."""
    x = ctx.op("Unsqueeze", [ctx.input(0), ctx.const(np.array([1], np.int64), name="axes")])
    return ctx.op("Tile", [x, ctx.const(np.array([1, ctx.layer.n, 1], np.int64), name="repeats")])


@converter(layers.Rescaling, opset=13)
def convert_rescaling(ctx):
    """Mul by ``scale`` and Add ``offset`` in the compute dtype; scalar factors keep the input's layout."""
    layer = ctx.layer
    dtype = ctx.output_dtype()
    scale, offset = np.asarray(layer.scale, dtype), np.asarray(layer.offset, dtype)
    layout = ctx.layout() if scale.ndim == 0 and offset.ndim == 0 else NATIVE
    y = ctx.op("Mul", [ctx.input(0, layout=layout, dtype=dtype), ctx.const(scale, name="scale")])
    return Value(ctx.op("Add", [y, ctx.const(offset, name="offset")]), layout)


def _identity(ctx):
    """Identity at inference: the output is the input tensor itself (no node)."""
    return Value(ctx.input(0, layout=None), ctx.layout())


converter(layers.SpatialDropout1D, opset=13)(_identity)
converter(layers.SpatialDropout2D, opset=13)(_identity)
