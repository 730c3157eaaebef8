"""Converters for the merge layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate."""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING

from export.builder import NATIVE, FeatureOrder, Value
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from export.builder import Layout
    from export.context import ConversionContext
    from export.registry import ConverterResult


def common_layout(ctx: ConversionContext) -> Layout:
    """The layout to merge the inputs in: the most common one, if it is safe for these shapes."""
    # Axis permutations are safe for inputs of one rank (broadcasting is per axis); a FeatureOrder only for
    # equal shapes.
    ranks = {ctx.input_rank(i) for i in range(ctx.num_inputs)}
    if len(ranks) != 1:
        return NATIVE
    counts = collections.Counter(ctx.layout(i) for i in range(ctx.num_inputs))
    layout = max(counts, key=lambda lay: (counts[lay], lay != NATIVE))
    if isinstance(layout, FeatureOrder):
        shapes = {ctx.input_shape(i) for i in range(ctx.num_inputs)}
        return layout if len(shapes) == 1 and None not in next(iter(shapes))[1:] else NATIVE
    return layout if layout.perm(ranks.pop()) is not None else NATIVE


def _elementwise(op_type, variadic=None):
    """A converter applying ``op_type`` over the inputs: one ``variadic`` node if given, else a left-to-right chain."""
    def convert(ctx):
        layout = common_layout(ctx)
        xs = ctx.inputs(layout, dtype=ctx.output_dtype())
        if variadic is not None and len(xs) > 2:
            return Value(ctx.op(variadic, xs), layout)
        y = xs[0]
        for x in xs[1:]:
            y = ctx.op(op_type, [y, x])
        return Value(y, layout)
    return convert


converter(layers.Add, opset=13)(_elementwise("Add", variadic="Sum"))
converter(layers.Subtract, opset=13)(_elementwise("Sub"))
converter(layers.Multiply, opset=13)(_elementwise("Mul"))
converter(layers.Maximum, opset=13)(_elementwise("Max", variadic="Max"))
converter(layers.Minimum, opset=13)(_elementwise("Min", variadic="Min"))


@converter(layers.Average, opset=13)
def convert_average(ctx: ConversionContext) -> ConverterResult:
    """One Mean node over all inputs (with broadcasting)."""
    layout = common_layout(ctx)
    return Value(ctx.op("Mean", ctx.inputs(layout, dtype=ctx.output_dtype())), layout)


@converter(layers.Concatenate, opset=13)
def convert_concatenate(ctx: ConversionContext) -> ConverterResult:
    """Concat on the physical position of the Keras axis."""
    layout = common_layout(ctx)
    rank = ctx.input_rank()
    if isinstance(layout, FeatureOrder):
        layout = NATIVE
    axis = layout.physical_axis(ctx.layer.axis, rank)
    return Value(ctx.op("Concat", ctx.inputs(layout, dtype=ctx.output_dtype()), axis=axis), layout)
