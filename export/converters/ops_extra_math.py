"""Converters of the elementwise ops of ``kgraph.ops.numpy_math``."""
import math

from export.builder import Value
from export.converters.ops import UNEXPORTABLE, common_dtype, elementwise, elementwise_layout, is_float, operand
from export.converters.ops_extra import register_composites
from export.registry import op_converter

register_composites(["log2", "log10", "exp2", "cbrt", "deg2rad", "rad2deg", "fabs", "erfc", "hypot", "logaddexp",
                     "logaddexp2", "sinc", "divide_no_nan", "ldexp", "fmax", "fmin", "nan_to_num"])

UNEXPORTABLE.update({
    "left_shift": "ONNX BitShift shifts unsigned integers only; NumPy's shift of signed integers is arithmetic",
    "right_shift": "ONNX BitShift shifts unsigned integers only; NumPy's shift of signed integers is arithmetic",
    "bitwise_left_shift": "ONNX BitShift shifts unsigned integers only",
    "bitwise_right_shift": "ONNX BitShift shifts unsigned integers only",
    "gcd": "ONNX has no greatest common divisor (Euclid's loop per element)",
    "lcm": "ONNX has no least common multiple (Euclid's loop per element)",
    "nextafter": "ONNX cannot step to the adjacent float (it has no bit reinterpretation)",
    "erfinv": "ONNX has no inverse error function (only Erf)",
})


def _unary(op_type):
    def convert(ctx):
        x = ctx.input(0, layout=None, dtype=ctx.output_dtype())
        return Value(ctx.op(op_type, [x]), ctx.layout(0))
    convert.__doc__ = f"{op_type} of the input in the output dtype."
    return convert


for _name, _op_type in {"arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "arcsinh": "Asinh",
                        "arccosh": "Acosh", "arctanh": "Atanh", "sinh": "Sinh", "cosh": "Cosh", "tan": "Tan"}.items():
    op_converter(_name, opset=13)(_unary(_op_type))


@op_converter("arctan2", opset=13)
def convert_arctan2(ctx):
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


@op_converter("fmod", opset=13)
def convert_fmod(ctx):
    """Mod with fmod=1 (the dividend's sign), as C's fmod; integers too."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    x1, x2 = (operand(ctx, args[k], ctx.output_dtype(), layout) for k in ("x1", "x2"))
    return Value(ctx.op("Mod", [x1, x2], fmod=1), layout)


@op_converter("trunc", opset=13)
def convert_trunc(ctx):
    """Floor of non-negative floats, Ceil of negative ones; integers as they are."""
    x = ctx.input(0, layout=None, dtype=ctx.output_dtype())
    if is_float(ctx.output_dtype()):
        negative = ctx.op("Less", [x, ctx.const(0, dtype=ctx.output_dtype(), name="zero")])
        x = ctx.op("Where", [negative, ctx.op("Ceil", [x]), ctx.op("Floor", [x])])
    return Value(x, ctx.layout(0))


@op_converter("signbit", opset=13)
def convert_signbit(ctx):
    """``x < 0``, or ``1 / x < 0`` for zeros (so -0.0 counts, as NumPy's sign bit)."""
    dtype = ctx.input_dtype()
    x = ctx.input(0, layout=None)
    zero = ctx.const(0, dtype=dtype, name="zero")
    y = ctx.op("Less", [x, zero])
    if is_float(dtype):
        y = ctx.op("Or", [y, ctx.op("Less", [ctx.op("Reciprocal", [x]), zero])])
    return Value(y, ctx.layout(0))


@op_converter("heaviside", opset=13)
def convert_heaviside(ctx):
    """0 below zero, ``x2`` at zero, 1 above."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    dtype = ctx.output_dtype()
    x1, x2 = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    zero, one = ctx.const(0, dtype=dtype, name="zero"), ctx.const(1, dtype=dtype, name="one")
    step = ctx.op("Where", [ctx.op("Greater", [x1, zero]), one, zero])
    return Value(ctx.op("Where", [ctx.op("Equal", [x1, zero]), ctx.op("Add", [zero, x2]), step]), layout)


def _isclose(ctx):
    args = ctx.arguments
    dtype = common_dtype(args["x1"], args["x2"])
    dtype = dtype if is_float(dtype) else "float64"
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    x1, x2 = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    bound = ctx.op("Add", [ctx.const(args["atol"], dtype=dtype, name="atol"),
                           ctx.op("Mul", [ctx.const(args["rtol"], dtype=dtype, name="rtol"), ctx.op("Abs", [x2])])])
    close = ctx.op("Or", [ctx.op("LessOrEqual", [ctx.op("Abs", [ctx.op("Sub", [x1, x2])]), bound]),
                          ctx.op("Equal", [x1, x2])])  # equal infinities are close
    if args["equal_nan"]:
        close = ctx.op("Or", [close, ctx.op("And", [ctx.op("IsNaN", [x1]), ctx.op("IsNaN", [x2])])])
    return close, layout


@op_converter("isclose", opset=13)
def convert_isclose(ctx):
    """``|x1 - x2| <= atol + rtol * |x2|`` (or equal), NaNs equal when asked."""
    close, layout = _isclose(ctx)
    return Value(close, layout)


@op_converter("allclose", opset=13)
def convert_allclose(ctx):
    """``isclose`` everywhere: the minimum of the answers as integers."""
    close, _ = _isclose(ctx)
    smallest = ctx.op("ReduceMin", [ctx.op("Cast", [close], to=6)], keepdims=0)
    return ctx.op("Cast", [smallest], to=9)


def _infinity(positive, negative):
    def convert(ctx):
        x = ctx.input(0, layout=None)
        if not is_float(ctx.input_dtype()):
            y = ctx.op("Not", [ctx.op("Equal", [x, x])])
        else:
            y = ctx.op("IsInf", [x], detect_positive=int(positive), detect_negative=int(negative))
        return Value(y, ctx.layout(0))
    convert.__doc__ = "IsInf of a float input; an integer input is never infinite."
    return convert


op_converter("isinf", opset=13)(_infinity(True, True))
op_converter("isposinf", opset=13)(_infinity(True, False))
op_converter("isneginf", opset=13)(_infinity(False, True))


@op_converter("logical_xor", opset=13)
def convert_logical_xor(ctx):
    """Xor of both operands as booleans."""
    args = ctx.arguments
    return elementwise(ctx, "Xor", [args["x1"], args["x2"]], dtype="bool")


def _bitwise(op_type):
    def convert(ctx):
        args = ctx.arguments
        return elementwise(ctx, op_type, [args["x"], args["y"]])
    convert.__doc__ = f"{op_type} of both operands in the output dtype (opset 18)."
    return convert


for _name, _op_type in {"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}.items():
    op_converter(_name, opset=18)(_bitwise(_op_type))


def convert_bitwise_not(ctx):
    """BitwiseNot of the input (opset 18); Not for booleans."""
    x = ctx.input(0, layout=None)
    return Value(ctx.op("Not" if ctx.input_dtype() == "bool" else "BitwiseNot", [x]), ctx.layout(0))


op_converter("bitwise_not", opset=18)(convert_bitwise_not)
op_converter("bitwise_invert", opset=18)(convert_bitwise_not)
