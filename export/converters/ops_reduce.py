"""Converters of the reductions of ``kgraph.ops``: sums, extrema, moments, arg-extrema, all/any, cumsum."""
import numpy as np

from export.builder import onnx_dtype
from export.converters.ops import axes_of, flatten, int64, operand, reduce
from export.registry import op_converter


def _reduce_axes(ctx):
    """The call's input (cast to the output dtype), its reduced axes (None: all) and keepdims."""
    args = ctx.arguments
    x = operand(ctx, args["x"], ctx.output_dtype())
    axis = args["axis"]
    return x, (None if axis is None else axes_of(axis, ctx.input_rank())), bool(args["keepdims"])


def _reduction(op_type):
    """A converter applying the ONNX reduction ``op_type`` over ``axis`` (None: all axes)."""
    def convert(ctx):
        x, axes, keepdims = _reduce_axes(ctx)
        return reduce(ctx, op_type, x, axes, keepdims)
    convert.__doc__ = f"{op_type} over ``axis`` in the output dtype (NumPy's: int64 sums, float64 means of ints)."
    return convert


for _name, _op_type in {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin",
                        "prod": "ReduceProd"}.items():
    op_converter(_name, opset=13)(_reduction(_op_type))


@op_converter("logsumexp", opset=13)
def convert_logsumexp(ctx):
    """``log(sum(exp(x - m))) + m`` with ``m`` the finite max, as kgraph computes it (no overflow)."""
    # onnxruntime's ReduceLogSumExp overflows for large inputs at some opsets.
    x, axes, keepdims = _reduce_axes(ctx)
    top = reduce(ctx, "ReduceMax", x, axes, True)
    top = ctx.op("Where", [ctx.op("IsInf", [top]), ctx.const(0, dtype=ctx.output_dtype(), name="zero"), top])
    total = reduce(ctx, "ReduceSum", ctx.op("Exp", [ctx.op("Sub", [x, top])]), axes, True)
    y = ctx.op("Add", [ctx.op("Log", [total]), top])
    squeezed = list(range(ctx.input_rank())) if axes is None else axes
    if keepdims or not squeezed:
        return y
    return ctx.op("Squeeze", [y, ctx.const(int64(squeezed), name="axes")])


def _variance(ctx, x, axes, keepdims):
    """The population variance of ``x`` over ``axes``: the mean of squared deviations from the mean."""
    centered = ctx.op("Sub", [x, reduce(ctx, "ReduceMean", x, axes, True)])
    return reduce(ctx, "ReduceMean", ctx.op("Mul", [centered, centered]), axes, keepdims)


@op_converter("var", opset=13)
def convert_var(ctx):
    """Mean of squared deviations over ``axis``."""
    return _variance(ctx, *_reduce_axes(ctx))


@op_converter("std", opset=13)
def convert_std(ctx):
    """Square root of the population variance over ``axis``."""
    return ctx.op("Sqrt", [_variance(ctx, *_reduce_axes(ctx))])


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
def convert_cumsum(ctx):
    """CumSum along ``axis`` (of the flattened input when None) in the output dtype."""
    args = ctx.arguments
    x = operand(ctx, args["x"], ctx.output_dtype())
    if args["axis"] is None:
        x, axis = flatten(ctx, x), 0
    else:
        axis = int(args["axis"]) % ctx.input_rank()
    return ctx.op("CumSum", [x, ctx.const(np.array(axis, dtype=np.int64), name="axis")])
