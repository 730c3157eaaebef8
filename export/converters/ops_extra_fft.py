"""Converters of ``kgraph.ops.fft``: ONNX DFT (opset 17) over ``(real, imag)`` pairs stacked on a last axis of 2."""
from export.converters.ops import int64
from export.converters.ops_extra import register_composites
from export.registry import op_converter


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


register_composites(["stft", "istft"], opset=17)
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
def convert_rfft(ctx):
    """One-sided DFT of the real signal (cut or zero-padded to ``fft_length``)."""
    rank, n = ctx.input_rank(0), ctx.input_shape(0)[-1]
    length = ctx.arguments["fft_length"]
    x = _fit_last(ctx, ctx.input(0), n, n if length is None else int(length), rank)
    z = ctx.op("Unsqueeze", [x, ctx.const(int64([-1]), name="last")])
    return _parts(ctx, _dft(ctx, z, rank - 1, onesided=True))


@op_converter("irfft", opset=17)
def convert_irfft(ctx):
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

