"""Converters of the sorting and order-statistic ops of ``kgraph.ops.numpy_reductions``."""
from export.builder import onnx_dtype
from export.converters.ops import UNEXPORTABLE, axes_of, flatten, int64, is_float, reduce
from export.converters.ops_extra import register_composites
from export.registry import op_converter

register_composites(["amax", "amin", "ptp", "average", "diff", "quantile", "percentile", "median", "nansum",
                     "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nancumsum"])

UNEXPORTABLE.update({
    "cumprod": "ONNX has CumSum but no cumulative product (a log-space sum loses signs and zeros)",
    "nancumprod": "ONNX has CumSum but no cumulative product",
    "argpartition": "ONNX has no partition; NumPy's order within each side is its own",
    "nanquantile": "the count of non-NaN values varies per row, so the interpolated positions depend on values",
    "nanpercentile": "the count of non-NaN values varies per row, so the interpolated positions depend on values",
    "nanmedian": "the count of non-NaN values varies per row, so the interpolated positions depend on values",
})


def _top_k(ctx, x, axis, k, largest):
    """TopK's (values, indices) of ``x`` along ``axis``: the ``k`` largest (or smallest), sorted."""
    return ctx.op("TopK", [x, ctx.const(int64([k]), name="k")], outputs=2, axis=axis, largest=int(largest), sorted=1)


def _axis_size(ctx, axis, rank):
    size = ctx.input_shape(0)[axis % rank]
    if size is None:
        raise ctx.error(f"sorting along axis {axis} needs its size, which is unknown (the batch axis)")
    return size


@op_converter("sort", opset=13)
def convert_sort(ctx):
    """TopK of all the axis's elements, smallest first."""
    axis, rank = ctx.arguments["axis"], ctx.input_rank(0)
    x = ctx.input(0)
    if axis is None:
        raise ctx.error("sort with axis=None flattens the batch axis into the sorted one")
    return _top_k(ctx, x, axis, _axis_size(ctx, axis, rank), largest=False)[0]


@op_converter("argsort", opset=13)
def convert_argsort(ctx):
    """TopK's indices (smallest first) as int32."""
    axis, rank = ctx.arguments["axis"], ctx.input_rank(0)
    if axis is None:
        raise ctx.error("argsort with axis=None flattens the batch axis into the sorted one")
    indices = _top_k(ctx, ctx.input(0), axis, _axis_size(ctx, axis, rank), largest=False)[1]
    return ctx.op("Cast", [indices], to=onnx_dtype("int32"))


@op_converter("top_k", opset=13)
def convert_top_k(ctx):
    """TopK along the last axis; indices as int32."""
    values, indices = _top_k(ctx, ctx.input(0), -1, int(ctx.arguments["k"]), largest=True)
    return [values, ctx.op("Cast", [indices], to=onnx_dtype("int32"))]


@op_converter("in_top_k", opset=13)
def convert_in_top_k(ctx):
    """Fewer than ``k`` predictions above the target's own score."""
    args = ctx.arguments
    predictions = ctx.tensor(args["predictions"], ctx.input_dtype(1) if ctx.num_inputs > 1 else None)
    targets = ctx.op("Unsqueeze", [ctx.tensor(args["targets"], "int64"), ctx.const(int64([1]), name="axes")])
    score = ctx.op("GatherElements", [predictions, targets], axis=1)
    above = ctx.op("Cast", [ctx.op("Greater", [predictions, score])], to=onnx_dtype("int64"))
    count = reduce(ctx, "ReduceSum", above, [1], keepdims=False)
    return ctx.op("Less", [count, ctx.const(int64(int(args["k"])), name="k")])


@op_converter("count_nonzero", opset=13)
def convert_count_nonzero(ctx):
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
