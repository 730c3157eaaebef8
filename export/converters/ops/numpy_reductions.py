"""Converters of the reductions, sorting and order statistics of ``keras.ops.numpy``."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import onnx_dtype
from export.converters.ops.common import axes_of, flatten, int64, is_float, operand, reduce
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["amax", "amin", "ptp", "average", "diff", "quantile", "percentile", "median", "nansum",
                     "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nancumsum", "trapezoid",
                     "corrcoef"])

unexportable("cumprod", "ONNX has CumSum but no cumulative product (a log-space sum loses signs and zeros)")
unexportable("nancumprod", "ONNX has CumSum but no cumulative product")
unexportable("argpartition", "ONNX has no partition; NumPy's order within each side is its own")
for _name in ("nanquantile", "nanpercentile", "nanmedian"):
    unexportable(_name, "the count of non-NaN values varies per row, so the interpolated positions depend on values")


def reduce_axes(ctx: ConversionContext) -> tuple[str, list[int] | None, bool]:
    """The call's input (cast to the output dtype), its reduced axes (None: all) and keepdims."""
    args = ctx.arguments
    x = operand(ctx, args["x"], ctx.output_dtype())
    axis = args["axis"]
    return x, (None if axis is None else axes_of(axis, ctx.input_rank())), bool(args["keepdims"])


def _reduction(op_type):
    """A converter applying the ONNX reduction ``op_type`` over ``axis`` (None: all axes)."""
    def convert(ctx):
        x, axes, keepdims = reduce_axes(ctx)
        return reduce(ctx, op_type, x, axes, keepdims)
    convert.__doc__ = f"{op_type} over ``axis`` in the output dtype (NumPy's: int64 sums, float64 means of ints)."
    return convert


for _name, _op_type in {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
                        "prod": "ReduceProd"}.items():
    op_converter(_name, opset=13)(_reduction(_op_type))


def _variance(ctx, x, axes, keepdims):
    """The population variance of ``x`` over ``axes``: the mean of squared deviations from the mean."""
    centered = ctx.op("Sub", [x, reduce(ctx, "ReduceMean", x, axes, True)])
    return reduce(ctx, "ReduceMean", ctx.op("Mul", [centered, centered]), axes, keepdims)


@op_converter("var", opset=13)
def convert_var(ctx: ConversionContext) -> ConverterResult:
    """Mean of squared deviations over ``axis``."""
    return _variance(ctx, *reduce_axes(ctx))


@op_converter("std", opset=13)
def convert_std(ctx: ConversionContext) -> ConverterResult:
    """Square root of the population variance over ``axis``."""
    return ctx.op("Sqrt", [_variance(ctx, *reduce_axes(ctx))])


def _arg_extremum(op_type):
    """A converter for argmax/argmin: the first index of the extremum, on the flattened input when axis is None."""
    def convert(ctx):
        args = ctx.arguments
        x = operand(ctx, args["x"])
        keepdims = bool(args["keepdims"])
        if args["axis"] is not None:
            y = ctx.op(op_type, [x], axis=int(args["axis"]), keepdims=int(keepdims))
        else:
            y = ctx.op(op_type, [flatten(ctx, x)], axis=0, keepdims=0)
            if keepdims:
                y = ctx.op("Reshape", [y, ctx.const(int64([1] * ctx.input_rank()), name="ones_shape")])
        return ctx.op("Cast", [y], to=onnx_dtype("int32"))
    convert.__doc__ = (f"{op_type} (first index among ties, as NumPy) over ``axis`` or the flattened input, "
                       "cast to int32 as Keras returns it.")
    return convert


op_converter("argmax", opset=13)(_arg_extremum("ArgMax"))
op_converter("argmin", opset=13)(_arg_extremum("ArgMin"))


def _truth_reduction(op_type):
    """A converter for all/any: ``op_type`` of the truth values as int64, back to booleans."""
    # Int64 product (all) and sum (any) give NumPy's answers on empty axes too (True and False).
    def convert(ctx):
        args = ctx.arguments
        truth = operand(ctx, args["x"], "bool")
        axis = args["axis"]
        axes = None if axis is None else axes_of(axis, ctx.input_rank())
        counts = reduce(ctx, op_type, ctx.op("Cast", [truth], to=onnx_dtype("int64")), axes, args["keepdims"])
        return ctx.op("Cast", [counts], to=onnx_dtype("bool"))
    convert.__doc__ = f"{op_type} of the truth values as int64, cast back to booleans."
    return convert


op_converter("all", opset=13)(_truth_reduction("ReduceProd"))
op_converter("any", opset=13)(_truth_reduction("ReduceSum"))


@op_converter("cumsum", opset=13)
def convert_cumsum(ctx: ConversionContext) -> ConverterResult:
    """CumSum along ``axis`` (of the flattened input when None) in the output dtype."""
    args = ctx.arguments
    x = operand(ctx, args["x"], ctx.output_dtype())
    if args["axis"] is None:
        x, axis = flatten(ctx, x), 0
    else:
        axis = int(args["axis"]) % ctx.input_rank()
    return ctx.op("CumSum", [x, ctx.const(np.array(axis, dtype=np.int64), name="axis")])


def top_k(ctx: ConversionContext, x: str, axis: int, k: int, largest: bool) -> list[str]:
    """TopK's (values, indices) of ``x`` along ``axis``: the ``k`` largest (or smallest), sorted."""
    return ctx.op("TopK", [x, ctx.const(int64([k]), name="k")], outputs=2, axis=axis, largest=int(largest), sorted=1)


def _axis_size(ctx, axis, rank):
    size = ctx.input_shape(0)[axis % rank]
    if size is None:
        raise ctx.error(f"sorting along axis {axis} needs its size, which is unknown (the batch axis)")
    return size


@op_converter("sort", opset=13)
def convert_sort(ctx: ConversionContext) -> ConverterResult:
    """TopK of all the axis's elements, smallest first."""
    axis, rank = ctx.arguments["axis"], ctx.input_rank(0)
    x = ctx.input(0)
    if axis is None:
        raise ctx.error("sort with axis=None flattens the batch axis into the sorted one")
    return top_k(ctx, x, axis, _axis_size(ctx, axis, rank), largest=False)[0]


@op_converter("argsort", opset=13)
def convert_argsort(ctx: ConversionContext) -> ConverterResult:
    """TopK's indices (smallest first) as int32."""
    axis, rank = ctx.arguments["axis"], ctx.input_rank(0)
    if axis is None:
        raise ctx.error("argsort with axis=None flattens the batch axis into the sorted one")
    indices = top_k(ctx, ctx.input(0), axis, _axis_size(ctx, axis, rank), largest=False)[1]
    return ctx.op("Cast", [indices], to=onnx_dtype("int32"))


@op_converter("count_nonzero", opset=13)
def convert_count_nonzero(ctx: ConversionContext) -> ConverterResult:
    """ReduceSum of ``x != 0`` as int32."""
    rank = ctx.input_rank(0)
    axis = ctx.arguments["axis"]
    x = ctx.input(0)
    nonzero = ctx.op("Not", [ctx.op("Equal", [x, ctx.const(0, dtype=ctx.input_dtype(0), name="zero")])])
    counts = ctx.op("Cast", [nonzero], to=onnx_dtype("int64"))
    total = reduce(ctx, "ReduceSum", counts, None if axis is None else axes_of(axis, rank), keepdims=False)
    return ctx.op("Cast", [total], to=onnx_dtype("int32"))


def _nan_arg(op_type, fill):
    def convert(ctx):
        args = ctx.arguments
        rank, dtype = ctx.input_rank(0), ctx.input_dtype(0)
        x = ctx.input(0)
        if args["axis"] is None:
            x, axis, keepdims = flatten(ctx, x), 0, False
            if args["keepdims"]:
                raise ctx.error("keepdims=True with axis=None is not supported")
        else:
            axis, keepdims = int(args["axis"]) % rank, bool(args["keepdims"])
        if is_float(dtype):
            nan = ctx.op("IsNaN", [x])
            x = ctx.op("Where", [nan, ctx.const(fill, dtype=dtype, name="fill"), x])
            all_nan = ctx.op("Cast", [reduce(ctx, "ReduceMin", ctx.op("Cast", [nan], to=onnx_dtype("int32")),
                                             [axis], keepdims)], to=onnx_dtype("bool"))
        index = ctx.op(op_type, [x], axis=axis, keepdims=int(keepdims))
        if is_float(dtype):
            index = ctx.op("Where", [all_nan, ctx.const(int64(-1), name="minus_one"), index])
        return ctx.op("Cast", [index], to=onnx_dtype("int32"))
    convert.__doc__ = f"{op_type} with NaNs replaced by {fill}; -1 where all are NaN; int32."
    return convert


op_converter("nanargmax", opset=13)(_nan_arg("ArgMax", float("-inf")))
op_converter("nanargmin", opset=13)(_nan_arg("ArgMin", float("inf")))
