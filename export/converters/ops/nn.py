"""Converters of ``keras.ops.nn``: activations, softmax, one-hot, normalization, dense; the rest by tracing."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, Value, onnx_dtype
from export.converters.activations import emit_activation
from export.converters.ops.common import axes_of, folded, int64, is_float, operand, rank_of, reduce
from export.converters.ops.composite import register_composites
from export.registry import op_converter, unexportable
from kgraph.ops import nn_activations, nn_attention, nn_losses, nn_windows

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(nn_activations.__all__ + nn_losses.__all__ + nn_attention.__all__ + nn_windows.__all__)

unexportable("ctc_loss", "a recursion over time and each sequence's own label lattice, run in NumPy; ONNX has no "
                         "CTC op")
unexportable("ctc_decode", "returns NumPy arrays decoded eagerly (the decoded lengths depend on the values)")
# Recurrent steps over a precomputed projection: the recurrent layers' converters emit ONNX RNN/GRU/LSTM.
unexportable("simple_rnn", "a step loop recorded by SimpleRNN, whose layer converter emits ONNX RNN")
unexportable("gru", "a step loop recorded by GRU, whose layer converter emits ONNX GRU")
unexportable("lstm", "a step loop recorded by LSTM, whose layer converter emits ONNX LSTM")

_GELU_C = math.sqrt(2 / math.pi)


def _activation(name):
    """A converter emitting the kgraph activation ``name`` (the layers' table) on the input, keeping its layout."""
    def convert(ctx):
        dtype = ctx.output_dtype()
        layout = ctx.layout(0)
        x = ctx.input(0, layout=None, dtype=dtype)
        return Value(emit_activation(ctx, name, x, layout, ctx.input_rank(), dtype), layout)
    convert.__doc__ = f"The '{name}' activation's ONNX form on the input cast to the output dtype."
    return convert


for _name in ("relu", "relu6", "sigmoid", "softplus", "softsign", "silu", "swish", "selu", "hard_sigmoid"):
    op_converter(_name, opset=13)(_activation(_name))


def _float32_op(ctx, emit):
    """``emit(x, dtype)`` on the input, computed in float32 where the output dtype has no onnxruntime kernel."""
    # Elu, LeakyRelu, Softplus and HardSwish have float32 kernels only in onnxruntime.
    dtype = np.dtype(ctx.output_dtype())
    work = dtype if dtype == np.float32 else np.dtype("float32")
    y = emit(ctx.input(0, layout=None, dtype=work), work)
    if work != dtype:
        y = ctx.op("Cast", [y], to=onnx_dtype(dtype))
    return Value(y, ctx.layout(0))


@op_converter("elu", opset=13)
def convert_elu(ctx: ConversionContext) -> ConverterResult:
    """Elu with the call's ``alpha``."""
    alpha = float(ctx.arguments["alpha"])
    return _float32_op(ctx, lambda x, dtype: ctx.op("Elu", [x], alpha=alpha))


@op_converter("leaky_relu", opset=13)
def convert_leaky_relu(ctx: ConversionContext) -> ConverterResult:
    """LeakyRelu with the call's ``negative_slope`` (ONNX's default 0.01 is never relied on)."""
    slope = float(ctx.arguments["negative_slope"])
    return _float32_op(ctx, lambda x, dtype: ctx.op("LeakyRelu", [x], alpha=slope))


@op_converter("log_sigmoid", opset=13)
def convert_log_sigmoid(ctx: ConversionContext) -> ConverterResult:
    """``-softplus(-x)``, stable for large ``|x|`` as kgraph's form is."""
    return _float32_op(ctx, lambda x, dtype: ctx.op("Neg", [ctx.op("Softplus", [ctx.op("Neg", [x])])]))


@op_converter("hard_silu", opset=13)
@op_converter("hard_swish", opset=13)
def convert_hard_silu(ctx: ConversionContext) -> ConverterResult:
    """``x * hard_sigmoid(x)`` (HardSigmoid with alpha 1/6, beta 1/2)."""
    return _float32_op(ctx, lambda x, dtype: ctx.op("Mul", [x, ctx.op("HardSigmoid", [x], alpha=1 / 6, beta=0.5)]))


@op_converter("hard_silu", opset=14)
@op_converter("hard_swish", opset=14)
def convert_hard_silu_14(ctx: ConversionContext) -> ConverterResult:
    """HardSwish (opset 14), which is ``x * max(0, min(1, x / 6 + 1 / 2))``."""
    return _float32_op(ctx, lambda x, dtype: ctx.op("HardSwish", [x]))


def _gelu_tanh(ctx, x, dtype):
    """``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``."""
    const = lambda v, name: ctx.const(v, dtype=dtype, name=name)  # noqa: E731
    cube = ctx.op("Mul", [ctx.op("Mul", [x, x]), x])
    inner = ctx.op("Mul", [ctx.op("Add", [x, ctx.op("Mul", [cube, const(0.044715, "gelu_k")])]),
                           const(_GELU_C, "gelu_c")])
    half_x = ctx.op("Mul", [x, const(0.5, "half")])
    return ctx.op("Mul", [half_x, ctx.op("Add", [ctx.op("Tanh", [inner]), const(1, "one")])])


@op_converter("gelu", opset=13)
def convert_gelu(ctx: ConversionContext) -> ConverterResult:
    """The tanh approximation written out, or the exact erf form (the layers' 'gelu' activation)."""
    if ctx.arguments["approximate"]:
        return _float32_op(ctx, lambda x, dtype: _gelu_tanh(ctx, x, dtype))
    return _activation("gelu")(ctx)


@op_converter("gelu", opset=20)
def convert_gelu_20(ctx: ConversionContext) -> ConverterResult:
    """ONNX Gelu (opset 20), ``approximate`` "tanh" or "none"."""
    approximate = "tanh" if ctx.arguments["approximate"] else "none"
    return _float32_op(ctx, lambda x, dtype: ctx.op("Gelu", [x], approximate=approximate))


def _softmax(op_type, subtract_log):
    """A converter for softmax / log_softmax: ``op_type`` over one axis, or written out over several."""
    def convert(ctx):
        axis, rank = ctx.arguments["axis"], ctx.input_rank()
        dtype = ctx.output_dtype()
        if isinstance(axis, int):
            layout = ctx.layout(0)
            x = ctx.input(0, layout=None, dtype=dtype)
            return Value(ctx.op(op_type, [x], axis=layout.physical_axis(axis, rank)), layout)
        axes = axes_of(axis, rank)
        x = ctx.input(0, NATIVE, dtype)
        shifted = ctx.op("Sub", [x, reduce(ctx, "ReduceMax", x, axes, True)])
        if subtract_log:
            return ctx.op("Sub", [shifted, reduce(ctx, "ReduceLogSumExp", shifted, axes, True)])
        e = ctx.op("Exp", [shifted])
        return ctx.op("Div", [e, reduce(ctx, "ReduceSum", e, axes, True)])
    convert.__doc__ = f"{op_type} over an int ``axis``; over a tuple, shifted by the max and normalized."
    return convert


op_converter("softmax", opset=13)(_softmax("Softmax", subtract_log=False))
op_converter("log_softmax", opset=13)(_softmax("LogSoftmax", subtract_log=True))


@op_converter("one_hot", opset=13)
def convert_one_hot(ctx: ConversionContext) -> ConverterResult:
    """Equal of the indices (a new axis at ``axis``) with ``range(num_classes)``: out-of-range rows are all zero."""
    # ONNX OneHot counts negative indices back from the depth; kgraph (and Keras) give zeros instead.
    args = ctx.arguments
    rank = ctx.output_rank()
    axis = int(args["axis"]) % rank
    dtype = np.dtype(ctx.input_dtype())
    work = dtype if np.issubdtype(dtype, np.floating) else np.dtype("int64")
    x = ctx.op("Unsqueeze", [operand(ctx, args["x"], work), ctx.const(int64([axis]), name="axes")])
    classes = np.arange(int(args["num_classes"]), dtype=work).reshape((-1,) + (1,) * (rank - axis - 1))
    hot = ctx.op("Equal", [x, ctx.const(classes, name="classes")])
    return ctx.op("Cast", [hot], to=onnx_dtype(ctx.output_dtype()))


@op_converter("moments", opset=13)
def convert_moments(ctx: ConversionContext) -> ConverterResult:
    """Mean, and variance as the mean of squared deviations, over ``axes``."""
    args = ctx.arguments
    axes = axes_of(args["axes"], ctx.input_rank())
    keepdims = bool(args["keepdims"])
    x = ctx.input(0, dtype=ctx.output_dtype())
    mean = reduce(ctx, "ReduceMean", x, axes, True)
    centered = ctx.op("Sub", [x, mean])
    variance = reduce(ctx, "ReduceMean", ctx.op("Mul", [centered, centered]), axes, keepdims)
    if not keepdims and axes:
        mean = ctx.op("Squeeze", [mean, ctx.const(int64(axes), name="axes")])
    return [mean, variance]


@op_converter("batch_normalization", opset=13)
def convert_batch_normalization(ctx: ConversionContext) -> ConverterResult:
    """``(x - mean) * (scale / sqrt(variance + epsilon)) + offset`` with the statistics on ``axis``."""
    args = ctx.arguments
    rank = ctx.input_rank()
    dtype = ctx.output_dtype()
    axis = int(args["axis"]) % rank
    # Each statistic as an initializer shaped to broadcast along `axis`: (channels, 1, ..., 1).
    view = (-1,) + (1,) * (rank - 1 - axis)
    stat = lambda v: folded(ctx, v, dtype, lambda a: a.reshape(view), "channel_view")  # noqa: E731
    epsilon = ctx.const(float(args["epsilon"]), dtype=dtype, name="epsilon")
    factor = ctx.op("Reciprocal", [ctx.op("Sqrt", [ctx.op("Add", [stat(args["variance"]), epsilon])])])
    if args["scale"] is not None:
        factor = ctx.op("Mul", [factor, stat(args["scale"])])
    y = ctx.op("Mul", [ctx.op("Sub", [operand(ctx, args["x"], dtype), stat(args["mean"])]), factor])
    return y if args["offset"] is None else ctx.op("Add", [y, stat(args["offset"])])


def _layer_norm_weight(ctx, value, shape, dtype):
    """``gamma`` or ``beta`` (any layout of the normalized sizes) as an initializer of ``shape``."""
    return folded(ctx, value, dtype, lambda a: a.reshape(shape), "x".join(map(str, shape)))


@op_converter("layer_normalization", opset=13)
def convert_layer_normalization(ctx: ConversionContext) -> ConverterResult:
    """Mean and variance over ``axis``, normalized, then scaled by ``gamma`` and shifted by ``beta``."""
    args = ctx.arguments
    rank, shape, dtype = ctx.input_rank(), ctx.input_shape(), ctx.output_dtype()
    axes = axes_of(args["axis"], rank)
    x = operand(ctx, args["x"], dtype)
    centered = ctx.op("Sub", [x, reduce(ctx, "ReduceMean", x, axes, True)])
    variance = reduce(ctx, "ReduceMean", ctx.op("Mul", [centered, centered]), axes, True)
    epsilon = ctx.const(float(args["epsilon"]), dtype=dtype, name="epsilon")
    y = ctx.op("Mul", [centered, ctx.op("Reciprocal", [ctx.op("Sqrt", [ctx.op("Add", [variance, epsilon])])])])
    bshape = [shape[i] if i in axes else 1 for i in range(rank)]
    if args["gamma"] is not None:
        y = ctx.op("Mul", [y, _layer_norm_weight(ctx, args["gamma"], bshape, dtype)])
    if args["beta"] is not None:
        y = ctx.op("Add", [y, _layer_norm_weight(ctx, args["beta"], bshape, dtype)])
    return y


@op_converter("layer_normalization", opset=17)
def convert_layer_normalization_17(ctx: ConversionContext) -> ConverterResult:
    """ONNX LayerNormalization (opset 17) over trailing axes of known sizes; otherwise the opset-13 form."""
    args = ctx.arguments
    rank, shape, dtype = ctx.input_rank(), ctx.input_shape(), ctx.output_dtype()
    axes = axes_of(args["axis"], rank)
    sizes = [shape[a] for a in axes]
    if axes != list(range(axes[0], rank)) or None in sizes:
        return convert_layer_normalization(ctx)
    if args["gamma"] is None:
        scale = ctx.const(np.ones(sizes, dtype=dtype), name="ones")
    else:
        scale = _layer_norm_weight(ctx, args["gamma"], sizes, dtype)
    bias = [] if args["beta"] is None else [_layer_norm_weight(ctx, args["beta"], sizes, dtype)]
    return ctx.op("LayerNormalization", [operand(ctx, args["x"], dtype), scale] + bias, axis=axes[0],
                  epsilon=float(args["epsilon"]))


@op_converter("dense", opset=13)
def convert_dense(ctx: ConversionContext) -> ConverterResult:
    """Gemm for a 2-D float input, MatMul (+ Add) otherwise."""
    args = ctx.arguments
    dtype = ctx.output_dtype()
    x, kernel = ctx.tensor(args["x"], dtype), ctx.tensor(args["kernel"], dtype)
    bias = None if args["bias"] is None else ctx.tensor(args["bias"], dtype)
    if rank_of(args["x"]) == 2 and is_float(dtype) and (bias is None or rank_of(args["bias"]) <= 1):
        return ctx.op("Gemm", [x, kernel] + ([bias] if bias else []))
    y = ctx.op("MatMul", [x, kernel])
    return y if bias is None else ctx.op("Add", [y, bias])
