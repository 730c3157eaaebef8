"""Audio preprocessing layers: STFTSpectrogram and MelSpectrogram.

``STFTSpectrogram`` computes its short-time Fourier transform as a strided
convolution with (trainable) kernels holding the windowed DFT basis, so that
it trains, exports as ONNX convolutions and loads Keras's weights verbatim.
``MelSpectrogram`` is built on ``ops.stft`` and a fixed triangular mel filter
bank (HTK mel scale), computed in float32 exactly as Keras computes it.
"""
import math
import warnings

import numpy as np

from kgraph import backend, ops
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.layers.preprocessing.image import standardize_data_format

__all__ = ["MelSpectrogram", "STFTSpectrogram"]

# Coefficients of the cosine-sum windows: w = sum_k a_k cos(k x), x from -pi to pi over the window.
_COSINE_WINDOWS = {
    "hann": (0.5, 0.5),
    "hamming": (0.54, 0.46),
    "blackman": (0.42, 0.50, 0.08),
    "blackmanharris": (0.35875, 0.48829, 0.14128, 0.01168),
    "nuttall": (0.3635819, 0.4891775, 0.1365995, 0.0106411),
    "flattop": (0.21557895, 0.41663158, 0.277263158, 0.083578947, 0.006947368),
}
_WINDOW_ALIASES = {
    "han": "hann", "hamm": "hamming", "ham": "hamming", "black": "blackman", "blk": "blackman",
    "blackharr": "blackmanharris", "bkh": "blackmanharris", "nutl": "nuttall", "nut": "nuttall", "flat": "flattop",
    "flt": "flattop", "bart": "bartlett", "brt": "bartlett", "triangle": "triang", "tri": "triang", "box": "boxcar",
    "ones": "boxcar", "rect": "boxcar", "rectangular": "boxcar", "halfcosine": "cosine",
}
WINDOWS = tuple(sorted(set(_COSINE_WINDOWS) | {"bartlett", "triang", "boxcar", "cosine"}))


def _symmetric_window(name, m):
    """The symmetric window ``name`` of ``m`` samples (float64)."""
    if m == 1:
        return np.ones(1)
    if name in _COSINE_WINDOWS:
        x = np.linspace(-np.pi, np.pi, m)
        return sum(a * np.cos(k * x) for k, a in enumerate(_COSINE_WINDOWS[name]))
    n = np.arange(m)
    if name == "bartlett":
        return np.where(n <= (m - 1) / 2, 2 * n / (m - 1), 2 - 2 * n / (m - 1))
    if name == "triang":
        half = np.arange(1, (m + 1) // 2 + 1)
        rising = (2 * half - 1) / m if m % 2 == 0 else 2 * half / (m + 1)
        return np.concatenate([rising, rising[::-1] if m % 2 == 0 else rising[-2::-1]])
    if name == "cosine":
        return np.sin(np.pi / m * (n + 0.5))
    return np.ones(m)


def window_values(window, length, periodic=False):
    """The values of ``window`` (a name among ``WINDOWS`` or their aliases, or an array) over ``length`` samples.

    A periodic window is the symmetric one of ``length + 1`` samples without its
    last sample (the form whose DFT has no leakage at the bin frequencies).
    """
    if not isinstance(window, str):
        values = np.asarray(ops.convert_to_numpy(window), dtype=np.float64)
        if values.shape != (length,):
            raise ValueError(f"`window` must hold one value per sample of a frame, shape ({length},). "
                             f"Received: window shape={values.shape}")
        return values
    name = _WINDOW_ALIASES.get(window.lower(), window.lower())
    if name not in WINDOWS:
        raise ValueError(f"Unknown window: expected one of {list(WINDOWS)} or an array. Received: window={window!r}")
    return _symmetric_window(name, length + 1)[:-1] if periodic and length > 1 else _symmetric_window(name, length)


def stft_kernel(side, window, scaling, periodic, shape, dtype):
    """Keras's STFT convolution kernel ``(frame_length, 1, bins)``: the ``side`` ("real" or "imag") of the DFT basis
    times the window, divided by the window's L2 norm (``scaling="density"``) or sum (``"spectrum"``).

    Computed in ``dtype`` step by step as Keras does, so that float32 kernels agree to the last bits.
    """
    dtype = np.dtype(backend.standardize_dtype(dtype))
    frame_length, _, bins = shape
    # The basis frequency step assumes an even FFT length, 2 * (bins - 1), as Keras's does.
    freq = np.arange(bins, dtype=dtype).reshape(1, 1, bins) / dtype.type(2 * (bins - 1))
    time = np.arange(frame_length, dtype=dtype).reshape(frame_length, 1, 1)
    angles = (dtype.type(-2) * time) * freq * dtype.type(np.pi)
    kernel = np.cos(angles) if side == "real" else np.sin(angles)
    if window is None:
        return kernel
    win = window_values(window, frame_length, periodic).astype(dtype).reshape(frame_length, 1, 1)
    if scaling == "density":
        kernel = kernel * win / np.sqrt(np.sum(np.square(win)))
    elif scaling == "spectrum":
        kernel = kernel * win / np.sum(np.abs(win))
    else:
        kernel = kernel * win
    return kernel.astype(dtype)


class _STFTInitializer:
    """Initializer of one side of the STFT kernel (a picklable callable for ``add_weight``)."""

    def __init__(self, side, window, scaling, periodic):
        self.side, self.window, self.scaling, self.periodic = side, window, scaling, periodic

    def __call__(self, shape, dtype=None):
        return stft_kernel(self.side, self.window, self.scaling, self.periodic, shape, dtype)


_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")


class STFTSpectrogram(Layer):
    """Spectrogram of each channel of ``(batch, time, channels)`` signals (``(batch, channels, time)`` with
    ``data_format="channels_first"``), by convolution with windowed DFT kernels (trainable by default).

    Args:
        mode: "log" (log magnitude), "magnitude", "psd" (power with the non-edge bins doubled), "real", "imag",
            "angle" or "stft" (real bins then imaginary bins).
        frame_length: samples per frame (the kernel length).
        frame_step: hop between frames; default ``frame_length // 2``.
        fft_length: FFT size, at least ``frame_length``; default the next power of two; ``fft_length // 2 + 1``
            frequency bins.
        window: a window name ("hann", "hamming", "blackman", ...), an array of ``frame_length`` values, or None.
        periodic: use the periodic form of a named window instead of the symmetric one.
        scaling: "density" (divide by the window's L2 norm), "spectrum" (by its sum) or None.
        padding: "valid" or "same" (TensorFlow's rule: ``ceil(time / frame_step)`` frames).
        expand_dims: output ``(batch, frames, bins, channels)`` (channels_first: ``(batch, channels, frames,
            bins)``) instead of ``(batch, frames, channels * bins)`` (``(batch, channels * bins, frames)``).
        data_format: "channels_last" (default) or "channels_first", for inputs and outputs.
    """

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None, window="hann",
                 periodic=False, scaling="density", padding="valid", expand_dims=False, data_format=None, **kwargs):
        if not isinstance(frame_length, (int, np.integer)) or frame_length < 1:
            raise ValueError(f"`frame_length` should be a positive integer. Received: frame_length={frame_length}")
        if frame_step is not None and (frame_step > frame_length or frame_step < 1):
            raise ValueError("`frame_step` should be a positive integer not greater than `frame_length`. "
                             f"Received: frame_step={frame_step}, frame_length={frame_length}")
        if fft_length is not None and fft_length < frame_length:
            raise ValueError("`fft_length` should be not less than `frame_length`. "
                             f"Received: fft_length={fft_length}, frame_length={frame_length}")
        if fft_length is not None and fft_length & (fft_length - 1):
            warnings.warn(f"`fft_length` is recommended to be a power of two. Received: fft_length={fft_length}")
        if mode not in _MODES:
            raise ValueError(f"Output mode is invalid, it must be one of {', '.join(_MODES)}. Received: mode={mode}")
        if scaling not in (None, "density", "spectrum"):
            raise ValueError(f"Scaling is invalid, it must be None, 'density' or 'spectrum'. "
                             f"Received: scaling={scaling}")
        if padding not in ("valid", "same"):
            raise ValueError(f"Padding is invalid, it should be 'valid' or 'same'. Received: padding={padding}")
        if window is not None:
            window_values(window, frame_length, periodic)
        super().__init__(**kwargs)
        self.mode = mode
        self.frame_length = int(frame_length)
        self.frame_step = frame_step
        self._frame_step = int(frame_step or self.frame_length // 2)
        self.fft_length = fft_length
        self._fft_length = int(fft_length or 2 ** int(math.ceil(math.log2(frame_length))))
        self.window = window
        self.periodic = periodic
        self.scaling = scaling
        self.padding = padding
        self.expand_dims = expand_dims
        self.data_format = standardize_data_format(data_format)
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape):
        shape = (self.frame_length, 1, self._fft_length // 2 + 1)
        if self.mode != "imag":
            self.real_kernel = self.add_weight(
                shape=shape, name="real_kernel",
                initializer=_STFTInitializer("real", self.window, self.scaling, self.periodic))
        if self.mode != "real":
            self.imag_kernel = self.add_weight(
                shape=shape, name="imag_kernel",
                initializer=_STFTInitializer("imag", self.window, self.scaling, self.periodic))
        self.built = True

    def _project(self, signals, kernel):
        """Frames of channels-last ``signals`` projected on ``kernel``'s basis: ``(batch, frames, channels, bins)``
        with ``expand_dims``, else ``(batch, frames, channels * bins)``, channel-major."""
        kernel = ops.cast(kernel, signals.dtype)
        channels = signals.shape[-1]
        if self.expand_dims:
            # A 2-D convolution with a one-channel-high kernel keeps the channels apart as a spatial axis.
            kernel = ops.expand_dims(kernel, 1)
            return ops.conv(ops.expand_dims(signals, -1), kernel, strides=(self._frame_step, 1),
                            padding=self.padding)
        if channels > 1:
            # One group per channel: output channel c * bins + f is channel c's bin f.
            kernel = ops.tile(kernel, (1, 1, channels))
        return ops.conv(signals, kernel, strides=self._frame_step, padding=self.padding)

    def _psd_weights(self, channels):
        """Per output bin: 1 for the first and last bins, 2 between (each interior bin also stands for its mirror)."""
        bins = self._fft_length // 2 + 1
        weights = np.full(bins, 2.0)
        weights[[0, -1]] = 1.0
        return weights if self.expand_dims else np.tile(weights, channels)

    def _spectrum(self, signals):
        """The requested spectrum of channels-last signals, in ``_project``'s layout."""
        if self.mode == "stft":
            return self._project(signals, ops.concatenate([self.real_kernel, self.imag_kernel], axis=-1))
        if self.mode == "real":
            return self._project(signals, self.real_kernel)
        if self.mode == "imag":
            return self._project(signals, self.imag_kernel)
        real, imag = self._project(signals, self.real_kernel), self._project(signals, self.imag_kernel)
        if self.mode == "angle":
            return ops.arctan2(imag, real)
        power = ops.add(ops.square(real), ops.square(imag))
        if self.mode == "psd":
            return ops.multiply(power, self._psd_weights(signals.shape[-1]).astype(power.dtype))
        magnitude = ops.sqrt(ops.maximum(power, backend.epsilon()))
        return magnitude if self.mode == "magnitude" else ops.log(ops.maximum(magnitude, backend.epsilon()))

    def call(self, inputs):
        if backend.standardize_dtype(inputs.dtype) not in ("float16", "float32", "float64"):
            raise TypeError(f"Invalid input type. Expected `float16`, `float32` or `float64`. "
                            f"Received: input type={inputs.dtype}")
        channels_first = self.data_format == "channels_first"
        spectrum = self._spectrum(ops.transpose(inputs, (0, 2, 1)) if channels_first else inputs)
        if self.expand_dims:
            return ops.transpose(spectrum, (0, 2, 1, 3) if channels_first else (0, 1, 3, 2))
        return ops.transpose(spectrum, (0, 2, 1)) if channels_first else spectrum

    def compute_output_shape(self, input_shape):
        batch, *rest = input_shape
        channels, time = rest if self.data_format == "channels_first" else rest[::-1]
        bins = (self._fft_length // 2 + 1) * (2 if self.mode == "stft" else 1)
        if time is None:
            frames = None
        elif self.padding == "same":
            frames = -(-time // self._frame_step)
        else:
            frames = (time - self.frame_length) // self._frame_step + 1
            if frames < 1:
                raise ValueError(f"Layer '{self.name}': signals of {time} samples are shorter than "
                                 f"frame_length={self.frame_length} (padding='valid'). "
                                 f"Received: input_shape={tuple(input_shape)}")
        if self.expand_dims:
            return (batch, channels, frames, bins) if self.data_format == "channels_first" else \
                (batch, frames, bins, channels)
        merged = None if channels is None else channels * bins
        return (batch, merged, frames) if self.data_format == "channels_first" else (batch, frames, merged)

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode, "frame_length": self.frame_length, "frame_step": self.frame_step,
                       "fft_length": self.fft_length, "window": self.window, "periodic": self.periodic,
                       "scaling": self.scaling, "padding": self.padding, "data_format": self.data_format,
                       "expand_dims": self.expand_dims})
        return config


# The HTK mel scale: mel(f) = 1127 ln(1 + f / 700).
_MEL_BREAK_HZ = 700.0
_MEL_HIGH_Q = 1127.0


def _hertz_to_mel(hertz):
    return np.float32(_MEL_HIGH_Q) * np.log(np.float32(1.0) + hertz / np.float32(_MEL_BREAK_HZ))


def _linspace32(start, stop, num):
    """``num`` float32 points from ``start`` to ``stop``, as ``start + (i / (num - 1)) * (stop - start)``."""
    start, stop = np.float32(start), np.float32(stop)
    return start + (np.arange(num, dtype=np.float32) / np.float32(num - 1)) * (stop - start)


def mel_weight_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate, lower_edge_hertz, upper_edge_hertz):
    """The float32 ``(num_spectrogram_bins, num_mel_bins)`` matrix of triangular mel filters (peaks of 1).

    Filter ``m`` rises linearly in mel from band edge ``m`` to edge ``m + 1`` and falls to edge ``m + 2``, the
    ``num_mel_bins + 2`` edges evenly spaced in mel from ``lower_edge_hertz`` to ``upper_edge_hertz``. The DC bin
    gets no weight, as in HTK.
    """
    nyquist = np.float32(sampling_rate) / np.float32(2.0)
    bin_mels = _hertz_to_mel(_linspace32(0.0, nyquist, num_spectrogram_bins)[1:])[:, None]
    edges = _linspace32(_hertz_to_mel(np.float32(lower_edge_hertz)), _hertz_to_mel(np.float32(upper_edge_hertz)),
                        num_mel_bins + 2)
    lower, center, upper = edges[None, :-2], edges[None, 1:-1], edges[None, 2:]
    rising = (bin_mels - lower) / (center - lower)
    falling = (upper - bin_mels) / (upper - center)
    weights = np.maximum(np.float32(0.0), np.minimum(rising, falling))
    return np.pad(weights, [(1, 0), (0, 0)]).astype(np.float32)


class MelSpectrogram(Layer):
    """Mel spectrogram ``(..., num_mel_bins, frames)`` of audio signals ``(..., samples)``: a centred STFT
    (reflect padding, ``1 + samples // sequence_stride`` frames), magnitudes to the power ``mag_exp``, mel filters,
    then optionally decibels relative to ``ref_power``, floored at ``top_db`` below the maximum of the whole batch.

    Args:
        fft_length: FFT size.
        sequence_stride: hop between frames.
        sequence_length: window length (default ``fft_length``).
        window: "hann", "hamming", an array of ``sequence_length`` values, or None.
        sampling_rate: samples per second of the signals.
        num_mel_bins: number of mel filters.
        min_freq, max_freq: frequency range of the filters in Hz (``max_freq`` defaults to the Nyquist frequency).
        power_to_db: convert to decibels, ``10 log10(max(S, min_power) / max(|ref_power|, min_power))``.
        top_db: the floor below the maximum, in dB (None: no floor).
        mag_exp: exponent of the magnitudes (1 magnitude, 2 power).
        min_power: smallest power before the logarithm.
        ref_power: the power of 0 dB.
    """

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None, window="hann",
                 sampling_rate=16000, num_mel_bins=128, min_freq=20.0, max_freq=None, power_to_db=True, top_db=80.0,
                 mag_exp=2.0, min_power=1e-10, ref_power=1.0, **kwargs):
        self.fft_length = fft_length
        self.sequence_stride = sequence_stride
        self.sequence_length = sequence_length or fft_length
        if self.fft_length < self.sequence_length:
            raise ValueError("`fft_length` must be greater than or equal to `sequence_length`. Received: "
                             f"sequence_length={self.sequence_length}, fft_length={self.fft_length}")
        if not isinstance(sequence_stride, (int, np.integer)) or sequence_stride < 1:
            raise ValueError(f"`sequence_stride` must be a positive integer. Received: "
                             f"sequence_stride={sequence_stride}")
        if isinstance(window, str) and window not in ("hann", "hamming"):
            raise ValueError(f"If a string is passed to `window`, it must be one of 'hann', 'hamming'. "
                             f"Received: window={window}")
        if window is not None and not isinstance(window, str):
            window_values(window, self.sequence_length)
        super().__init__(**kwargs)
        self.window = window
        self.sampling_rate = sampling_rate
        self.num_mel_bins = num_mel_bins
        self.min_freq = min_freq
        self.max_freq = max_freq or int(sampling_rate / 2)
        self.power_to_db = power_to_db
        self.top_db = top_db
        self.mag_exp = mag_exp
        self.min_power = min_power
        self.ref_power = ref_power
        self._mel_matrix = mel_weight_matrix(num_mel_bins, fft_length // 2 + 1, sampling_rate, self.min_freq,
                                             self.max_freq)

    def _compute_dtype(self):
        return self.compute_dtype if self.compute_dtype in ("float32", "float64") else "float32"

    def _decibels(self, spectrum):
        """``10 log10`` of the power relative to ``ref_power``, floored ``top_db`` below the overall maximum."""
        dtype = spectrum.dtype
        decibels = ops.multiply(ops.log10(ops.maximum(spectrum, np.asarray(self.min_power, dtype))),
                                np.asarray(10.0, dtype))
        reference = np.float32(10.0) * np.log10(np.maximum(np.abs(np.float32(self.ref_power)),
                                                           np.float32(self.min_power)))
        decibels = ops.subtract(decibels, np.asarray(reference, dtype))
        if self.top_db is None:
            return decibels
        return ops.maximum(decibels, ops.subtract(ops.max(decibels), np.asarray(self.top_db, dtype)))

    def call(self, inputs):
        dtype = self._compute_dtype()
        signals = ops.cast(inputs, dtype)
        real, imag = ops.stft(signals, self.sequence_length, self.sequence_stride, self.fft_length,
                              window=self.window, center=True)
        power = ops.add(ops.square(real), ops.square(imag))
        spectrum = power if self.mag_exp == 2 else ops.power(power, np.asarray(self.mag_exp / 2, dtype))
        mel = ops.tensordot(spectrum, self._mel_matrix.astype(dtype), axes=1)
        if self.power_to_db:
            mel = self._decibels(mel)
        return ops.cast(ops.swapaxes(mel, -1, -2), self.compute_dtype)

    def compute_output_shape(self, input_shape):
        *batch, samples = input_shape
        frames = None if samples is None else 1 + samples // self.sequence_stride
        return tuple(batch) + (self.num_mel_bins, frames)

    def get_config(self):
        config = super().get_config()
        config.update({"fft_length": self.fft_length, "sequence_stride": self.sequence_stride,
                       "sequence_length": self.sequence_length, "window": self.window,
                       "sampling_rate": self.sampling_rate, "num_mel_bins": self.num_mel_bins,
                       "min_freq": self.min_freq, "max_freq": self.max_freq, "power_to_db": self.power_to_db,
                       "top_db": self.top_db, "mag_exp": self.mag_exp, "min_power": self.min_power,
                       "ref_power": self.ref_power})
        return config
