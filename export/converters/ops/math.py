"""Converters of the ``keras.ops.math`` ops: segment reductions, top-k, logsumexp, erf, and ONNX DFT for the FFTs."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import onnx_dtype
from export.converters.ops.common import int64, reduce
from export.converters.ops.composite import register_composites
from export.converters.ops.numpy_math import unary
from export.converters.ops.numpy_reductions import reduce_axes, top_k
from export.registry import op_converter, unexportable

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

register_composites(["erfc", "extract_sequences", "logdet"])
register_composites(["stft", "istft"], opset=17)

unexportable("erfinv", "ONNX has no inverse error function (only Erf)")

op_converter("erf", opset=13)(unary("Erf", float32_only=True))
op_converter("rsqrt", opset=13)(unary("Sqrt", "Reciprocal"))


@op_converter("logsumexp", opset=13)
def convert_logsumexp(ctx: ConversionContext) -> ConverterResult:
    """``log(sum(exp(x - m))) + m`` with ``m`` the finite max, as kgraph computes it (no overflow)."""
    # onnxruntime's ReduceLogSumExp overflows for large inputs at some opsets.
    x, axes, keepdims = reduce_axes(ctx)
    top = reduce(ctx, "ReduceMax", x, axes, True)
    top = ctx.op("Where", [ctx.op("IsInf", [top]), ctx.const(0, dtype=ctx.output_dtype(), name="zero"), top])
    total = reduce(ctx, "ReduceSum", ctx.op("Exp", [ctx.op("Sub", [x, top])]), axes, True)
    y = ctx.op("Add", [ctx.op("Log", [total]), top])
    squeezed = list(range(ctx.input_rank())) if axes is None else axes
    if keepdims or not squeezed:
        return y
    return ctx.op("Squeeze", [y, ctx.const(int64(squeezed), name="axes")])


@op_converter("top_k", opset=13)
def convert_top_k(ctx: ConversionContext) -> ConverterResult:
    """TopK along the last axis; indices as int32."""
    values, indices = top_k(ctx, ctx.input(0), -1, int(ctx.arguments["k"]), largest=True)
    return [values, ctx.op("Cast", [indices], to=onnx_dtype("int32"))]


@op_converter("in_top_k", opset=13)
def convert_in_top_k(ctx: ConversionContext) -> ConverterResult:
    """Fewer than ``k`` predictions above the target's own score."""
    args = ctx.arguments
    predictions = ctx.tensor(args["predictions"], ctx.input_dtype(1) if ctx.num_inputs > 1 else None)
    targets = ctx.op("Unsqueeze", [ctx.tensor(args["targets"], "int64"), ctx.const(int64([1]), name="axes")])
    score = ctx.op("GatherElements", [predictions, targets], axis=1)
    above = ctx.op("Cast", [ctx.op("Greater", [predictions, score])], to=onnx_dtype("int64"))
    count = reduce(ctx, "ReduceSum", above, [1], keepdims=False)
    return ctx.op("Less", [count, ctx.const(int64(int(args["k"])), name="k")])


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


# The FFTs: ONNX DFT (opset 17) over ``(real, imag)`` pairs stacked on a last axis of 2.
def _complex(ctx, real, imag):
    """``[..., n, 2]`` from two ``[..., n]`` tensors."""
    axes = ctx.const(int64([-1]), name="last")
    return ctx.op("Concat", [ctx.op("Unsqueeze", [real, axes]), ctx.op("Unsqueeze", [imag, axes])], axis=-1)


def _parts(ctx, z):
    """The real and imaginary ``[..., n]`` parts of ``[..., n, 2]``."""
    return [ctx.op("Gather", [z, ctx.const(int64(k), name=part)], axis=-1) for k, part in ((0, "real"), (1, "imag"))]


def _dft(ctx, z, axis, inverse=False, onesided=False):
    """One DFT along ``axis`` of ``[..., 2]`` data: the axis is an attribute at opset 17, an input from 20."""
    if ctx.opset >= 20:
        return ctx.op("DFT", [z, "", ctx.const(int64(axis), name="axis")], inverse=int(inverse), onesided=int(onesided))
    return ctx.op("DFT", [z], axis=axis, inverse=int(inverse), onesided=int(onesided))


def _transform(axes_from_end, inverse):
    def convert(ctx):
        rank = ctx.input_rank(0)
        z = _complex(ctx, ctx.input(0), ctx.input(1))
        for k in axes_from_end:
            z = _dft(ctx, z, rank - k, inverse)
        return _parts(ctx, z)
    convert.__doc__ = f"DFT{' (inverse)' if inverse else ''} over the last {len(axes_from_end)} axes."
    return convert


op_converter("fft", opset=17)(_transform([1], inverse=False))
op_converter("fft2", opset=17)(_transform([2, 1], inverse=False))
op_converter("ifft2", opset=17)(_transform([2, 1], inverse=True))


def _fit_last(ctx, x, size, length, rank):
    """``x`` cut or zero-padded along its last axis from ``size`` to ``length``."""
    if length < size:
        return ctx.op("Slice", [x, ctx.const(int64([0]), name="start"), ctx.const(int64([length]), name="stop"),
                                ctx.const(int64([-1]), name="last")])
    if length > size:
        pads = ctx.const(int64([0] * (2 * rank - 1) + [length - size]), name="pads")
        return ctx.op("Pad", [x, pads])
    return x


@op_converter("rfft", opset=17)
def convert_rfft(ctx: ConversionContext) -> ConverterResult:
    """One-sided DFT of the real signal (cut or zero-padded to ``fft_length``)."""
    rank, n = ctx.input_rank(0), ctx.input_shape(0)[-1]
    length = ctx.arguments["fft_length"]
    x = _fit_last(ctx, ctx.input(0), n, n if length is None else int(length), rank)
    z = ctx.op("Unsqueeze", [x, ctx.const(int64([-1]), name="last")])
    return _parts(ctx, _dft(ctx, z, rank - 1, onesided=True))


@op_converter("irfft", opset=17)
def convert_irfft(ctx: ConversionContext) -> ConverterResult:
    """The Hermitian spectrum completed (mirrored conjugate bins), an inverse DFT, its real part."""
    rank, m = ctx.input_rank(0), ctx.input_shape(0)[-1]
    length = ctx.arguments["fft_length"]
    length = 2 * (m - 1) if length is None else int(length)
    used = length // 2 + 1
    real, imag = (_fit_last(ctx, ctx.input(i), m, used, rank) for i in (0, 1))
    mirrored = list(range(length - used, 0, -1))
    if mirrored:
        index = ctx.const(int64(mirrored), name="mirror")
        real = ctx.op("Concat", [real, ctx.op("Gather", [real, index], axis=-1)], axis=-1)
        imag = ctx.op("Concat", [imag, ctx.op("Neg", [ctx.op("Gather", [imag, index], axis=-1)])], axis=-1)
    signal = _dft(ctx, _complex(ctx, real, imag), rank - 1, inverse=True)
    return _parts(ctx, signal)[0]

