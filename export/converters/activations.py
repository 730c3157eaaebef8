"""The activation table: kgraph activation name -> ONNX emitter, shared by every layer with an activation."""
from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, onnx_dtype
from export.registry import ExportError

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias, TypeVar

    import numpy.typing as npt

    from export.builder import Layout
    from export.context import ConversionContext

    # emit(ctx, x, dtype name, physical axis) -> the output's ONNX name.
    Emitter: TypeAlias = Callable[[ConversionContext, str, str, int], str]
    _EmitterT = TypeVar("_EmitterT", bound=Emitter)

_EMITTERS = {}

# Activations whose ops onnxruntime implements for every float type; the others (Erf, Elu, Selu, Softplus,
# Softsign, HardSigmoid, LeakyRelu at some opsets) have float32 kernels only and run on other types through Casts.
ANY_FLOAT = {"linear", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "exponential", "relu6", "silu", "swish"}

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def register_activation(*names: str, opset: int = 13) -> Callable[[_EmitterT], _EmitterT]:
    """Decorator registering ``emit(ctx, x, dtype, axis) -> output name`` for activation ``names`` from ``opset`` on."""
    # x: the ONNX input name; dtype: its NumPy dtype name; axis: the physical axis softmax-like ones reduce over.
    def register(fn: _EmitterT) -> _EmitterT:
        for name in names:
            variants = _EMITTERS.setdefault(name, [])
            if any(o == opset for o, _ in variants):
                raise ValueError(f"An emitter for activation '{name}' at opset {opset} is already registered.")
            bisect.insort(variants, (opset, fn), key=lambda v: v[0])
        return fn

    return register


def activation_name(activation: str | Callable[..., Any] | None) -> str:
    """The kgraph name of an activation given as a function, a name or None."""
    if activation is None:
        return "linear"
    if isinstance(activation, str):
        return activation
    from kgraph import activations
    try:
        name = activations.serialize(activation)
    except ValueError:
        name = None
    # A user's registered function serializes to a dict: its emitter (if any) is registered under its __name__.
    return name if isinstance(name, str) else getattr(activation, "__name__", repr(activation))


def has_emitter(activation: str | Callable[..., Any] | None) -> bool:
    """Whether ``activation`` has an ONNX emitter at some opset (else a layer using it exports by tracing)."""
    return activation_name(activation) in _EMITTERS


def supported_activations() -> list[str]:
    """Names of every activation with an emitter."""
    return sorted(_EMITTERS)


def emit_activation(ctx: ConversionContext, activation: str | Callable[..., Any] | None, x: str,
                    layout: Layout = NATIVE, rank: int = 2, dtype: npt.DTypeLike = "float32") -> str:
    """Emit ``activation`` (function, name or None) on ``x`` (of ``layout``, ``rank``, ``dtype``); return the output."""
    name = activation_name(activation)
    variants = [fn for opset, fn in _EMITTERS.get(name, []) if opset <= ctx.opset]
    if not variants:
        where = f"layer '{ctx.layer.name}' ({type(ctx.layer).__name__})" if ctx.layer is not None else ctx.scope
        raise ExportError(
            f"Activation '{name}' of {where} has no ONNX emitter at opset {ctx.opset}. Expected one of "
            f"{supported_activations()}; register one with "
            f"@export.converters.activations.register_activation('{name}').")
    axis = layout.normalize(rank).physical_axis(-1, rank)
    dtype = np.dtype(dtype).name
    if dtype != "float32" and name not in ANY_FLOAT:
        y = variants[-1](ctx, ctx.op("Cast", [x], to=onnx_dtype("float32")), "float32", axis)
        return ctx.op("Cast", [y], to=onnx_dtype(dtype))
    return variants[-1](ctx, x, dtype, axis)


def _unary(op_type, **attrs):
    def emit(ctx, x, dtype, axis):
        return ctx.op(op_type, [x], **attrs)
    return emit


register_activation("relu")(_unary("Relu"))
register_activation("sigmoid")(_unary("Sigmoid"))
register_activation("tanh")(_unary("Tanh"))
register_activation("softsign")(_unary("Softsign"))
register_activation("softplus")(_unary("Softplus"))
register_activation("exponential")(_unary("Exp"))
# ONNX defaults differ from Keras here (Elu alpha 1.0 matches, LeakyRelu 0.01 vs 0.2, HardSigmoid 0.2 vs 1/6):
# every attribute is written out.
register_activation("elu")(_unary("Elu", alpha=1.0))
register_activation("selu")(_unary("Selu", alpha=_SELU_ALPHA, gamma=_SELU_SCALE))
register_activation("leaky_relu")(_unary("LeakyRelu", alpha=0.2))
register_activation("hard_sigmoid")(_unary("HardSigmoid", alpha=1.0 / 6.0, beta=0.5))


@register_activation("linear")
def _linear(ctx, x, dtype, axis):
    return x


@register_activation("softmax")
def _softmax(ctx, x, dtype, axis):
    return ctx.op("Softmax", [x], axis=axis)


@register_activation("log_softmax")
def _log_softmax(ctx, x, dtype, axis):
    return ctx.op("LogSoftmax", [x], axis=axis)


@register_activation("relu6")
def _relu6(ctx, x, dtype, axis):
    return ctx.op("Clip", [x, ctx.const(0, dtype=dtype, name="zero"), ctx.const(6, dtype=dtype, name="six")])


@register_activation("silu", "swish")
def _silu(ctx, x, dtype, axis):
    # ONNX Swish (opset 24) has no onnxruntime kernel: Sigmoid + Mul runs everywhere and is fused by ORT.
    return ctx.op("Mul", [x, ctx.op("Sigmoid", [x])])


@register_activation("gelu")
def _gelu(ctx, x, dtype, axis):
    # Exact form, as keras.activations.gelu defaults to: x * 0.5 * (1 + erf(x / sqrt(2))).
    scaled = ctx.op("Mul", [x, ctx.const(1 / math.sqrt(2), dtype=dtype, name="inv_sqrt2")])
    cdf = ctx.op("Add", [ctx.op("Erf", [scaled]), ctx.const(1, dtype=dtype, name="one")])
    return ctx.op("Mul", [ctx.op("Mul", [x, ctx.const(0.5, dtype=dtype, name="half")]), cdf])


@register_activation("gelu", opset=20)
def _gelu_20(ctx, x, dtype, axis):
    return ctx.op("Gelu", [x], approximate="none")
