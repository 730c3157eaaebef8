"""Tone-curve augmentation layers of Keras 3 (posterization, solarization, auto-contrast, histogram equalization, CLAHE).

Each layer maps pixel values through a curve; all but AutoContrast and CLAHE work on values mapped from
``value_range`` to ``[0, 255]`` and back, as Keras does. As in Keras, RandomPosterization, Solarization and
Equalization act only in training; AutoContrast and ContrastLimitedAdaptiveHistogramEqualization act at inference
too, so they are written with ``kgraph.ops`` and export as ONNX graphs. The histogram layers are piecewise constant
in the pixel values: their outputs carry no gradient to the images.
"""
import numbers

import numpy as np

from kgraph import ops
from kgraph.layers.preprocessing.augmentation.basic import _RandomLayer, factor_range
from kgraph.layers.preprocessing.image import crop_axis

__all__ = ["AutoContrast", "ContrastLimitedAdaptiveHistogramEqualization", "Equalization", "RandomPosterization",
           "Solarization"]

_FULL_RANGE = (0, 255)


def _sorted_value_range(value_range):
    """``value_range`` as a sorted ``[low, high]`` list, once it is known to be a pair of numbers."""
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2 or \
            not all(isinstance(v, numbers.Real) for v in value_range):
        raise ValueError("The `value_range` argument should be a list of two numbers. "
                         f"Received: value_range={value_range}")
    return sorted(value_range)


def _rescale(x, source, target):
    """``x`` mapped linearly from the ``source`` range to the ``target`` range (unchanged when they are equal)."""
    if source[0] == target[0] and source[1] == target[1]:
        return x
    dtype = np.dtype(x.dtype)
    source_low, source_high, target_low, target_high = (np.asarray(v, dtype) for v in (*source, *target))
    unit = ops.divide(ops.subtract(x, source_low), source_high - source_low)
    return ops.add(ops.multiply(unit, target_high - target_low), target_low)


def _floating(x, dtype):
    """``x`` itself when it holds floating-point values, else ``x`` cast to ``dtype``."""
    return x if np.issubdtype(np.dtype(x.dtype), np.floating) else ops.cast(x, dtype)


class _ToneCurve(_RandomLayer):
    """A tone layer without randomness: no seed; ``training_only`` says whether inference leaves images as they are.

    It reuses the random layers' handling of single images and channels_first: ``augment`` gets an NHWC batch.
    """

    training_only = False

    def __init__(self, data_format=None, **kwargs):
        super().__init__(seed=None, data_format=data_format, **kwargs)

    def call(self, inputs, training=True):
        return super().call(inputs, training=bool(training) or not self.training_only)

    def get_config(self):
        config = super().get_config()
        del config["seed"]
        return config


class RandomPosterization(_RandomLayer):
    """Keeps only the top ``bits`` bits of each 8-bit channel value, ``bits`` drawn per image.

    Args:
        factor: the number of bits to keep, in [1, 8]. A number ``f`` draws ``bits`` in ``[1, f)`` (always ``1``
            when ``f`` is 1) and a pair ``(lower, upper)`` in ``[lower, upper)``; equal bounds fix it.
        value_range: the ``(low, high)`` range of the input values, mapped to ``[0, 255]`` for the bit cut.
    """

    _MAX_BITS = 8

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = tuple(int(f) if float(f).is_integer() else f for f in factor_range("factor", factor, (1, 8)))
        self.value_range = _sorted_value_range(value_range)

    def augment(self, x):
        x = _floating(x, self.compute_dtype)
        return self.transform(x, self.sample(x.shape[0]))

    def sample(self, batch):
        """``{"shift_factor": (batch,) ints}``: how many low bits each image loses."""
        low, high = self.factor
        bits = self.rng.integers(low, high, size=batch) if low != high else np.full(batch, low)
        return {"shift_factor": (self._MAX_BITS - bits).astype(np.uint8)}

    def transform(self, x, params):
        """Posterize the NHWC batch ``x`` with the drawn ``params``."""
        step = np.reshape(2.0 ** params["shift_factor"], (-1, 1, 1, 1)).astype(x.dtype)
        levels = ops.floor(ops.clip(_rescale(x, self.value_range, _FULL_RANGE), 0, 255))
        levels = ops.multiply(ops.floor(ops.divide(levels, step)), step)
        return _rescale(levels, _FULL_RANGE, self.value_range)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


def _solarization_range(name, factor):
    """``(lower, upper)`` in [0, 1] from a number ``f`` (``(0, f)``) or a pair."""
    message = (f"The `{name}` argument should be a number (or a list of two numbers) in the range [0, 1]. "
               f"Received: {name}={factor}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or not all(isinstance(f, numbers.Real) and 0 <= f <= 1 for f in factor):
            raise ValueError(message)
        return tuple(sorted(factor))
    if not isinstance(factor, numbers.Real) or not 0 <= factor <= 1:
        raise ValueError(message)
    return (0, factor)


class Solarization(_RandomLayer):
    """Adds a drawn amount to each image, then inverts (``255 - v``) the values at or above a drawn threshold.

    Both are drawn per image on the ``[0, 255]`` scale as Keras draws them: uniformly in
    ``[lower, upper * 255]`` of ``addition_factor`` and ``threshold_factor``. With the defaults every value is
    inverted.

    Args:
        addition_factor: a number ``f`` in [0, 1] (``(0, f)``) or a pair ``(lower, upper)``.
        threshold_factor: a number ``f`` in [0, 1] (``(0, f)``) or a pair ``(lower, upper)``.
        value_range: the ``(low, high)`` range of the input values, mapped to ``[0, 255]`` for the curve.
    """

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.addition_factor = _solarization_range("addition_factor", addition_factor)
        self.threshold_factor = _solarization_range("threshold_factor", threshold_factor)
        self.value_range = _sorted_value_range(value_range)

    def augment(self, x):
        out = self.transform(_floating(x, self.compute_dtype), self.sample(x.shape[0]))
        if np.issubdtype(np.dtype(x.dtype), np.integer):
            return ops.saturate_cast(ops.round(out), x.dtype)
        return out

    def sample(self, batch):
        """``{"additions", "thresholds"}``: per-image ``(batch, 1, 1, 1)`` values on the ``[0, 255]`` scale."""
        draw = {}
        for key, (low, high) in (("additions", self.addition_factor), ("thresholds", self.threshold_factor)):
            draw[key] = self.rng.uniform(low, high * 255, size=(batch, 1, 1, 1))
        return draw

    def transform(self, x, params):
        """Solarize the NHWC batch ``x`` with the drawn ``params``."""
        additions, thresholds = (np.asarray(params[key], x.dtype) for key in ("additions", "thresholds"))
        shifted = ops.clip(ops.add(_rescale(x, self.value_range, _FULL_RANGE), additions), 0, 255)
        curve = ops.where(ops.less(shifted, thresholds), shifted, ops.subtract(np.asarray(255, x.dtype), shifted))
        return _rescale(curve, _FULL_RANGE, self.value_range)

    def get_config(self):
        config = super().get_config()
        config.update({"value_range": self.value_range, "addition_factor": self.addition_factor,
                       "threshold_factor": self.threshold_factor})
        return config


class AutoContrast(_ToneCurve):
    """Stretches each channel of each image linearly so that its minimum and maximum span ``value_range``.

    A constant channel (or one holding a NaN) is left as it is. Active at inference too.
    """

    def __init__(self, value_range=(0, 255), **kwargs):
        super().__init__(**kwargs)
        self.value_range = _sorted_value_range(value_range)

    def augment(self, x):
        x = _floating(x, self.compute_dtype)
        full = _rescale(x, self.value_range, _FULL_RANGE)
        low = ops.min(full, axis=(1, 2), keepdims=True)
        span = ops.subtract(ops.max(full, axis=(1, 2), keepdims=True), low)
        stretchable = ops.greater(span, 0)
        # A span of 1 where the channel cannot be stretched keeps the discarded branch (and its gradient) finite.
        scale = ops.divide(np.asarray(255, x.dtype), ops.where(stretchable, span, np.asarray(1, x.dtype)))
        stretched = ops.clip(ops.add(ops.multiply(full, scale), ops.multiply(ops.negative(low), scale)), 0, 255)
        return ops.where(stretchable, _rescale(stretched, _FULL_RANGE, self.value_range), x)

    def get_config(self):
        config = super().get_config()
        config["value_range"] = self.value_range
        return config


class Equalization(_ToneCurve):
    """Histogram equalization of each channel, its histogram of ``bins`` bins counted over the whole batch.

    As in Keras it acts only in training; at inference the images pass unchanged. A channel whose values all fall
    in one bin is left as it is.

    Args:
        value_range: the ``(low, high)`` range of the input values; the output spans it.
        bins: the number of histogram bins.
    """

    training_only = True

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        if not isinstance(bins, numbers.Integral) or isinstance(bins, bool) or bins < 1:
            raise ValueError(f"The `bins` argument should be a positive integer. Received: bins={bins}")
        self.bins = bins
        self.value_range = _sorted_value_range(value_range)

    def _affine(self, x, source, target):
        """``x * scale + offset`` taking ``source`` onto ``target`` (Keras's formula for this layer)."""
        scale = (target[1] - target[0]) / (source[1] - source[0])
        dtype = np.dtype(x.dtype)
        return ops.add(ops.multiply(x, np.asarray(scale, dtype)), np.asarray(target[0] - source[0] * scale, dtype))

    def _lookup(self, channel):
        """The equalized values of one ``[0, 255]`` channel (any shape), or None when it fills at most one bin."""
        top = np.float32(self.bins - 1)
        bins = np.clip(channel.astype(np.float32) * top / np.float32(255), 0, top).astype(np.int64)
        hist = np.bincount(bins.ravel(), minlength=self.bins)
        if np.count_nonzero(hist) <= 1:
            return None
        cdf = np.cumsum(hist)
        first = cdf[np.flatnonzero(cdf)[0]]
        denominator = cdf[-1] - first
        table = ((cdf - first) * 255).astype(np.float32) / np.float32(denominator)
        table = np.clip(np.round(table), 0, 255)
        return table[np.clip(channel / np.float32(255) * top, 0, top).astype(np.int64)]

    def augment(self, x):
        x = _floating(x, self.compute_dtype)
        full = self._affine(x, self.value_range, _FULL_RANGE)
        values = np.asarray(full)
        equalized = np.empty(values.shape, values.dtype)
        keep = np.zeros(values.shape[-1], bool)
        for c in range(values.shape[-1]):
            table = self._lookup(values[..., c])
            keep[c] = table is None
            equalized[..., c] = values[..., c] if table is None else table
        return self._affine(ops.where(keep, full, equalized), _FULL_RANGE, self.value_range)

    def get_config(self):
        config = super().get_config()
        config.update({"bins": self.bins, "value_range": self.value_range})
        return config


def _symmetric_pad(x, axis, size):
    """``x`` extended along ``axis`` to ``size`` by mirroring its end (edge included), as ``np.pad`` symmetric."""
    length = x.shape[axis]
    if size == length:
        return x
    return ops.take(x, np.pad(np.arange(length), (0, size - length), mode="symmetric"), axis=axis)


def _corner_index(tile, size, count):
    """For each of ``size`` pixels: the tiles (clamped to the grid) before and after it, and its weight on the
    second; pixel centres between two tile centres blend their two tiles' curves."""
    # Positions are in tile units counted from the centre of a tile before the first (Keras's float32 steps).
    position = (np.arange(size, dtype=np.float32) - np.float32(tile / 2.0)) / np.float32(tile) + np.float32(1)
    after = np.floor(position)
    return (np.clip(after - 1, 0, count - 1).astype(np.int32), np.clip(after, 0, count - 1).astype(np.int32),
            position - after)


def _clahe(x, clip_limit, grid):
    """CLAHE of an NHWC batch of ``[0, 255]`` values: per-tile clipped-histogram curves, bilinearly blended."""
    _, height, width, channels = x.shape
    grid_h, grid_w = grid
    tile_h, tile_w = -(-height // grid_h), -(-width // grid_w)
    padded = _symmetric_pad(_symmetric_pad(x, 1, tile_h * grid_h), 2, tile_w * grid_w)
    tiles = ops.reshape(padded, (-1, grid_h, tile_h, grid_w, tile_w, channels))
    tiles = ops.reshape(ops.transpose(tiles, (0, 1, 3, 5, 2, 4)), (-1, grid_h, grid_w, channels, tile_h * tile_w))
    levels = ops.clip(ops.cast(tiles, "int32"), 0, 255)
    hist = ops.sum(ops.one_hot(levels, 256, dtype=x.dtype), axis=-2)
    if clip_limit > 0:
        clipped = ops.clip(hist, 0, np.asarray(clip_limit * (tile_h * tile_w) / 256.0, x.dtype))
        excess = ops.sum(ops.subtract(hist, clipped), axis=-1, keepdims=True)
        hist = ops.add(clipped, ops.divide(excess, np.asarray(256, x.dtype)))
    cdf = ops.cumsum(hist, axis=-1)
    cdf_min = ops.min(cdf, axis=-1, keepdims=True)
    denominator = ops.subtract(np.asarray(tile_h * tile_w, x.dtype), cdf_min)
    denominator = ops.where(ops.equal(denominator, 0), np.asarray(1, x.dtype), denominator)
    curves = ops.clip(ops.divide(ops.multiply(ops.subtract(cdf, cdf_min), np.asarray(255, x.dtype)), denominator),
                      0, 255)
    curves = ops.reshape(curves, (-1, grid_h * grid_w * channels * 256))
    blended = _blend(padded, curves, (tile_h, tile_w), grid)
    return crop_axis(crop_axis(blended, 1, 0, height), 2, 0, width)


def _blend(padded, curves, tile, grid):
    """Each pixel's value looked up in the curves of its four nearest tiles, blended bilinearly by position."""
    _, padded_h, padded_w, channels = padded.shape
    rows = _corner_index(tile[0], padded_h, grid[0])
    cols = _corner_index(tile[1], padded_w, grid[1])
    pixels = ops.cast(ops.clip(padded, 0, 255), "int32")
    channel_offset = np.arange(channels, dtype=np.int32) * 256

    def lookup(row, col):
        offset = (row[:, None, None] * grid[1] + col[None, :, None]) * (channels * 256) + channel_offset
        index = ops.reshape(ops.add(pixels, offset.astype(np.int32)), (-1, padded_h * padded_w * channels))
        return ops.reshape(ops.take_along_axis(curves, index, axis=1), (-1, padded_h, padded_w, channels))

    dtype = np.dtype(padded.dtype)
    wy, wx = rows[2].astype(dtype)[None, :, None, None], cols[2].astype(dtype)[None, None, :, None]
    top = ops.add(ops.multiply(lookup(rows[0], cols[0]), 1 - wx), ops.multiply(lookup(rows[0], cols[1]), wx))
    bottom = ops.add(ops.multiply(lookup(rows[1], cols[0]), 1 - wx), ops.multiply(lookup(rows[1], cols[1]), wx))
    return ops.add(ops.multiply(top, 1 - wy), ops.multiply(bottom, wy))


class ContrastLimitedAdaptiveHistogramEqualization(_ToneCurve):
    """CLAHE: histogram equalization per tile of a ``tile_grid_size`` grid, each tile's histogram clipped at
    ``clip_limit`` times its mean bin count (the excess spread over all bins), the tiles' curves blended
    bilinearly between tile centres. Images whose size is not a multiple of the grid are mirrored at their bottom
    and right edges for the histograms. Active at inference too.

    Args:
        value_range: the ``(low, high)`` range of the input values, mapped to ``[0, 255]`` for the histograms.
        clip_limit: the histogram clip, relative to a flat histogram; 0 or less does not clip.
        tile_grid_size: the ``(rows, columns)`` of tiles.
    """

    def __init__(self, value_range=(0, 255), clip_limit=4.0, tile_grid_size=(8, 8), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        _sorted_value_range(value_range)
        if not isinstance(clip_limit, numbers.Real) or isinstance(clip_limit, bool):
            raise ValueError(f"The `clip_limit` argument should be a number. Received: clip_limit={clip_limit}")
        if not isinstance(tile_grid_size, (tuple, list)) or len(tile_grid_size) != 2 or not all(
                isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 1 for n in tile_grid_size):
            raise ValueError("The `tile_grid_size` argument should be a tuple of two positive integers. "
                             f"Received: tile_grid_size={tile_grid_size}")
        self.value_range = value_range
        self.clip_limit = clip_limit
        self.tile_grid_size = tile_grid_size

    def augment(self, x):
        if None in x.shape[1:]:
            raise ValueError(f"{type(self).__name__} needs static image sizes. Received: inputs.shape={x.shape}")
        dtype = x.dtype
        x = _floating(x, self.compute_dtype)
        out = _clahe(_rescale(x, self.value_range, _FULL_RANGE), self.clip_limit, tuple(self.tile_grid_size))
        out = _rescale(out, _FULL_RANGE, self.value_range)
        return out if out.dtype == dtype else ops.cast(out, dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"value_range": self.value_range, "clip_limit": self.clip_limit,
                       "tile_grid_size": self.tile_grid_size})
        return config
