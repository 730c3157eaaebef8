"""Converters of ``kgraph.ops.core_extra``: segment reductions as ScatterND; Python control flow stays eager."""
import numpy as np

from export.converters.ops import UNEXPORTABLE, int64
from export.converters.ops_extra import register_composites
from export.registry import op_converter

register_composites(["cdist", "extract_sequences", "saturate_cast"])

_PYTHON = "calls a Python function on values at each step or branch, which an ONNX graph cannot carry"
UNEXPORTABLE.update({
    "cond": _PYTHON, "switch": _PYTHON, "fori_loop": _PYTHON, "while_loop": _PYTHON, "scan": _PYTHON,
    "associative_scan": _PYTHON, "map": _PYTHON, "vectorized_map": _PYTHON, "vectorize": _PYTHON,
    "view": "ONNX cannot reinterpret a tensor's bytes as another dtype",
    "custom_gradient": "a decorator: it returns a function, never a tensor",
    "dtype": "returns a dtype name", "is_tensor": "returns a Python bool",
    "i0": "ONNX has no Bessel functions",
    "ctc_loss": "a recursion over time and each sequence's own label lattice, run in NumPy; ONNX has no CTC op",
    "ctc_decode": "returns NumPy arrays decoded eagerly (the decoded lengths depend on the values)",
})


def _segment(reduction, fill):
    def convert(ctx):
        args = ctx.arguments
        if args["num_segments"] is None:
            raise ctx.error("num_segments=None takes the count from the segment ids' values; pass num_segments")
        rest = ctx.input_shape(0)[1:]
        if None in rest:
            raise ctx.error(f"the rows of data must have a known shape. Received: {ctx.input_shape(0)}")
        dtype = np.dtype(ctx.output_dtype())
        value = fill(dtype)
        start = ctx.const(np.full((int(args["num_segments"]),) + tuple(rest), value, dtype=dtype), name="init")
        ids = ctx.op("Unsqueeze", [ctx.tensor(args["segment_ids"], "int64"), ctx.const(int64([-1]), name="axes")])
        return ctx.op("ScatterND", [start, ids, ctx.input(0)], reduction=reduction)
    convert.__doc__ = f"ScatterND with reduction={reduction!r} into a constant of the empty segments' value."
    return convert


op_converter("segment_sum", opset=16)(_segment("add", lambda d: 0))
op_converter("segment_prod", opset=16)(_segment("mul", lambda d: 1))
op_converter("segment_max", opset=18)(_segment("max", lambda d: -np.inf if d.kind == "f" else np.iinfo(d).min))
op_converter("segment_min", opset=18)(_segment("min", lambda d: np.inf if d.kind == "f" else np.iinfo(d).max))
