"""Converters of ``kgraph.ops`` op nodes: the helpers they share, and the public ops that have none.

The converters live by family: ``ops_math`` (elementwise), ``ops_linalg``,
``ops_nn`` (activations, normalization), ``ops_reduce``, ``ops_shape``,
``ops_index`` (``x[key]``) and ``ops_conv``. Each reads the call's arguments
by name (``ctx.arguments``) and computes what the eager NumPy function
computes, NumPy's dtype rules included: operands are cast to the dtype of the
op node's output.
"""
import numpy as np

from kgraph import KerasTensor, Variable

from export.builder import NATIVE, Value
from export.converters.merging import common_layout

INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max

# Public ops with no converter, and why. The registry test fails for a public op neither converted nor listed.
UNEXPORTABLE = {
    # Functions of shapes and numbers: they return Python values or constants and never record a node.
    "shape": "returns a tuple of Python ints (None for unknown sizes), never a tensor",
    "ndim": "returns a Python int",
    "convert_to_numpy": "returns a NumPy array; a KerasTensor has no value to convert",
    "convert_to_tensor": "returns its KerasTensor argument itself (or records `cast` for another dtype)",
    "zeros": "takes a shape, not a tensor: the result is a constant",
    "ones": "takes a shape, not a tensor: the result is a constant",
    "eye": "takes sizes, not tensors: the result is a constant",
    "full": "its shape is fixed: a tensor fill value (with a batch axis) does not broadcast to it, so no graph has it",
    # A symbolic bound gives an output whose length depends on tensor values.
    "arange": "with a tensor bound its output length depends on the tensor's values",
    # Recurrent steps over a precomputed projection: the recurrent layers' converters emit ONNX RNN/GRU/LSTM.
    "simple_rnn": "a step loop recorded by SimpleRNN, whose layer converter emits ONNX RNN",
    "gru": "a step loop recorded by GRU, whose layer converter emits ONNX GRU",
    "lstm": "a step loop recorded by LSTM, whose layer converter emits ONNX LSTM",
}


def int64(values):
    """An int64 array of ``values`` (for shape, axes and index constants)."""
    return np.array(values, dtype=np.int64)


def axes_of(axis, rank):
    """Sorted non-negative axes for ``axis`` (an int, a sequence, or None for all)."""
    if axis is None:
        return list(range(rank))
    items = axis if isinstance(axis, (tuple, list)) else [axis]
    return sorted(int(a) % rank for a in items)


def dtype_of(value):
    """What NumPy's promotion sees of an op argument: a dtype, or the Python scalar itself (weakly typed)."""
    if isinstance(value, (KerasTensor, Variable)):
        return np.dtype(value.dtype)
    if isinstance(value, (bool, int, float)):
        return value
    return np.asarray(value).dtype


def common_dtype(*values):
    """The dtype NumPy computes ``values`` in (Python scalars adapt to the arrays' dtypes)."""
    return np.result_type(*[dtype_of(v) for v in values])


def rank_of(value):
    """The rank of an op argument (a KerasTensor, a Variable or a constant)."""
    shape = getattr(value, "shape", None)
    return len(shape) if shape is not None else np.ndim(value)


def is_float(dtype):
    """Whether ``dtype`` is a floating-point dtype."""
    return np.issubdtype(np.dtype(dtype), np.floating)


def operand(ctx, value, dtype=None, layout=NATIVE):
    """ONNX name of an op argument in ``layout`` (a KerasTensor input) or native (a weight or constant)."""
    if isinstance(value, KerasTensor):
        for i, t in enumerate(ctx.node.input_tensors):
            if t is value:
                return ctx.input(i, layout, dtype)
    return ctx.tensor(value, dtype)


def elementwise_layout(ctx, values):
    """The layout an elementwise op over ``values`` can run in: the inputs' common one if constants are scalars."""
    constants = [v for v in values if not isinstance(v, KerasTensor)]
    if any(rank_of(v) for v in constants):
        return NATIVE
    return common_layout(ctx)


def elementwise(ctx, op_type, values, dtype=None):
    """One ``op_type`` node over ``values`` cast to ``dtype`` (default: the output dtype), in a common layout."""
    layout = elementwise_layout(ctx, values)
    names = [operand(ctx, v, dtype or ctx.output_dtype(), layout) for v in values]
    return Value(ctx.op(op_type, names), layout)


def folded(ctx, value, dtype, transform, variant):
    """A weight or constant argument re-laid out by ``transform`` at export: one initializer, no node."""
    if isinstance(value, KerasTensor):
        raise ctx.error(f"a {variant} computed from tensors is not supported; expected a weight or a constant")
    if isinstance(value, Variable):
        return ctx.weight(value, transform=lambda v: transform(np.asarray(v, dtype=dtype)), variant=variant)
    return ctx.const(transform(np.asarray(value, dtype=dtype)), name=variant)


def reduce(ctx, op_type, x, axes, keepdims):
    """One ``op_type`` reduction over ``axes`` (None: all); axes are an input from opset 18 (ReduceSum: 13)."""
    if axes is not None and not axes:  # NumPy reduces over no axis; ONNX would read empty axes as all of them
        return x
    if axes is None:
        return ctx.op(op_type, [x], keepdims=int(keepdims))
    if op_type == "ReduceSum" or ctx.opset >= 18:
        return ctx.op(op_type, [x, ctx.const(int64(axes), name="axes")], keepdims=int(keepdims))
    return ctx.op(op_type, [x], axes=list(axes), keepdims=int(keepdims))


def reshape(ctx, x, shape):
    """Reshape ``x`` to a Keras ``shape``: known sizes written out, the one unknown size (if any) as -1."""
    if sum(d is None for d in shape) > 1:
        raise ctx.error(f"its output shape {tuple(shape)} has more than one unknown size; a reshape can "
                        "infer one")
    return ctx.op("Reshape", [x, ctx.const(int64([-1 if d is None else d for d in shape]), name="shape")])


def flatten(ctx, x):
    """``x`` as one dimension."""
    return ctx.op("Reshape", [x, ctx.const(int64([-1]), name="flat")])
