"""Converters of the indexing, gathering and searching ops of ``keras.ops.numpy``: ``x[key]``, take, searchsorted."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import onnx_dtype
from export.converters.ops.common import INT64_MAX, INT64_MIN, common_dtype, flatten, int64, operand
from export.registry import op_converter, unexportable
from kgraph import KerasTensor
from kgraph.graph.keras_tensor import shape_of

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

_DATA_DEPENDENT = "its output shape depends on the input's values (it runs eagerly only)"
for _name in ("nonzero", "unique", "bincount"):
    unexportable(_name, _DATA_DEPENDENT)
unexportable("histogram", "its bin edges depend on the input's minimum and maximum (it runs eagerly only)")
unexportable("unravel_index", "returns a tuple of NumPy arrays (it runs eagerly only)")


def _is_int(item):
    """Whether ``item`` is an integer index (not a bool)."""
    return isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_))


def _is_array(item):
    """Whether ``item`` is an index array (a list or an ndarray)."""
    return isinstance(item, (np.ndarray, list))


def _expanded(ctx, key):
    """The key's items with the Ellipsis (or the trailing axes) written out as full slices."""
    items = list(key) if isinstance(key, tuple) else [key]
    for i, item in enumerate(items):
        if isinstance(item, KerasTensor):
            raise ctx.error("a tensor as an index selects elements by tensor values; expected constant indices, "
                            "or ops.take / ops.take_along_axis for indices computed from tensors")
        if _is_array(item) and np.asarray(item).dtype == np.bool_:
            if np.ndim(item) != 1:
                raise ctx.error("a constant boolean mask over several axes has no single Gather form; expected "
                                "a 1-D mask")
            items[i] = np.flatnonzero(item)  # a constant mask picks constant positions
    ellipses = [i for i, item in enumerate(items) if item is Ellipsis]
    used = sum(item is not None and item is not Ellipsis for item in items)
    fill = [slice(None)] * (ctx.input_rank() - used)
    if ellipses:
        return items[:ellipses[0]] + fill + items[ellipses[0] + 1:]
    return items + fill


def _bounds(item, size):
    """ONNX Slice ``(start, end, step)`` passes along one axis for a slice or int ``item`` (``size`` None: unknown)."""
    if _is_int(item):
        item = slice(int(item), int(item) + 1 if int(item) != -1 else None)
    step = 1 if item.step is None else int(item.step)
    if size is not None:
        picked = range(*item.indices(size))
        if not picked:
            return [(0, 0, 1)]
        end = picked[-1] + step
        return [(picked[0], (INT64_MIN if end < 0 else end), step)]
    start = (0 if step > 0 else INT64_MAX) if item.start is None else int(item.start)
    end = (INT64_MAX if step > 0 else INT64_MIN) if item.stop is None else int(item.stop)
    if step < 0 and start < 0:
        # ONNX clamps a start before the first element to the first, where Python selects nothing: keep the
        # first size + start + 1 elements, then step back from their last (a negative end moves with them).
        return [(0, INT64_MAX if start == -1 else start + 1, 1),
                (INT64_MAX, end - start - 1 if INT64_MIN < end < 0 else end, step)]
    return [(start, end, step)]


def _gather_index(ctx, items):
    """The position of the one item Gather takes (the integer array, or a lone int), or None."""
    arrays = [i for i, item in enumerate(items) if _is_array(item)]
    ints = [i for i, item in enumerate(items) if _is_int(item)]
    if len(arrays) > 1:
        raise ctx.error("more than one integer-array index has no single ONNX Gather form")
    if arrays:
        advanced = sorted(arrays + ints)
        if advanced != list(range(advanced[0], advanced[-1] + 1)) or any(item is None for item in items):
            raise ctx.error("an integer-array index apart from the other integer indices (or with None) moves "
                            "axes in NumPy's order; expected them side by side")
        return arrays[0]
    return ints[0] if len(ints) == 1 else None


@op_converter("getitem", opset=13)
def convert_getitem(ctx: ConversionContext) -> ConverterResult:
    """One Slice for the slices and ints, a Gather for an integer array (or a lone int), Squeeze, Unsqueeze."""
    x = operand(ctx, ctx.arguments["x"])
    items = _expanded(ctx, ctx.arguments["key"])
    shape = ctx.input_shape()
    gather = _gather_index(ctx, items)
    sliced, squeezed, added = [], [], []
    axis = out = 0  # the input axis and the output position each item is at
    gather_axis = None
    for i, item in enumerate(items):
        if item is None:
            added.append(out)
            out += 1
            continue
        if i == gather:
            gather_axis = axis
            out += np.ndim(item)  # the index array's axes replace the indexed one (a lone int: none)
        elif _is_int(item):
            sliced.append((axis, _bounds(item, shape[axis])))
            squeezed.append(axis)
        else:
            if item != slice(None):
                sliced.append((axis, _bounds(item, shape[axis])))
            out += 1
        axis += 1
    for stage in range(max((len(passes) for _, passes in sliced), default=0)):
        # One Slice per pass: every axis's first pass, then the second of those that need two.
        picked = [(a, passes[stage]) for a, passes in sliced if stage < len(passes)]
        axes = [a for a, _ in picked]
        starts, ends, steps = (list(column) for column in zip(*(bounds for _, bounds in picked)))
        x = ctx.op("Slice", [x, ctx.const(int64(starts), name="starts"), ctx.const(int64(ends), name="ends"),
                             ctx.const(int64(axes), name="axes"), ctx.const(int64(steps), name="steps")])
    if gather is not None:
        x = ctx.op("Gather", [x, ctx.const(int64(items[gather]), name="index")], axis=gather_axis)
        squeezed = [a + np.ndim(items[gather]) - 1 if a > gather_axis else a for a in squeezed]
    if squeezed:
        x = ctx.op("Squeeze", [x, ctx.const(int64(squeezed), name="axes")])
    if added:
        x = ctx.op("Unsqueeze", [x, ctx.const(int64(added), name="axes")])
    return x


@op_converter("take", opset=13)
def convert_take(ctx: ConversionContext) -> ConverterResult:
    """Gather at ``indices`` (as int64) along ``axis``, of the flattened input when None."""
    args = ctx.arguments
    x, indices = operand(ctx, args["x"]), operand(ctx, args["indices"], "int64")
    if args["axis"] is None:
        return ctx.op("Gather", [flatten(ctx, x), indices], axis=0)
    return ctx.op("Gather", [x, indices], axis=int(args["axis"]) % ctx.input_rank())


def _broadcast_like(ctx, name, shape, other, other_name, axis):
    """``name`` (of Keras ``shape``) broadcast on every axis but ``axis`` to the tensor ``other_name`` (``other``)."""
    # Only where `name` has size 1 and `other` may not: the run-time shape of `other` there, 1 elsewhere.
    if not any(d == 1 and o != 1 for a, (d, o) in enumerate(zip(shape, other)) if a != axis):
        return name
    keep = int64([int(a != axis) for a in range(len(shape))])
    target = ctx.op("Add", [ctx.op("Mul", [ctx.op("Shape", [other_name]), ctx.const(keep, name="keep")]),
                            ctx.const(1 - keep, name="one_at_axis")])
    return ctx.op("Expand", [name, target])


@op_converter("take_along_axis", opset=13)
def convert_take_along_axis(ctx: ConversionContext) -> ConverterResult:
    """GatherElements along ``axis``, the other axes broadcast first as NumPy does (flattened input when None)."""
    args = ctx.arguments
    x, indices = operand(ctx, args["x"]), operand(ctx, args["indices"], "int64")
    if args["axis"] is None:
        return ctx.op("GatherElements", [flatten(ctx, x), indices], axis=0)
    axis = int(args["axis"]) % ctx.input_rank()
    x_shape, index_shape = shape_of(args["x"]), shape_of(args["indices"])
    x, indices = (_broadcast_like(ctx, x, x_shape, index_shape, indices, axis),
                  _broadcast_like(ctx, indices, index_shape, x_shape, x, axis))
    return ctx.op("GatherElements", [x, indices], axis=axis)


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
def convert_searchsorted(ctx: ConversionContext) -> ConverterResult:
    """Counts of sequence elements below each value (``side="right"``: not above it)."""
    return _search(ctx, "sorted_sequence", "values", ctx.arguments["side"] == "left")


@op_converter("digitize", opset=13)
def convert_digitize(ctx: ConversionContext) -> ConverterResult:
    """Counts of (increasing) bin edges not above each value."""
    return _search(ctx, "bins", "x", strict=False)


@op_converter("isin", opset=13)
def convert_isin(ctx: ConversionContext) -> ConverterResult:
    """Any Equal between each element and the flattened ``x2`` (negated for ``invert``)."""
    args = ctx.arguments
    dtype = common_dtype(args["x1"], args["x2"])
    x1 = ctx.op("Unsqueeze", [ctx.tensor(args["x1"], dtype), ctx.const(int64([-1]), name="axes")])
    x2 = ctx.op("Reshape", [ctx.tensor(args["x2"], dtype), ctx.const(int64([-1]), name="flat")])
    found = ctx.op("Greater", [_count(ctx, "Equal", x1, x2, -1), ctx.const(np.array(0, np.int32), name="zero")])
    return ctx.op("Not", [found]) if args["invert"] else found
