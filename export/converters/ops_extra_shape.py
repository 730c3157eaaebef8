"""Converters of ``kgraph.ops.numpy_shape`` and ``numpy_index``: compositions, slicing, scattering, search."""
import numpy as np

from export.builder import onnx_dtype
from export.converters.ops import UNEXPORTABLE, common_dtype, int64
from export.converters.ops_extra import register_composites
from export.registry import op_converter

register_composites(["hstack", "vstack", "dstack", "append", "array_split", "hsplit", "vsplit", "dsplit", "fliplr",
                     "flipud", "rot90", "tril", "triu", "diagonal", "trace", "diag", "diagflat", "linspace",
                     "logspace", "geomspace", "meshgrid", "empty_like", "tensordot", "dot", "inner",
                     "outer", "vdot", "kron", "cross", "select", "trapezoid", "vander", "corrcoef", "correlate",
                     "rearrange"])

_CONSTANT = "takes sizes, not tensors: the result is a constant"
_DATA_DEPENDENT = "its output shape depends on the input's values (it runs eagerly only)"
UNEXPORTABLE.update({
    "size": "returns a Python int", "array": "converts a value to a constant array (or records `cast`)",
    "empty": _CONSTANT, "identity": _CONSTANT, "tri": _CONSTANT, "bartlett": _CONSTANT, "blackman": _CONSTANT,
    "hamming": _CONSTANT, "hanning": _CONSTANT, "kaiser": _CONSTANT,
    "nonzero": _DATA_DEPENDENT, "unique": _DATA_DEPENDENT, "bincount": _DATA_DEPENDENT,
    "histogram": "its bin edges depend on the input's minimum and maximum (it runs eagerly only)",
    "unravel_index": "returns a tuple of NumPy arrays (it runs eagerly only)",
})


@op_converter("copy", opset=13)
def convert_copy(ctx):
    """The input itself: no node."""
    return ctx.input(0)


@op_converter("slice", opset=13)
def convert_slice(ctx):
    """Slice with the constant start and size of each axis (-1: to the end)."""
    args = ctx.arguments
    starts = [int(s) for s in np.asarray(args["start_indices"]).tolist()]
    ends = [np.iinfo(np.int64).max if n == -1 else s + int(n) for s, n in zip(starts, args["shape"])]
    return ctx.op("Slice", [ctx.input(0), ctx.const(int64(starts), name="starts"), ctx.const(int64(ends), name="ends")])


@op_converter("slice_update", opset=13)
def convert_slice_update(ctx):
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
def convert_scatter(ctx):
    """ScatterND adding (opset 16) into zeros of the constant shape."""
    args = ctx.arguments
    zeros = ctx.const(np.zeros(args["shape"], dtype=ctx.output_dtype()), name="zeros")
    indices = ctx.tensor(args["indices"], "int64")
    values = ctx.tensor(args["values"], ctx.output_dtype())
    return ctx.op("ScatterND", [zeros, indices, values], reduction="add")


@op_converter("scatter_update", opset=13)
def convert_scatter_update(ctx):
    """ScatterND writing (or reducing, from opset 16; max/min from 18) the updates into the inputs."""
    args = ctx.arguments
    reduction = args["reduction"]
    attrs = {} if reduction is None else {"reduction": reduction}
    if reduction in ("max", "min") and ctx.opset < 18 or reduction in ("add", "mul") and ctx.opset < 16:
        raise ctx.error(f"ScatterND reduction={reduction!r} needs a newer opset than {ctx.opset}")
    return ctx.op("ScatterND", [ctx.tensor(args["inputs"], ctx.output_dtype()), ctx.tensor(args["indices"], "int64"),
                                ctx.tensor(args["updates"], ctx.output_dtype())], **attrs)




def _count(ctx, compare, left, right, axis):
    """ReduceSum over ``axis`` of ``compare(left, right)`` as int32."""
    hits = ctx.op("Cast", [ctx.op(compare, [left, right])], to=onnx_dtype("int64"))
    total = ctx.op("ReduceSum", [hits, ctx.const(int64([axis]), name="axes")], keepdims=0)
    return ctx.op("Cast", [total], to=onnx_dtype("int32"))


def _search(ctx, sequence, values, strict):
    """Per value, how many elements of the 1-D ``sequence`` are below it (``strict``) or not above it."""
    args = ctx.arguments
    dtype = common_dtype(args[sequence], args[values])
    seq = ctx.tensor(args[sequence], dtype)
    vals = ctx.op("Unsqueeze", [ctx.tensor(args[values], dtype), ctx.const(int64([-1]), name="axes")])
    return _count(ctx, "Less" if strict else "LessOrEqual", seq, vals, -1)


@op_converter("searchsorted", opset=13)
def convert_searchsorted(ctx):
    """Counts of sequence elements below each value (``side="right"``: not above it)."""
    return _search(ctx, "sorted_sequence", "values", ctx.arguments["side"] == "left")


@op_converter("digitize", opset=13)
def convert_digitize(ctx):
    """Counts of (increasing) bin edges not above each value."""
    return _search(ctx, "bins", "x", strict=False)


@op_converter("isin", opset=13)
def convert_isin(ctx):
    """Any Equal between each element and the flattened ``x2`` (negated for ``invert``)."""
    args = ctx.arguments
    dtype = common_dtype(args["x1"], args["x2"])
    x1 = ctx.op("Unsqueeze", [ctx.tensor(args["x1"], dtype), ctx.const(int64([-1]), name="axes")])
    x2 = ctx.op("Reshape", [ctx.tensor(args["x2"], dtype), ctx.const(int64([-1]), name="flat")])
    found = ctx.op("Greater", [_count(ctx, "Equal", x1, x2, -1), ctx.const(np.array(0, np.int32), name="zero")])
    return ctx.op("Not", [found]) if args["invert"] else found
