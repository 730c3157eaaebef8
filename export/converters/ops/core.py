"""Converters of the core ops of ``keras.ops``: cast, slicing, scattering, unstack; control flow stays eager."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import Value, onnx_dtype
from export.converters.ops.common import int64, operand
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["cdist", "saturate_cast"])

# Functions of shapes and values: they return Python values and never record a node.
unexportable("shape", "returns a tuple of Python ints (None for unknown sizes), never a tensor")
unexportable("convert_to_numpy", "returns a NumPy array; a KerasTensor has no value to convert")
unexportable("convert_to_tensor", "returns its KerasTensor argument itself (or records `cast` for another dtype)")
unexportable("dtype", "returns a dtype name")
unexportable("is_tensor", "returns a Python bool")
unexportable("custom_gradient", "a decorator: it returns a function, never a tensor")
unexportable("view", "ONNX cannot reinterpret a tensor's bytes as another dtype")
_PYTHON = "calls a Python function on values at each step or branch, which an ONNX graph cannot carry"
for _name in ("cond", "switch", "fori_loop", "while_loop", "scan", "associative_scan", "map", "vectorized_map",
              "vectorize"):
    unexportable(_name, _PYTHON)


@op_converter("cast", opset=13)
def convert_cast(ctx: ConversionContext) -> ConverterResult:
    """Cast to the dtype asked for; no node when the input has it already."""
    return Value(ctx.input(0, layout=None, dtype=ctx.output_dtype()), ctx.layout(0))


@op_converter("stop_gradient", opset=13)
def convert_stop_gradient(ctx: ConversionContext) -> ConverterResult:
    """The input itself (gradients do not exist at inference): no node."""
    return Value(ctx.input(0, layout=None), ctx.layout(0))


@op_converter("slice", opset=13)
def convert_slice(ctx: ConversionContext) -> ConverterResult:
    """Slice with the constant start and size of each axis (-1: to the end)."""
    args = ctx.arguments
    starts = [int(s) for s in np.asarray(args["start_indices"]).tolist()]
    ends = [np.iinfo(np.int64).max if n == -1 else s + int(n) for s, n in zip(starts, args["shape"])]
    return ctx.op("Slice", [ctx.input(0), ctx.const(int64(starts), name="starts"), ctx.const(int64(ends), name="ends")])


@op_converter("slice_update", opset=13)
def convert_slice_update(ctx: ConversionContext) -> ConverterResult:
    """The updates padded to the input's shape, chosen by a padded mask (Where)."""
    args = ctx.arguments
    starts = [int(s) for s in np.asarray(args["start_indices"]).tolist()]
    in_shape, up_shape = ctx.input_shape(0), ctx.input_shape(1)
    before, after = [], []
    for axis, (start, size, update) in enumerate(zip(starts, in_shape, up_shape)):
        if size is None or update is None:
            if not (size is None and update is None and start == 0):
                raise ctx.error(f"axis {axis} has an unknown size; the update must span it from 0")
            before.append(0), after.append(0)
        else:
            before.append(start), after.append(size - start - update)
    pads = ctx.const(int64(before + after), name="pads")
    x = ctx.input(0)
    updates = ctx.tensor(args["updates"], ctx.output_dtype())
    placed = ctx.op("Pad", [updates, pads])
    ones = ctx.op("Expand", [ctx.const(np.array(1, np.int32), name="one"), ctx.op("Shape", [updates])])
    mask = ctx.op("Cast", [ctx.op("Pad", [ones, pads])], to=onnx_dtype("bool"))
    return ctx.op("Where", [mask, placed, x])


@op_converter("scatter", opset=16)
def convert_scatter(ctx: ConversionContext) -> ConverterResult:
    """ScatterND adding (opset 16) into zeros of the constant shape."""
    args = ctx.arguments
    zeros = ctx.const(np.zeros(args["shape"], dtype=ctx.output_dtype()), name="zeros")
    indices = ctx.tensor(args["indices"], "int64")
    values = ctx.tensor(args["values"], ctx.output_dtype())
    return ctx.op("ScatterND", [zeros, indices, values], reduction="add")


@op_converter("scatter_update", opset=13)
def convert_scatter_update(ctx: ConversionContext) -> ConverterResult:
    """ScatterND writing (or reducing, from opset 16; max/min from 18) the updates into the inputs."""
    args = ctx.arguments
    reduction = args["reduction"]
    attrs = {} if reduction is None else {"reduction": reduction}
    if reduction in ("max", "min") and ctx.opset < 18 or reduction in ("add", "mul") and ctx.opset < 16:
        raise ctx.error(f"ScatterND reduction={reduction!r} needs a newer opset than {ctx.opset}")
    return ctx.op("ScatterND", [ctx.tensor(args["inputs"], ctx.output_dtype()), ctx.tensor(args["indices"], "int64"),
                                ctx.tensor(args["updates"], ctx.output_dtype())], **attrs)


@op_converter("unstack", opset=13)
def convert_unstack(ctx: ConversionContext) -> ConverterResult:
    """One Gather of a scalar index per output (each removes the axis)."""
    axis = int(ctx.arguments["axis"]) % ctx.input_rank()
    x = operand(ctx, ctx.arguments["x"])
    return [ctx.op("Gather", [x, ctx.const(np.array(i, dtype=np.int64), name="index")], axis=axis)
            for i in range(ctx.num_outputs)]
