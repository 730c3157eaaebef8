"""Converters of the elementwise, comparison and ``*_like`` ops of ``kgraph.ops``."""
import numpy as np

from export.builder import Value, onnx_dtype
from export.converters.ops import common_dtype, elementwise, elementwise_layout, is_float, operand, rank_of
from export.registry import op_converter


def _binary(op_type, dtype=None):
    """A converter applying ``op_type`` to ``x1`` and ``x2`` cast to ``dtype`` (default: the output dtype)."""
    def convert(ctx):
        args = ctx.arguments
        return elementwise(ctx, op_type, [args["x1"], args["x2"]], dtype=dtype)
    convert.__doc__ = f"One {op_type} node over both operands cast to {dtype or 'the output dtype'}."
    return convert


for _name, _op_type in {"add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "Div", "true_divide": "Div",
                        "power": "Pow", "maximum": "Max", "minimum": "Min"}.items():
    op_converter(_name, opset=13)(_binary(_op_type))


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
op_converter("logical_and", opset=13)(_binary("And", dtype="bool"))
op_converter("logical_or", opset=13)(_binary("Or", dtype="bool"))


def _unary_input(ctx, dtype=None):
    """Input 0 as it is laid out, cast to ``dtype`` (default: the output dtype)."""
    return ctx.input(0, layout=None, dtype=dtype or ctx.output_dtype())


def _unary(*op_types, float32_only=False):
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
                         "sqrt": ["Sqrt"], "rsqrt": ["Sqrt", "Reciprocal"], "reciprocal": ["Reciprocal"],
                         "sign": ["Sign"], "sin": ["Sin"], "cos": ["Cos"], "tanh": ["Tanh"]}.items():
    op_converter(_name, opset=13)(_unary(*_op_types))
op_converter("erf", opset=13)(_unary("Erf", float32_only=True))


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


@op_converter("square", opset=13)
def convert_square(ctx):
    """``x * x``."""
    x = _unary_input(ctx)
    return Value(ctx.op("Mul", [x, x]), ctx.layout(0))


@op_converter("expm1", opset=13)
def convert_expm1(ctx):
    """``exp(x) - 1`` (absolute error of float rounding near 0, as ONNX has no Expm1)."""
    x = _unary_input(ctx)
    return Value(ctx.op("Sub", [ctx.op("Exp", [x]), ctx.const(1, dtype=ctx.output_dtype(), name="one")]),
                 ctx.layout(0))


@op_converter("log1p", opset=13)
def convert_log1p(ctx):
    """``log(1 + x)`` (absolute error of float rounding near 0, as ONNX has no Log1p)."""
    x = _unary_input(ctx)
    return Value(ctx.op("Log", [ctx.op("Add", [x, ctx.const(1, dtype=ctx.output_dtype(), name="one")])]),
                 ctx.layout(0))


@op_converter("round", opset=13)
def convert_round(ctx):
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


@op_converter("floor_divide", opset=13)
def convert_floor_divide(ctx):
    """``x1 // x2``: Floor(Div) on floats; on integers ``(x1 - x1 mod x2) / x2``, exact where Div truncates."""
    args = ctx.arguments
    layout = elementwise_layout(ctx, [args["x1"], args["x2"]])
    dtype = ctx.output_dtype()
    x1, x2 = (operand(ctx, args[k], dtype, layout) for k in ("x1", "x2"))
    if is_float(dtype):
        return Value(ctx.op("Floor", [ctx.op("Div", [x1, x2])]), layout)
    return Value(ctx.op("Div", [ctx.op("Sub", [x1, ctx.op("Mod", [x1, x2], fmod=0)]), x2]), layout)


@op_converter("mod", opset=13)
def convert_mod(ctx):
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


@op_converter("logical_not", opset=13)
def convert_logical_not(ctx):
    """Not of the input as booleans."""
    return Value(ctx.op("Not", [_unary_input(ctx, "bool")]), ctx.layout(0))


@op_converter("isnan", opset=13)
def convert_isnan(ctx):
    """IsNaN of a float input; an integer input is never NaN."""
    x = ctx.input(0, layout=None)
    if is_float(ctx.input_dtype()):
        return Value(ctx.op("IsNaN", [x]), ctx.layout(0))
    return Value(ctx.op("Not", [ctx.op("Equal", [x, x])]), ctx.layout(0))


@op_converter("isfinite", opset=13)
def convert_isfinite(ctx):
    """Neither NaN nor infinite; an integer input is always finite."""
    x = ctx.input(0, layout=None)
    if is_float(ctx.input_dtype()):
        y = ctx.op("Not", [ctx.op("Or", [ctx.op("IsNaN", [x]), ctx.op("IsInf", [x])])])
    else:
        y = ctx.op("Equal", [x, x])
    return Value(y, ctx.layout(0))


@op_converter("where", opset=13)
def convert_where(ctx):
    """Where of the condition as booleans over both branches cast to the output dtype."""
    args = ctx.arguments
    if args["x1"] is None and args["x2"] is None:
        raise ctx.error("where(condition) with one argument returns indices whose number depends on tensor values")
    values = [args["condition"], args["x1"], args["x2"]]
    layout = elementwise_layout(ctx, values)
    cond = operand(ctx, args["condition"], "bool", layout)
    x1, x2 = (operand(ctx, args[k], ctx.output_dtype(), layout) for k in ("x1", "x2"))
    return Value(ctx.op("Where", [cond, x1, x2]), layout)


@op_converter("clip", opset=13)
def convert_clip(ctx):
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


@op_converter("cast", opset=13)
def convert_cast(ctx):
    """Cast to the dtype asked for; no node when the input has it already."""
    return Value(_unary_input(ctx), ctx.layout(0))


@op_converter("stop_gradient", opset=13)
def convert_stop_gradient(ctx):
    """The input itself (gradients do not exist at inference): no node."""
    return Value(ctx.input(0, layout=None), ctx.layout(0))


def _filled_like(ctx, x, fill):
    """``fill`` (a name, broadcastable) expanded to the shape of the tensor ``x``."""
    return ctx.op("Expand", [fill, ctx.op("Shape", [operand(ctx, x)])])


@op_converter("zeros_like", opset=13)
def convert_zeros_like(ctx):
    """Zeros of the output dtype expanded to the input's shape."""
    return _filled_like(ctx, ctx.arguments["x"], ctx.const(0, dtype=ctx.output_dtype(), name="zero"))


@op_converter("ones_like", opset=13)
def convert_ones_like(ctx):
    """Ones of the output dtype expanded to the input's shape."""
    return _filled_like(ctx, ctx.arguments["x"], ctx.const(1, dtype=ctx.output_dtype(), name="one"))


@op_converter("full_like", opset=13)
def convert_full_like(ctx):
    """``fill_value`` (a number or a tensor) in the output dtype expanded to the input's shape."""
    args = ctx.arguments
    return _filled_like(ctx, args["x"], ctx.tensor(args["fill_value"], ctx.output_dtype()))
