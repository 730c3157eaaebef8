"""Helpers shared by the op converters: constants, axes, NumPy's dtype rules, operands, layouts, reductions."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, Value
from export.converters.layers.merging import common_layout
from kgraph import KerasTensor, Variable

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import numpy.typing as npt

    from export.builder import Layout
    from export.context import ConversionContext

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max


def int64(values: npt.ArrayLike) -> np.ndarray:
    """An int64 array of ``values`` (for shape, axes and index constants)."""
    return np.array(values, dtype=np.int64)


def axes_of(axis: int | Sequence[int] | None, rank: int) -> list[int]:
    """Sorted non-negative axes for ``axis`` (an int, a sequence, or None for all)."""
    if axis is None:
        return list(range(rank))
    items = axis if isinstance(axis, (tuple, list)) else [axis]
    return sorted(int(a) % rank for a in items)


def dtype_of(value: Any) -> np.dtype | bool | int | float:
    """What NumPy's promotion sees of an op argument: a dtype, or the Python scalar itself (weakly typed)."""
    if isinstance(value, (KerasTensor, Variable)):
        return np.dtype(value.dtype)
    if isinstance(value, (bool, int, float)):
        return value
    return np.asarray(value).dtype


def common_dtype(*values: Any) -> np.dtype:
    """The dtype NumPy computes ``values`` in (Python scalars adapt to the arrays' dtypes)."""
    return np.result_type(*[dtype_of(v) for v in values])


def rank_of(value: Any) -> int:
    """The rank of an op argument (a KerasTensor, a Variable or a constant)."""
    shape = getattr(value, "shape", None)
    return len(shape) if shape is not None else np.ndim(value)


def is_float(dtype: npt.DTypeLike) -> bool:
    """Whether ``dtype`` is a floating-point dtype."""
    return np.issubdtype(np.dtype(dtype), np.floating)


def operand(ctx: ConversionContext, value: Any, dtype: npt.DTypeLike | None = None, layout: Layout = NATIVE) -> str:
    """ONNX name of an op argument in ``layout`` (a KerasTensor input) or native (a weight or constant)."""
    if isinstance(value, KerasTensor):
        for i, t in enumerate(ctx.node.input_tensors):
            if t is value:
                return ctx.input(i, layout, dtype)
    return ctx.tensor(value, dtype)


def elementwise_layout(ctx: ConversionContext, values: Sequence[Any]) -> Layout:
    """The layout an elementwise op over ``values`` can run in: the inputs' common one if constants are scalars."""
    constants = [v for v in values if not isinstance(v, KerasTensor)]
    if any(rank_of(v) for v in constants):
        return NATIVE
    return common_layout(ctx)


def elementwise(ctx: ConversionContext, op_type: str, values: Sequence[Any],
                dtype: npt.DTypeLike | None = None) -> Value:
    """One ``op_type`` node over ``values`` cast to ``dtype`` (default: the output dtype), in a common layout."""
    layout = elementwise_layout(ctx, values)
    names = [operand(ctx, v, dtype or ctx.output_dtype(), layout) for v in values]
    return Value(ctx.op(op_type, names), layout)


def folded(ctx: ConversionContext, value: Any, dtype: npt.DTypeLike, transform: Callable[[np.ndarray], npt.ArrayLike],
           variant: str) -> str:
    """A weight or constant argument re-laid out by ``transform`` at export: one initializer, no node."""
    if isinstance(value, KerasTensor):
        raise ctx.error(f"a {variant} computed from tensors is not supported; expected a weight or a constant")
    if isinstance(value, Variable):
        return ctx.weight(value, transform=lambda v: transform(np.asarray(v, dtype=dtype)), variant=variant)
    return ctx.const(transform(np.asarray(value, dtype=dtype)), name=variant)


def reduce(ctx: ConversionContext, op_type: str, x: str, axes: Sequence[int] | None, keepdims: bool) -> str:
    """One ``op_type`` reduction over ``axes`` (None: all); axes are an input from opset 18 (ReduceSum: 13)."""
    if axes is not None and not axes:  # NumPy reduces over no axis; ONNX would read empty axes as all of them
        return x
    if axes is None:
        return ctx.op(op_type, [x], keepdims=int(keepdims))
    if op_type == "ReduceSum" or ctx.opset >= 18:
        return ctx.op(op_type, [x, ctx.const(int64(axes), name="axes")], keepdims=int(keepdims))
    return ctx.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))


def reshape(ctx: ConversionContext, x: str, shape: Sequence[int | None]) -> str:
    """Reshape ``x`` to a Keras ``shape``: known sizes written out, the one unknown size (if any) as -1."""
    if sum(d is None for d in shape) > 1:
        raise ctx.error(f"its output shape {tuple(shape)} has more than one unknown size; a reshape can "
                        "infer one")
    return ctx.op("Reshape", [x, ctx.const(int64([-1 if d is None else d for d in shape]), name="shape")])


def flatten(ctx: ConversionContext, x: str) -> str:
    """``x`` as one dimension."""
    return ctx.op("Reshape", [x, ctx.const(int64([-1]), name="flat")])
