"""Converters of the complex-number ops of ``keras.ops`` on real inputs; ONNX Runtime has no complex tensors."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from export.builder import Value
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

# On a real input ``real`` and ``conj`` are the input, ``imag`` is zeros, ``isreal`` is true everywhere and
# ``angle`` is pi where the input is negative. A complex input (or a complex result) cannot be exported.
_NO_COMPLEX = "its {} complex, and ONNX Runtime has no complex tensors for these ops"
unexportable("polar", _NO_COMPLEX.format("output is"))
unexportable("view_as_complex", _NO_COMPLEX.format("output is"))
unexportable("view_as_real", _NO_COMPLEX.format("input is"))


def _real_input(ctx, dtype=None):
    """ONNX name of the op's input (in its current layout), refusing a complex one."""
    if np.dtype(ctx.input_dtype()).kind == "c":
        raise ctx.error(f"its input is {ctx.input_dtype()}, and ONNX Runtime has no complex tensors for "
                        f"'{ctx.layer.op_name}'; only real inputs export")
    return ctx.input(0, layout=None, dtype=dtype)


def _filled(ctx, value):
    """A tensor of the input's shape and layout holding ``value`` in the output dtype."""
    shape = ctx.op("Shape", [_real_input(ctx)])
    fill = ctx.const(np.asarray(value, dtype=ctx.output_dtype()), name="fill")
    return Value(ctx.op("Expand", [fill, shape]), ctx.layout(0))


def _convert_identity(ctx):
    """The real input itself (its real part, and its own conjugate)."""
    return Value(ctx.op("Identity", [_real_input(ctx)]), ctx.layout(0))


for _name in ("real", "conj", "conjugate"):
    op_converter(_name, opset=13)(_convert_identity)


@op_converter("imag", opset=13)
def convert_imag(ctx: ConversionContext) -> ConverterResult:
    """Zeros of the real input's shape and dtype."""
    return _filled(ctx, 0)


@op_converter("isreal", opset=13)
def convert_isreal(ctx: ConversionContext) -> ConverterResult:
    """True for every element of the real input."""
    return _filled(ctx, True)


@op_converter("angle", opset=13)
def convert_angle(ctx: ConversionContext) -> ConverterResult:
    """Pi where the real input (in the output's float dtype) is negative, else 0; NaN stays NaN."""
    dtype = ctx.output_dtype()
    x = _real_input(ctx, dtype=dtype)
    zero, pi = ctx.const(0, dtype=dtype, name="zero"), ctx.const(math.pi, dtype=dtype, name="pi")
    out = ctx.op("Where", [ctx.op("Less", [x, zero]), pi, zero])
    out = ctx.op("Where", [ctx.op("IsNaN", [x]), x, out])
    return Value(out, ctx.layout(0))

