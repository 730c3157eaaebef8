"""Converters of the comparisons, logical and bitwise ops, value tests and ``where`` of ``keras.ops.numpy``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from export.builder import Value
from export.converters.ops.common import common_dtype, elementwise, elementwise_layout, is_float, operand
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["select"])

_UNSIGNED = "ONNX BitShift shifts unsigned integers only"
for _name in ("left_shift", "right_shift"):
    unexportable(_name, f"{_UNSIGNED}; NumPy's shift of signed integers is arithmetic")
for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    unexportable(_name, _UNSIGNED)


def _compare(op_type, negate=False):
    """A converter comparing ``x1`` and ``x2`` in their common dtype (``negate``: the opposite answer)."""
    def convert(ctx):
        args = ctx.arguments
        x1, x2 = args["x1"], args["x2"]
        y = elementwise(ctx, op_type, [x1, x2], dtype=common_dtype(x1, x2))
        return Value(ctx.op("Not", [y.name]), y.layout) if negate else y
    convert.__doc__ = f"{op_type} of both operands in NumPy's common dtype."
    return convert


for _name, _op_type in {"equal": "Equal", "greater": "Greater", "greater_equal": "GreaterOrEqual", "less": "Less",
                        "less_equal": "LessOrEqual"}.items():
    op_converter(_name, opset=13)(_compare(_op_type))
op_converter("not_equal", opset=13)(_compare("Equal", negate=True))


def _logical(op_type):
    """A converter applying ``op_type`` to ``x1`` and ``x2`` as booleans."""
    def convert(ctx):
        args = ctx.arguments
        return elementwise(ctx, op_type, [args["x1"], args["x2"]], dtype="bool")
    convert.__doc__ = f"{op_type} of both operands as booleans."
    return convert


for _name, _op_type in {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}.items():
    op_converter(_name, opset=13)(_logical(_op_type))


@op_converter("logical_not", opset=13)
def convert_logical_not(ctx: ConversionContext) -> ConverterResult:
    """Not of the input as booleans."""
    return Value(ctx.op("Not", [ctx.input(0, layout=None, dtype="bool")]), ctx.layout(0))


def _bitwise(op_type):
    def convert(ctx):
        args = ctx.arguments
        return elementwise(ctx, op_type, [args["x"], args["y"]])
    convert.__doc__ = f"{op_type} of both operands in the output dtype (opset 18)."
    return convert


for _name, _op_type in {"bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor"}.items():
    op_converter(_name, opset=18)(_bitwise(_op_type))


def convert_bitwise_not(ctx: ConversionContext) -> ConverterResult:
    """BitwiseNot of the input (opset 18); Not for booleans."""
    x = ctx.input(0, layout=None)
    return Value(ctx.op("Not" if ctx.input_dtype() == "bool" else "BitwiseNot", [x]), ctx.layout(0))


op_converter("bitwise_not", opset=18)(convert_bitwise_not)
op_converter("bitwise_invert", opset=18)(convert_bitwise_not)


@op_converter("isnan", opset=13)
def convert_isnan(ctx: ConversionContext) -> ConverterResult:
    """IsNaN of a float input; an integer input is never NaN."""
    x = ctx.input(0, layout=None)
    if is_float(ctx.input_dtype()):
        return Value(ctx.op("IsNaN", [x]), ctx.layout(0))
    return Value(ctx.op("Not", [ctx.op("Equal", [x, x])]), ctx.layout(0))


@op_converter("isfinite", opset=13)
def convert_isfinite(ctx: ConversionContext) -> ConverterResult:
    """Neither NaN nor infinite; an integer input is always finite."""
    x = ctx.input(0, layout=None)
    if is_float(ctx.input_dtype()):
        y = ctx.op("Not", [ctx.op("Or", [ctx.op("IsNaN", [x]), ctx.op("IsInf", [x])])])
    else:
        y = ctx.op("Equal", [x, x])
    return Value(y, ctx.layout(0))


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


@op_converter("signbit", opset=13)
def convert_signbit(ctx: ConversionContext) -> ConverterResult:
    """``x < 0``, or ``1 / x < 0`` for zeros (so -0.0 counts, as NumPy's sign bit)."""
    dtype = ctx.input_dtype()
    x = ctx.input(0, layout=None)
    zero = ctx.const(0, dtype=dtype, name="zero")
    y = ctx.op("Less", [x, zero])
    if is_float(dtype):
        y = ctx.op("Or", [y, ctx.op("Less", [ctx.op("Reciprocal", [x]), zero])])
    return Value(y, ctx.layout(0))


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
def convert_isclose(ctx: ConversionContext) -> ConverterResult:
    """``|x1 - x2| <= atol + rtol * |x2|`` (or equal), NaNs equal when asked."""
    close, layout = _isclose(ctx)
    return Value(close, layout)


@op_converter("allclose", opset=13)
def convert_allclose(ctx: ConversionContext) -> ConverterResult:
    """``isclose`` everywhere: the minimum of the answers as integers."""
    close, _ = _isclose(ctx)
    smallest = ctx.op("ReduceMin", [ctx.op("Cast", [close], to=6)], keepdims=0)
    return ctx.op("Cast", [smallest], to=9)


@op_converter("where", opset=13)
def convert_where(ctx: ConversionContext) -> ConverterResult:
    """Where of the condition as booleans over both branches cast to the output dtype."""
    args = ctx.arguments
    if args["x1"] is None and args["x2"] is None:
        raise ctx.error("where(condition) with one argument returns indices whose number depends on tensor values")
    values = [args["condition"], args["x1"], args["x2"]]
    layout = elementwise_layout(ctx, values)
    cond = operand(ctx, args["condition"], "bool", layout)
    x1, x2 = (operand(ctx, args[k], ctx.output_dtype(), layout) for k in ("x1", "x2"))
    return Value(ctx.op("Where", [cond, x1, x2]), layout)
