"""Converters of the array creation ops of ``keras.ops.numpy``: ``*_like`` and copy; from sizes, constants only."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.converters.ops.common import operand
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["linspace", "logspace", "geomspace", "meshgrid", "empty_like", "vander"])

# Functions of shapes and numbers: they never record a node.
_CONSTANT = "takes sizes, not tensors: the result is a constant"
for _name in ("eye", "empty", "identity", "tri", "bartlett", "blackman", "hamming", "hanning", "kaiser"):
    unexportable(_name, _CONSTANT)
for _name in ("zeros", "ones"):
    unexportable(_name, "takes a shape, not a tensor: the result is a constant")
unexportable("full", "its shape is fixed: a tensor fill value (with a batch axis) does not broadcast to it, so no "
                     "graph has it")
unexportable("array", "converts a value to a constant array (or records `cast`)")


@op_converter("copy", opset=13)
def convert_copy(ctx: ConversionContext) -> ConverterResult:
    """The input itself: no node."""
    return ctx.input(0)


def _filled_like(ctx, x, fill):
    """``fill`` (a name, broadcastable) expanded to the shape of the tensor ``x``."""
    return ctx.op("Expand", [fill, ctx.op("Shape", [operand(ctx, x)])])


@op_converter("zeros_like", opset=13)
def convert_zeros_like(ctx: ConversionContext) -> ConverterResult:
    """Zeros of the output dtype expanded to the input's shape."""
    return _filled_like(ctx, ctx.arguments["x"], ctx.const(0, dtype=ctx.output_dtype(), name="zero"))


@op_converter("ones_like", opset=13)
def convert_ones_like(ctx: ConversionContext) -> ConverterResult:
    """Ones of the output dtype expanded to the input's shape."""
    return _filled_like(ctx, ctx.arguments["x"], ctx.const(1, dtype=ctx.output_dtype(), name="one"))


@op_converter("full_like", opset=13)
def convert_full_like(ctx: ConversionContext) -> ConverterResult:
    """``fill_value`` (a number or a tensor) in the output dtype expanded to the input's shape."""
    args = ctx.arguments
    return _filled_like(ctx, args["x"], ctx.tensor(args["fill_value"], ctx.output_dtype()))


@op_converter("arange", opset=13)
def convert_arange(ctx: ConversionContext) -> ConverterResult:
    """Range: ``arange`` whose bounds are read when the graph runs (a traced ``ops.shape``), in the output's
    dtype (constant bounds never record a node: the result is a constant)."""
    args, dtype = ctx.arguments, ctx.output_dtype()
    start, stop, step = args["start"], args["stop"], args["step"]
    if stop is None:
        start, stop = 0, start
    scalar = [ctx.op("Reshape", [operand(ctx, v, dtype), ctx.const(np.zeros(0, np.int64), name="scalar")])
              for v in (start, stop, step)]
    return ctx.op("Range", scalar)
