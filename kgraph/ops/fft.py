"""Fourier transforms of ``keras.ops``: complex values as ``(real, imag)`` pairs of float arrays, as Keras passes them.

The transforms are linear, so each VJP is the adjoint transform of the
cotangent pair.
"""
import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import primitive
from kgraph.ops import core as _core
from kgraph.ops import math as _math
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import pad as _pad
from kgraph.ops.shape import shape as _shape

__all__ = ["fft", "fft2", "ifft2", "irfft", "istft", "rfft", "stft"]


def _pair(name, x):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"{name} expects a tuple (real, imag) of float tensors. Received: x={type(x).__name__}")
    real, imag = (np.asarray(a) for a in x)
    if real.shape != imag.shape:
        raise ValueError(f"{name}: the real and imaginary parts must have one shape. "
                         f"Received: real.shape={real.shape}, imag.shape={imag.shape}")
    dtype = real.dtype if real.dtype.kind == "f" else np.dtype(backend.floatx())
    return real + 1j * imag, dtype


def _split(z, dtype):
    return z.real.astype(dtype), z.imag.astype(dtype)


def _complex_vjp(adjoint, dtype):
    def vjp(gs):
        g = adjoint(gs[0] + 1j * gs[1])
        return g.real.astype(dtype), g.imag.astype(dtype)

    return vjp


@op
@primitive(list_input=True)
def fft(x):
    """Discrete Fourier transform along the last axis of ``(real, imag)``."""
    z, dtype = _pair("fft", x)
    n = z.shape[-1]
    return _split(np.fft.fft(z), dtype), _complex_vjp(lambda g: np.fft.ifft(g) * n, dtype)


@op
@primitive(list_input=True)
def fft2(x):
    """Discrete Fourier transform over the last two axes of ``(real, imag)``."""
    z, dtype = _pair("fft2", x)
    size = z.shape[-1] * z.shape[-2]
    return _split(np.fft.fft2(z), dtype), _complex_vjp(lambda g: np.fft.ifft2(g) * size, dtype)


@op
@primitive(list_input=True)
def ifft2(x):
    """Inverse discrete Fourier transform over the last two axes of ``(real, imag)``."""
    z, dtype = _pair("ifft2", x)
    size = z.shape[-1] * z.shape[-2]
    return _split(np.fft.ifft2(z), dtype), _complex_vjp(lambda g: np.fft.fft2(g) / size, dtype)


@op
@primitive(num_inputs=1)
def rfft(x, fft_length=None):
    """Fourier transform of real ``x`` along its last axis: the ``fft_length // 2 + 1`` non-negative frequencies."""
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(backend.floatx())
    n = x.shape[-1]
    length = n if fft_length is None else int(fft_length)

    def vjp(gs):
        full = np.zeros(x.shape[:-1] + (length,), dtype=complex)
        full[..., :gs[0].shape[-1]] = gs[0] + 1j * gs[1]
        grad = (np.fft.ifft(full) * length).real
        grad = grad[..., :n] if length >= n else np.pad(grad, [(0, 0)] * (x.ndim - 1) + [(0, n - length)])
        return grad.astype(dtype)

    return _split(np.fft.rfft(x, n=length), dtype), vjp


def _irfft_weights(m, length):
    """Per frequency bin: its weight in the inverse (1 for DC and Nyquist, 2 between; 0 beyond the bins used)."""
    used = length // 2 + 1
    weights = np.zeros(m)
    weights[:min(m, used)] = 2
    weights[0] = 1
    if length % 2 == 0 and used - 1 < m:
        weights[used - 1] = 1
    return weights


@op
@primitive(list_input=True)
def irfft(x, fft_length=None):
    """Inverse of ``rfft``: real signals of ``fft_length`` samples (default ``2 * (bins - 1)``) of ``(real, imag)``."""
    z, dtype = _pair("irfft", x)
    m = z.shape[-1]
    length = 2 * (m - 1) if fft_length is None else int(fft_length)
    out = np.fft.irfft(z, n=length).astype(dtype)

    def vjp(g):
        spectrum = np.fft.fft(g)
        bins = np.zeros(g.shape[:-1] + (m,), dtype=complex)
        k = min(m, length)
        bins[..., :k] = spectrum[..., :k]
        w = bins * _irfft_weights(m, length) / length
        # The imaginary parts of the DC and Nyquist bins do not reach the output.
        return w.real.astype(dtype), w.imag.astype(dtype)

    return out, vjp


def _window(window, sequence_length, fft_length, dtype):
    """The analysis window (periodic Hann or Hamming, an array, or ones), centred in ``fft_length`` samples."""
    if window is None:
        values = np.ones(sequence_length)
    elif isinstance(window, str):
        periodic = {"hann": np.hanning, "hamming": np.hamming}.get(window)
        if periodic is None:
            raise ValueError(f"window must be 'hann', 'hamming', an array or None. Received: window={window!r}")
        values = periodic(sequence_length + 1)[:-1]
    else:
        values = np.asarray(_math.convert_to_numpy(window), dtype=np.float64)
        if values.shape != (sequence_length,):
            raise ValueError(f"window must have sequence_length={sequence_length} samples. "
                             f"Received: window.shape={values.shape}")
    left = (fft_length - sequence_length) // 2
    return np.pad(values, (left, fft_length - sequence_length - left)).astype(dtype)


@op
def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """Short-time Fourier transform along the last axis: ``(real, imag)`` of shape ``(..., frames, bins)``."""
    if fft_length < sequence_length:
        raise ValueError("fft_length must be at least sequence_length. "
                         f"Received: fft_length={fft_length}, sequence_length={sequence_length}")
    x = floating(x)
    dtype = dtype_of(x)
    if center:
        widths = [(0, 0)] * (len(_shape(x)) - 1) + [(fft_length // 2, fft_length // 2)]
        x = _pad(x, widths, mode="reflect")
    frames = _core.extract_sequences(x, fft_length, sequence_stride)
    return rfft(frames * _window(window, sequence_length, fft_length, dtype))


@op
def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann", center=True):
    """Inverse of ``stft``: frames from ``irfft``, windowed, overlap-added and divided by the summed squared window."""
    frames = irfft(x, fft_length=fft_length)
    dtype = dtype_of(frames)
    win = _window(window, sequence_length, fft_length, dtype)
    frames = frames * win
    rank, count = len(_shape(frames)), _shape(frames)[-2]
    total = fft_length + sequence_stride * (count - 1)
    signal = None
    norm = np.zeros(total)
    for k in range(count):
        start = k * sequence_stride
        placed = _pad(frames[..., k, :], [(0, 0)] * (rank - 2) + [(start, total - start - fft_length)])
        signal = placed if signal is None else signal + placed
        norm[start:start + fft_length] += np.square(win)
    first = fft_length // 2 if center else 0
    last = total - fft_length // 2 if center else total
    if length is not None:
        last = min(first + length, total)
    norm = np.where(norm > 1e-11, norm, 1).astype(dtype)
    signal = signal[..., first:last] / norm[first:last]
    if length is not None and last - first < length:
        signal = _pad(signal, [(0, 0)] * (rank - 2) + [(0, length - (last - first))])
    return signal
