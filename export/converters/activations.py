"""The activation table: kgraph activation name -> ONNX emitter, shared by every layer with an activation."""
from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

import numpy as np
from onnx import helper

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
ANY_FLOAT = {"linear", "relu", "sigmoid", "tanh", "softmax", "log_softmax", "exponential", "relu6", "silu", "swish",
             "hard_tanh", "tanh_shrink", "squareplus", "sparse_plus"}

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
# Keras's defaults of the activations with arguments: celu alpha 1, hard_shrink / soft_shrink threshold 0.5.
register_activation("celu")(_unary("Celu", alpha=1.0))
register_activation("hard_shrink")(_unary("Shrink", lambd=0.5, bias=0.0))
register_activation("soft_shrink")(_unary("Shrink", lambd=0.5, bias=0.5))
# clip((x + 1) / 2, 0, 1) is HardSigmoid with alpha = beta = 1/2.
register_activation("sparse_sigmoid")(_unary("HardSigmoid", alpha=0.5, beta=0.5))
register_activation("hard_silu", opset=14)(_unary("HardSwish"))


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


@register_activation("hard_silu")
def _hard_silu(ctx, x, dtype, axis):
    return ctx.op("Mul", [x, ctx.op("HardSigmoid", [x], alpha=1.0 / 6.0, beta=0.5)])


@register_activation("hard_tanh")
def _hard_tanh(ctx, x, dtype, axis):
    return ctx.op("Clip", [x, ctx.const(-1, dtype=dtype, name="minus_one"), ctx.const(1, dtype=dtype, name="one")])


@register_activation("log_sigmoid")
def _log_sigmoid(ctx, x, dtype, axis):
    # -softplus(-x): no overflow for large |x|.
    return ctx.op("Neg", [ctx.op("Softplus", [ctx.op("Neg", [x])])])


@register_activation("mish")
def _mish(ctx, x, dtype, axis):
    # x * tanh(softplus(x)); ONNX Mish (opset 18) is this same function.
    return ctx.op("Mul", [x, ctx.op("Tanh", [ctx.op("Softplus", [x])])])


@register_activation("tanh_shrink")
def _tanh_shrink(ctx, x, dtype, axis):
    return ctx.op("Sub", [x, ctx.op("Tanh", [x])])


@register_activation("squareplus")
def _squareplus(ctx, x, dtype, axis):
    # (x + sqrt(x^2 + b)) / 2 with Keras's default b = 4.
    root = ctx.op("Sqrt", [ctx.op("Add", [ctx.op("Mul", [x, x]), ctx.const(4, dtype=dtype, name="four")])])
    return ctx.op("Mul", [ctx.op("Add", [x, root]), ctx.const(0.5, dtype=dtype, name="half")])


@register_activation("sparse_plus")
def _sparse_plus(ctx, x, dtype, axis):
    # 0 below -1, x above 1, (x + 1)^2 / 4 between: (clip(x, -1, 1) + 1)^2 / 4 + relu(x - 1) on every side.
    one = ctx.const(1, dtype=dtype, name="one")
    shifted = ctx.op("Add", [ctx.op("Clip", [x, ctx.const(-1, dtype=dtype, name="minus_one"), one]), one])
    square = ctx.op("Mul", [ctx.op("Mul", [shifted, shifted]), ctx.const(0.25, dtype=dtype, name="quarter")])
    return ctx.op("Add", [square, ctx.op("Relu", [ctx.op("Sub", [x, one])])])


@register_activation("sparsemax")
def _sparsemax(ctx, x, dtype, axis):
    """The projection onto the simplex along ``axis``: sort descending, find the support, subtract the threshold."""
    axis_const = ctx.const(np.asarray(axis, np.int64), name="axis")
    axes = ctx.const(np.asarray([axis], np.int64), name="axes")
    shape = ctx.op("Shape", [x])
    size = ctx.op("Gather", [shape, axes], axis=0)
    ranked = ctx.op("TopK", [x, size], outputs=2, axis=axis, largest=1, sorted=1)[0]
    cumulative = ctx.op("CumSum", [ranked, axis_const])
    ones = ctx.op("ConstantOfShape", [shape], value=helper.make_tensor("one", onnx_dtype(dtype), [1], [1]))
    k = ctx.op("CumSum", [ones, axis_const])  # 1, 2, ..., n along the axis
    one = ctx.const(1, dtype=dtype, name="one")
    support = ctx.op("Cast", [ctx.op("Greater", [ctx.op("Add", [one, ctx.op("Mul", [k, ranked])]), cumulative])],
                     to=onnx_dtype(dtype))
    count = ctx.op("ReduceSum", [support, axes], keepdims=1)
    total = ctx.op("ReduceSum", [ctx.op("Mul", [ranked, support]), axes], keepdims=1)
    tau = ctx.op("Div", [ctx.op("Sub", [total, one]), count])
    return ctx.op("Relu", [ctx.op("Sub", [x, tau])])
