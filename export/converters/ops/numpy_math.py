"""Converters of the elementwise arithmetic of ``keras.ops.numpy``: operators, powers, logs, trigonometry, rounding."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from export.builder import Value, onnx_dtype
from export.converters.ops.common import elementwise, elementwise_layout, is_float, operand, rank_of
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterFn, ConverterResult

register_composites(["log2", "log10", "exp2", "cbrt", "deg2rad", "rad2deg", "fabs", "hypot", "logaddexp",
                     "logaddexp2", "sinc", "divide_no_nan", "ldexp", "fmax", "fmin", "nan_to_num"])

unexportable("gcd", "ONNX has no greatest common divisor (Euclid's loop per element)")
unexportable("lcm", "ONNX has no least common multiple (Euclid's loop per element)")
unexportable("nextafter", "ONNX cannot step to the adjacent float (it has no bit reinterpretation)")
unexportable("i0", "ONNX has no Bessel functions")


def _binary(op_type):
    """A converter applying ``op_type`` to ``x1`` and ``x2`` cast to the output dtype."""
    def convert(ctx):
        args = ctx.arguments
        return elementwise(ctx, op_type, [args["x1"], args["x2"]])
    convert.__doc__ = f"One {op_type} node over both operands cast to the output dtype."
    return convert


for _name, _op_type in {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "true_divide": "Div",
                        "power": "Pow", "maximum": "Max", "minimum": "Min"}.items():
    op_converter(_name, opset=13)(_binary(_op_type))


def _unary_input(ctx, dtype=None):
    """Input 0 as it is laid out, cast to ``dtype`` (default: the output dtype)."""
    return ctx.input(0, layout=None, dtype=dtype or ctx.output_dtype())


def unary(*op_types: str, float32_only: bool = False) -> ConverterFn:
    """A converter applying the chain ``op_types`` to the input cast to the output dtype, keeping its layout."""
    # float32_only: onnxruntime has float32 kernels only (Erf); other dtypes compute in float32.
    def convert(ctx):
        dtype = "float32" if float32_only else None
        y = _unary_input(ctx, dtype)
        for op_type in op_types:
            y = ctx.op(op_type, [y])
        if float32_only and np.dtype(ctx.output_dtype()) != np.float32:
            y = ctx.op("Cast", [y], to=onnx_dtype(ctx.output_dtype()))
        return Value(y, ctx.layout(0))
    convert.__doc__ = f"{' then '.join(op_types)} on the input cast to the output dtype."
    return convert


for _name, _op_types in {"negative": ["Neg"], "abs": ["Abs"], "absolute": ["Abs"], "exp": ["Exp"], "log": ["Log"],
                         "sqrt": ["Sqrt"], "reciprocal": ["Reciprocal"], "sign": ["Sign"], "sin": ["Sin"],
                         "cos": ["Cos"], "tan": ["Tan"], "arcsin": ["Asin"], "arccos": ["Acos"], "arctan": ["Atan"],
                         "sinh": ["Sinh"], "cosh": ["Cosh"], "tanh": ["Tanh"], "arcsinh": ["Asinh"],
                         "arccosh": ["Acosh"], "arctanh": ["Atanh"]}.items():
    op_converter(_name, opset=13)(unary(*_op_types))


def _integer_preserving(op_type):
    """A converter for floor/ceil: ``op_type`` on floats; integers are already whole (a Cast at most)."""
    def convert(ctx):
        y = _unary_input(ctx)
        if is_float(ctx.input_dtype()):
            y = ctx.op(op_type, [y])
        return Value(y, ctx.layout(0))
    convert.__doc__ = f"{op_type} of a float input; an integer input as it is."
    return convert


op_converter("floor", opset=13)(_integer_preserving("Floor"))
op_converter("ceil", opset=13)(_integer_preserving("Ceil"))


@op_converter("trunc", opset=13)
def convert_trunc(ctx: ConversionContext) -> ConverterResult:
    """Floor of non-negative floats, Ceil of negative ones; integers as they are."""
    x = ctx.input(0, layout=None, dtype=ctx.output_dtype())
    if is_float(ctx.output_dtype()):
        negative = ctx.op("Less", [x, ctx.const(0, dtype=ctx.output_dtype(), name="zero")])
        x = ctx.op("Where", [negative, ctx.op("Ceil", [x]), ctx.op("Floor", [x])])
    return Value(x, ctx.layout(0))


@op_converter("round", opset=13)
def convert_round(ctx: ConversionContext) -> ConverterResult:
    """Round half to even, at ``decimals`` places by scaling as NumPy does; integers with decimals >= 0 unchanged."""
    decimals = int(ctx.arguments["decimals"])
    dtype = np.dtype(ctx.output_dtype())
    if not is_float(dtype) and decimals >= 0:
        return Value(_unary_input(ctx), ctx.layout(0))
    work = dtype if is_float(dtype) else np.dtype("float64")
    y = _unary_input(ctx, work)
    if decimals == 0:
        y = ctx.op("Round", [y])
    else:
        scale = ctx.const(10.0 ** abs(decimals), dtype=work, name="scale")
        first, second = ("Mul", "Div") if decimals > 0 else ("Div", "Mul")
        y = ctx.op(second, [ctx.op("Round", [ctx.op(first, [y, scale])]), scale])
    if work != dtype:
        y = ctx.op("Cast", [y], to=onnx_dtype(dtype))
    return Value(y, ctx.layout(0))


@op_converter("square", opset=13)
def convert_square(ctx: ConversionContext) -> ConverterResult:
    """``x * x``."""
    x = _unary_input(ctx)
    return Value(ctx.op("Mul", [x, x]), ctx.layout(0))


@op_converter("expm1", opset=13)
def convert_expm1(ctx: ConversionContext) -> ConverterResult:
    """``exp(x) - 1`` (absolute error of float rounding near 0, as ONNX has no Expm1)."""
    x = _unary_input(ctx)
    return Value(ctx.op("Sub", [ctx.op("Exp", [x]), ctx.const(1, dtype=ctx.output_dtype(), name="one")]),
                 ctx.layout(0))


@op_converter("log1p", opset=13)
def convert_log1p(ctx: ConversionContext) -> ConverterResult:
    """``log(1 + x)`` (absolute error of float rounding near 0, as ONNX has no Log1p)."""
    x = _unary_input(ctx)
    return Value(ctx.op("Log", [ctx.op("Add", [x, ctx.const(1, dtype=ctx.output_dtype(), name="one")])]),
                 ctx.layout(0))


@op_converter("floor_divide", opset=13)
def convert_floor_divide(ctx: ConversionContext) -> ConverterResult:
    """``x1 // x2``: Floor(Div) on floats; on integers ``(x1 - x1 mod x2) / x2``, exact where Div truncates."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    dtype = ctx.output_dtype()
    x1, x2 = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    if is_float(dtype):
        return Value(ctx.op("Floor", [ctx.op("Div", [x1, x2])]), layout)
    return Value(ctx.op("Div", [ctx.op("Sub", [x1, ctx.op("Mod", [x1, x2], fmod=0)]), x2]), layout)


@op_converter("mod", opset=13)
def convert_mod(ctx: ConversionContext) -> ConverterResult:
    """``x1 % x2`` with the divisor's sign: Mod on integers; on floats fmod moved by ``x2`` where signs differ."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    dtype = ctx.output_dtype()
    x1, x2 = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    if not is_float(dtype):
        return Value(ctx.op("Mod", [x1, x2], fmod=0), layout)
    # ONNX Mod on floats is C's fmod (the dividend's sign); NumPy adds x2 where the remainder's sign differs.
    rem = ctx.op("Mod", [x1, x2], fmod=1)
    differs = ctx.op("Less", [ctx.op("Mul", [rem, x2]), ctx.const(0, dtype=dtype, name="zero")])
    return Value(ctx.op("Where", [differs, ctx.op("Add", [rem, x2]), rem]), layout)


@op_converter("fmod", opset=13)
def convert_fmod(ctx: ConversionContext) -> ConverterResult:
    """Mod with fmod=1 (the dividend's sign), as C's fmod; integers too."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    x1, x2 = (operand(ctx, args[k], ctx.output_dtype(), layout) for k in ("x1", "x2"))
    return Value(ctx.op("Mod", [x1, x2], fmod=1), layout)


@op_converter("arctan2", opset=13)
def convert_arctan2(ctx: ConversionContext) -> ConverterResult:
    """Atan of ``x1 / x2`` moved by pi (with the sign of ``x1``) where ``x2 < 0``; 0 at the origin as NumPy."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    dtype = ctx.output_dtype()
    y, x = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    zero, pi = ctx.const(0, dtype=dtype, name="zero"), ctx.const(math.pi, dtype=dtype, name="pi")
    atan = ctx.op("Atan", [ctx.op("Div", [y, x])])
    # y / 0 is +-inf (Atan: +-pi/2) except at the origin, where it is NaN.
    atan = ctx.op("Where", [ctx.op("IsNaN", [atan]), zero, atan])
    sign = ctx.op("Where", [ctx.op("Less", [y, zero]), ctx.op("Neg", [pi]), pi])
    shift = ctx.op("Where", [ctx.op("Less", [x, zero]), sign, zero])
    return Value(ctx.op("Add", [atan, shift]), layout)


@op_converter("heaviside", opset=13)
def convert_heaviside(ctx: ConversionContext) -> ConverterResult:
    """0 below zero, ``x2`` at zero, 1 above."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    dtype = ctx.output_dtype()
    x1, x2 = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    zero, one = ctx.const(0, dtype=dtype, name="zero"), ctx.const(1, dtype=dtype, name="one")
    step = ctx.op("Where", [ctx.op("Greater", [x1, zero]), one, zero])
    return Value(ctx.op("Where", [ctx.op("Equal", [x1, zero]), ctx.op("Add", [zero, x2]), step]), layout)


@op_converter("clip", opset=13)
def convert_clip(ctx: ConversionContext) -> ConverterResult:
    """Clip with scalar bounds; Max then Min (NumPy's order: ``x_max`` wins) for tensor or array bounds."""
    args = ctx.arguments
    values = [args["x"], args["x_min"], args["x_max"]]
    layout = elementwise_layout(ctx, [v for v in values if v is not None])
    dtype = ctx.output_dtype()
    x, lo, hi = (None if v is None else operand(ctx, v, dtype, layout) for v in values)
    if all(v is None or rank_of(v) == 0 for v in values[1:]):
        return Value(ctx.op("Clip", [x, lo or "", hi or ""]), layout)
    if lo is not None:
        x = ctx.op("Max", [x, lo])
    return Value(x if hi is None else ctx.op("Min", [x, hi]), layout)
