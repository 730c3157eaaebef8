"""Converters of the shape, joining and splitting ops of ``keras.ops.numpy``; the rest by tracing."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.converters.ops.common import INT64_MAX, INT64_MIN, axes_of, flatten, int64, operand, reshape
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable
from kgraph.graph.keras_tensor import KerasTensor

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["hstack", "vstack", "dstack", "append", "array_split", "hsplit", "vsplit", "dsplit", "fliplr",
                     "flipud", "rot90", "tril", "triu", "diagonal", "trace", "diag", "diagflat", "rearrange"])

unexportable("ndim", "returns a Python int")
unexportable("size", "returns a Python int")


def _x(ctx):
    """The op's ``x`` argument, native layout."""
    return operand(ctx, ctx.arguments["x"])


@op_converter("reshape", opset=13)
def convert_reshape(ctx: ConversionContext) -> ConverterResult:
    """Reshape to the output's shape, sizes written out and an unknown one as -1 (a 0-row batch reshapes);
    sizes a traced call read with ``ops.shape`` (int64 scalars) join the shape tensor when the graph runs."""
    sizes = ctx.arguments["newshape"]
    sizes = tuple(sizes) if isinstance(sizes, (list, tuple)) else (sizes,)
    if not any(isinstance(d, KerasTensor) for d in sizes):
        return reshape(ctx, _x(ctx), ctx.output_shape())
    parts = [ctx.op("Reshape", [operand(ctx, d, "int64"), ctx.const(int64([1]), name="one")])
             if isinstance(d, KerasTensor) else ctx.const(int64([d]), name="size") for d in sizes]
    return ctx.op("Reshape", [_x(ctx), ctx.op("Concat", parts, axis=0)])


@op_converter("shape_dim", opset=13)
def convert_shape_dim(ctx: ConversionContext) -> ConverterResult:
    """One size of ``x``, read when the graph runs: Shape, then Gather of that axis (an int64 scalar)."""
    axis = int(ctx.arguments["axis"]) % ctx.input_rank()
    return ctx.op("Gather", [ctx.op("Shape", [_x(ctx)]), ctx.const(np.asarray(axis, dtype=np.int64), name="axis")],
                  axis=0)


@op_converter("split_leading_axes", opset=13)
def convert_split_leading_axes(ctx: ConversionContext) -> ConverterResult:
    """Reshape to ``like``'s leading sizes (read at run time with Shape) followed by ``x``'s other sizes."""
    count = int(ctx.arguments["count"])
    lead = ctx.op("Slice", [ctx.op("Shape", [operand(ctx, ctx.arguments["like"])]),
                            ctx.const(int64([0]), name="start"), ctx.const(int64([count]), name="stop")])
    rest = ctx.op("Slice", [ctx.op("Shape", [_x(ctx)]), ctx.const(int64([1]), name="start"),
                            ctx.const(int64([INT64_MAX]), name="stop")])
    return ctx.op("Reshape", [_x(ctx), ctx.op("Concat", [lead, rest], axis=0)])


@op_converter("ravel", opset=13)
def convert_ravel(ctx: ConversionContext) -> ConverterResult:
    """Reshape to one dimension."""
    return flatten(ctx, _x(ctx))


@op_converter("expand_dims", opset=13)
def convert_expand_dims(ctx: ConversionContext) -> ConverterResult:
    """Unsqueeze at ``axis`` (positions in the output, as NumPy counts them)."""
    axes = axes_of(ctx.arguments["axis"], ctx.output_rank())
    return ctx.op("Unsqueeze", [_x(ctx), ctx.const(int64(axes), name="axes")]) if axes else _x(ctx)


@op_converter("squeeze", opset=13)
def convert_squeeze(ctx: ConversionContext) -> ConverterResult:
    """Squeeze the axes named, or (axis None) those of known size 1; no node when there are none."""
    axis, shape = ctx.arguments["axis"], ctx.input_shape()
    axes = [a for a, d in enumerate(shape) if d == 1] if axis is None else axes_of(axis, len(shape))
    if not axes:  # Squeeze with no axes would drop every size-1 axis found at run time.
        return _x(ctx)
    return ctx.op("Squeeze", [_x(ctx), ctx.const(int64(axes), name="axes")])


def _transpose(ctx, perm):
    """Transpose ``x`` by ``perm``; no node for the identity."""
    if list(perm) == list(range(len(perm))):
        return _x(ctx)
    return ctx.op("Transpose", [_x(ctx)], perm=[int(p) for p in perm])


@op_converter("transpose", opset=13)
def convert_transpose(ctx: ConversionContext) -> ConverterResult:
    """Transpose by ``axes`` (reversed when None)."""
    axes, rank = ctx.arguments["axes"], ctx.input_rank()
    return _transpose(ctx, range(rank)[::-1] if axes is None else [a % rank for a in axes])


@op_converter("swapaxes", opset=13)
def convert_swapaxes(ctx: ConversionContext) -> ConverterResult:
    """Transpose exchanging two axes."""
    args, rank = ctx.arguments, ctx.input_rank()
    perm = list(range(rank))
    a, b = int(args["axis1"]) % rank, int(args["axis2"]) % rank
    perm[a], perm[b] = perm[b], perm[a]
    return _transpose(ctx, perm)


@op_converter("moveaxis", opset=13)
def convert_moveaxis(ctx: ConversionContext) -> ConverterResult:
    """Transpose moving ``source`` axes to ``destination`` positions (NumPy's order for the others)."""
    args, rank = ctx.arguments, ctx.input_rank()
    listed = lambda v: [int(a) % rank for a in (v if isinstance(v, (tuple, list)) else [v])]  # noqa: E731
    source, destination = listed(args["source"]), listed(args["destination"])
    perm = [a for a in range(rank) if a not in source]
    for dest, src in sorted(zip(destination, source)):
        perm.insert(dest, src)
    return _transpose(ctx, perm)


@op_converter("broadcast_to", opset=13)
def convert_broadcast_to(ctx: ConversionContext) -> ConverterResult:
    """Expand to the constant ``shape``."""
    shape = ctx.arguments["shape"]
    if isinstance(shape, (list, tuple)) and any(isinstance(d, KerasTensor) for d in shape):
        # Sizes read when the graph runs (a traced ops.shape) joined into the shape vector.
        parts = [ctx.op("Reshape", [operand(ctx, d, "int64"), ctx.const(int64([1]), name="one")])
                 if isinstance(d, KerasTensor) else ctx.const(int64([d]), name="size") for d in shape]
        return ctx.op("Expand", [_x(ctx), ctx.op("Concat", parts, axis=0)])
    return ctx.op("Expand", [_x(ctx), ctx.const(int64(shape), name="shape")])


@op_converter("flip", opset=13)
def convert_flip(ctx: ConversionContext) -> ConverterResult:
    """One Slice with step -1 over ``axis`` (all axes when None), from the last element to before the first."""
    axes = axes_of(ctx.arguments["axis"], ctx.input_rank())
    n = len(axes)
    if not n:
        return _x(ctx)
    return ctx.op("Slice", [_x(ctx), ctx.const(int64([-1] * n), name="starts"),
                            ctx.const(int64([INT64_MIN] * n), name="ends"), ctx.const(int64(axes), name="axes"),
                            ctx.const(int64([-1] * n), name="steps")])


def _slice(ctx, x, start, end, axis):
    """``x`` sliced ``start:end`` along ``axis``."""
    return ctx.op("Slice", [x, ctx.const(int64([start]), name="starts"), ctx.const(int64([end]), name="ends"),
                            ctx.const(int64([axis]), name="axes")])


def _roll_axis(ctx, x, shift, axis, size):
    """``x`` rolled by ``shift`` along ``axis``: one Gather if ``size`` is known, else a slice of ``x`` twice."""
    if size is not None:
        if shift % max(size, 1) == 0:
            return x
        return ctx.op("Gather", [x, ctx.const(int64((np.arange(size) - shift) % size), name="rolled")], axis=axis)
    if shift == 0:
        return x
    # out[i] = x[(i - shift) mod n] = (x joined to x)[start + i] with start = -shift mod n (n = 0 rows: empty).
    n = ctx.op("Gather", [ctx.op("Shape", [x]), ctx.const(int64([axis]), name="axis")])
    start = ctx.op("Mod", [ctx.const(int64([-shift]), name="shift"),
                           ctx.op("Max", [n, ctx.const(int64([1]), name="one")])], fmod=0)
    twice = ctx.op("Concat", [x, x], axis=axis)
    return ctx.op("Slice", [twice, start, ctx.op("Add", [start, n]), ctx.const(int64([axis]), name="axes")])


@op_converter("roll", opset=13)
def convert_roll(ctx: ConversionContext) -> ConverterResult:
    """Roll by ``shift`` along each of ``axis`` (the flattened input when None, reshaped back)."""
    args = ctx.arguments
    x, shape = _x(ctx), ctx.input_shape()
    if args["axis"] is None:
        size = None if None in shape else int(np.prod(shape))
        rolled = _roll_axis(ctx, flatten(ctx, x), int(args["shift"]), 0, size)
        if sum(d is None for d in shape) > 1:
            return ctx.op("Reshape", [rolled, ctx.op("Shape", [x])])
        return reshape(ctx, rolled, shape)
    axes = args["axis"] if isinstance(args["axis"], (tuple, list)) else [args["axis"]]
    shifts = args["shift"] if isinstance(args["shift"], (tuple, list)) else [args["shift"]] * len(axes)
    for shift, axis in zip(shifts, axes):
        axis = int(axis) % len(shape)
        x = _roll_axis(ctx, x, int(shift), axis, shape[axis])
    return x


@op_converter("concatenate", opset=13)
def convert_concatenate(ctx: ConversionContext) -> ConverterResult:
    """Concat of the operands cast to the output dtype (flattened first when axis is None)."""
    args = ctx.arguments
    xs = [operand(ctx, x, ctx.output_dtype()) for x in args["xs"]]
    if args["axis"] is None:
        return ctx.op("Concat", [flatten(ctx, x) for x in xs], axis=0)
    return ctx.op("Concat", xs, axis=int(args["axis"]) % ctx.output_rank())


@op_converter("stack", opset=13)
def convert_stack(ctx: ConversionContext) -> ConverterResult:
    """Each operand unsqueezed at ``axis``, then one Concat."""
    args = ctx.arguments
    axis = int(args["axis"]) % ctx.output_rank()
    axes = ctx.const(int64([axis]), name="axes")
    xs = [ctx.op("Unsqueeze", [operand(ctx, x, ctx.output_dtype()), axes]) for x in args["x"]]
    return ctx.op("Concat", xs, axis=axis)


@op_converter("split", opset=13)
def convert_split(ctx: ConversionContext) -> ConverterResult:
    """One Split with the sizes written out; Slices where the axis size is unknown (split at indices)."""
    args = ctx.arguments
    axis = int(args["axis"]) % ctx.input_rank()
    size, sections = ctx.input_shape()[axis], args["indices_or_sections"]
    x, n = _x(ctx), ctx.num_outputs
    if n == 1:
        return [x]
    if size is None:  # equal sections of an unknown size fail shape inference: these are indices
        bounds = [0] + [int(i) for i in sections] + [INT64_MAX]
        return [_slice(ctx, x, lo, hi, axis) for lo, hi in zip(bounds[:-1], bounds[1:])]
    sizes = [len(part) for part in np.array_split(np.arange(size), sections)]
    return ctx.op("Split", [x, ctx.const(int64(sizes), name="split")], outputs=n, axis=axis)


@op_converter("tile", opset=13)
def convert_tile(ctx: ConversionContext) -> ConverterResult:
    """Tile, the input first given leading size-1 axes when ``repeats`` is longer than its rank."""
    x_arg = ctx.arguments["x"]  # x may be a constant, and repeats the op's one tensor input
    rank = len(x_arg.shape) if hasattr(x_arg, "shape") else np.ndim(x_arg)
    repeats = ctx.arguments["repeats"]
    x = _x(ctx)
    if isinstance(repeats, KerasTensor) or (isinstance(repeats, (list, tuple))
                                            and any(isinstance(r, KerasTensor) for r in repeats)):
        return _tile_traced(ctx, x, rank, repeats)
    reps = [int(r) for r in np.atleast_1d(repeats)]
    if len(reps) > rank:
        x = ctx.op("Unsqueeze", [x, ctx.const(int64(range(len(reps) - rank)), name="axes")])
    reps = [1] * (max(rank, len(reps)) - len(reps)) + reps
    return ctx.op("Tile", [x, ctx.const(int64(reps), name="repeats")])


def _tile_traced(ctx, x, rank, repeats):
    """Tile with repeat counts read when the graph runs (a traced ``ops.shape``): the counts joined into one
    int64 vector, padded with ones in front to the input's rank."""
    if isinstance(repeats, KerasTensor):
        count = repeats.shape[0] if repeats.shape else 1
        parts = [ctx.op("Reshape", [operand(ctx, repeats, "int64"), ctx.const(int64([-1]), name="flat")])]
    else:
        count = len(repeats)
        parts = [ctx.op("Reshape", [operand(ctx, r, "int64"), ctx.const(int64([1]), name="one")])
                 if isinstance(r, KerasTensor) else ctx.const(int64([int(r)]), name="count") for r in repeats]
    if count > rank:
        x = ctx.op("Unsqueeze", [x, ctx.const(int64(range(count - rank)), name="axes")])
    elif count < rank:
        parts.insert(0, ctx.const(int64([1] * (rank - count)), name="ones"))
    return ctx.op("Tile", [x, ctx.op("Concat", parts, axis=0) if len(parts) > 1 else parts[0]])


@op_converter("repeat", opset=13)
def convert_repeat(ctx: ConversionContext) -> ConverterResult:
    """Repeat each element: one Gather for an axis of known size, else Unsqueeze, Tile and a Reshape."""
    args = ctx.arguments
    x, rank = _x(ctx), ctx.input_rank()
    if args["axis"] is None:
        shape = ctx.input_shape()
        x, axis, rank, size = flatten(ctx, x), 0, 1, (None if None in shape else int(np.prod(shape)))
    else:
        axis = int(args["axis"]) % rank
        size = ctx.input_shape()[axis]
    counts = np.asarray(args["repeats"]).reshape(-1)
    if size is not None:
        index = np.repeat(np.arange(size), counts if counts.size > 1 else int(counts[0]))
        return ctx.op("Gather", [x, ctx.const(int64(index), name="repeated")], axis=axis)
    if counts.size > 1:
        raise ctx.error(f"per-element repeats need the size of axis {axis}, which is unknown")
    # Every element r times: a new axis after `axis`, tiled r times, merged back; the shape is computed.
    reps = [1] * (axis + 1) + [int(counts[0])] + [1] * (rank - axis - 1)
    tiled = ctx.op("Tile", [ctx.op("Unsqueeze", [x, ctx.const(int64([axis + 1]), name="axes")]),
                            ctx.const(int64(reps), name="repeats")])
    scale = [1] * rank
    scale[axis] = int(counts[0])
    shape = ctx.op("Mul", [ctx.op("Shape", [x]), ctx.const(int64(scale), name="scale")])
    return ctx.op("Reshape", [tiled, shape])


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect"}


def _pad(ctx, modes):
    """Pad with ``pad_width`` broadcast to one (before, after) pair per axis, in a mode ONNX has."""
    args = ctx.arguments
    rank = ctx.input_rank()
    mode = args["mode"]
    if mode not in modes:
        raise ctx.error(f"pad mode '{mode}' has no ONNX Pad form at opset {ctx.opset}; expected one of "
                        f"{sorted(modes)}")
    widths = np.broadcast_to(np.asarray(args["pad_width"], dtype=np.int64), (rank, 2))
    inputs = [_x(ctx), ctx.const(int64(np.concatenate([widths[:, 0], widths[:, 1]])), name="pads")]
    if mode == "constant":
        value = 0 if args["constant_values"] is None else args["constant_values"]
        if np.ndim(value) != 0:
            raise ctx.error("per-axis constant_values have no ONNX Pad form; expected one number")
        inputs.append(ctx.const(value, dtype=ctx.output_dtype(), name="pad_value"))
    return ctx.op("Pad", inputs, mode=modes[mode])


@op_converter("pad", opset=13)
def convert_pad(ctx: ConversionContext) -> ConverterResult:
    """Pad in constant, edge or reflect mode (NumPy's "symmetric" has no ONNX form)."""
    return _pad(ctx, _PAD_MODES)


@op_converter("pad", opset=19)
def convert_pad_19(ctx: ConversionContext) -> ConverterResult:
    """Pad in constant, edge, reflect or wrap mode (wrap is new in opset 19)."""
    return _pad(ctx, dict(_PAD_MODES, wrap="wrap"))
