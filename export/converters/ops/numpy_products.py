"""Converters of the matrix and tensor products of ``keras.ops.numpy``: matmul, einsum, slogdet; the rest by tracing."""
from __future__ import annotations

import string
from typing import TYPE_CHECKING

from export.converters.ops.common import int64
from export.converters.ops.composite import register_composites
from export.registry import op_converter

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["tensordot", "dot", "inner", "outer", "vdot", "kron", "cross", "correlate"])


@op_converter("matmul", opset=13)
def convert_matmul(ctx: ConversionContext) -> ConverterResult:
    """MatMul (NumPy's matmul semantics, 1-D operands included) of both operands cast to the output dtype."""
    args = ctx.arguments
    dtype = ctx.output_dtype()
    return ctx.op("MatMul", [ctx.tensor(args["x1"], dtype), ctx.tensor(args["x2"], dtype)])


def _einsum_equation(subscripts):
    """``subscripts`` with an explicit output, its letters renamed to lowercase (what ONNX Einsum accepts)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    if not arrow:
        # NumPy's implicit output: the ellipsis dims, then the letters used once, in alphabetical order.
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c in set(letters)
                                                                      if letters.count(c) == 1))
    used = list(dict.fromkeys(c for c in inputs + output if c.isalpha()))
    if len(used) > 26:
        raise ValueError(f"einsum uses {len(used)} letters; ONNX Einsum accepts 26")
    rename = dict(zip(used, string.ascii_lowercase))
    return "".join(rename.get(c, c) for c in f"{inputs}->{output}")


def _transposed(ctx, x, letters, order):
    """``x`` (axes named by ``letters``) with its axes in ``order``; no node when they are already."""
    perm = [letters.index(c) for c in order]
    return x if perm == sorted(perm) else ctx.op("Transpose", [x], perm=perm)


def _as_matmul(ctx, equation, names):
    """A two-operand einsum that is a (batched) matrix product as MatMul between Transposes, or None."""
    # onnxruntime's Einsum divides by zero (SIGFPE) on a 0-row batched product; its MatMul does not.
    inputs, output = equation.split("->")
    subs = inputs.split(",")
    if len(subs) != 2 or "." in equation or any(len(set(s)) != len(s) for s in subs + [output]):
        return None
    a, b = subs
    batch = [c for c in output if c in a and c in b]
    contracted = [c for c in a if c in b and c not in output]
    rows, cols = [c for c in a if c not in b], [c for c in b if c not in a]
    if max(len(contracted), len(rows), len(cols)) > 1 or set(output) != set(batch + rows + cols):
        return None
    # Missing rows, columns or contracted axis become axes of size 1: x is (batch, M, K), y (batch, K, N).
    x = _transposed(ctx, names[0], a, batch + rows + contracted)
    y = _transposed(ctx, names[1], b, batch + contracted + cols)
    x_units = [len(batch)] * (not rows) + [len(batch) + 1] * (not contracted)
    y_units = [len(batch)] * (not contracted) + [len(batch) + 1] * (not cols)
    if x_units:
        x = ctx.op("Unsqueeze", [x, ctx.const(int64(x_units), name="axes")])
    if y_units:
        y = ctx.op("Unsqueeze", [y, ctx.const(int64(y_units), name="axes")])
    z = ctx.op("MatMul", [x, y])
    units = [len(batch)] * (not rows) + [len(batch) + 1] * (not cols)
    if units:
        z = ctx.op("Squeeze", [z, ctx.const(int64(units), name="axes")])
    return _transposed(ctx, z, "".join(batch + rows + cols), output)


@op_converter("einsum", opset=13)
def convert_einsum(ctx: ConversionContext) -> ConverterResult:
    """A (batched) matrix product as MatMul; otherwise ONNX Einsum with NumPy's equation, output made explicit."""
    args = ctx.arguments
    try:
        equation = _einsum_equation(args["subscripts"])
    except ValueError as err:
        raise ctx.error(str(err)) from None
    names = [ctx.tensor(o, ctx.output_dtype()) for o in args["operands"]]
    return _as_matmul(ctx, equation, names) or ctx.op("Einsum", names, equation=equation)


@op_converter("slogdet", opset=13)
def convert_slogdet(ctx: ConversionContext) -> ConverterResult:
    """Sign and log of the absolute value of Det (it overflows where NumPy's LU-based form would not)."""
    d = ctx.op("Det", [ctx.input(0, dtype=ctx.output_dtype())])
    return [ctx.op("Sign", [d]), ctx.op("Log", [ctx.op("Abs", [d])])]
