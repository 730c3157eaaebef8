"""Random color augmentation layers of Keras 3 (hue, saturation, jitter, degeneration, grayscale, sharpness, invert).

Each layer splits its work as Keras does: ``sample(batch)`` draws the per-image parameters as NumPy arrays, and
``transform(images, params)`` applies them to an NHWC batch with ``kgraph.ops`` (so the tape differentiates it).
Like every random layer they are identities outside training.
"""
import numpy as np

from kgraph import ops
from kgraph.layers.preprocessing.augmentation.basic import RandomBrightness, RandomContrast, _RandomLayer, factor_range
from kgraph.ops import image as image_ops

__all__ = ["RandomColorDegeneration", "RandomColorJitter", "RandomGrayscale", "RandomHue", "RandomInvert",
           "RandomSaturation", "RandomSharpness"]

# Keras's backend epsilon, which keeps the saturation factor f / (1 - f) finite at f = 1.
_EPSILON = 1e-7


def _checked_value_range(value_range):
    """``value_range`` unchanged, once it is known to be a pair."""
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError("The `value_range` argument should be a list of two numbers. "
                         f"Received: value_range={value_range}")
    return value_range


def _per_image(values, x):
    """Per-image NumPy values shaped ``(batch, 1, 1, 1)`` in ``x``'s dtype, to broadcast over an NHWC batch."""
    return np.reshape(values, (-1, 1, 1, 1)).astype(x.dtype)


def _grayscale(x):
    """Luma of an NHWC batch with one channel; a batch that already has one channel is its own luma (as Keras)."""
    if x.shape[-1] not in (1, 3):
        raise ValueError("Invalid channel size: expected 3 (RGB) or 1 (Grayscale). "
                         f"Received input with shape: images.shape={tuple(x.shape)}")
    return x if x.shape[-1] == 1 else image_ops.rgb_to_grayscale(x)


class _ColorLayer(_RandomLayer):
    """A random layer whose ``augment`` is ``transform(x, sample(batch))``, on floating-point images."""

    def augment(self, x):
        if not np.issubdtype(np.dtype(x.dtype), np.floating):
            x = ops.cast(x, self.compute_dtype)
        return self.transform(x, self.sample(x.shape[0]))


class RandomHue(_ColorLayer):
    """Rotates each image's hue by ``±u / 2`` of a turn, ``u`` drawn in ``factor`` and the sign at random.

    Args:
        factor: a number ``f`` in [0, 1] (``u`` in ``[0, f]``) or a pair ``(lower, upper)``.
        value_range: the ``(low, high)`` range of the input values; the output is clipped to it.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.value_range = _checked_value_range(value_range)

    def sample(self, batch):
        """The hue shift of each image, in turns."""
        sign = np.where(self.rng.uniform(size=batch) > 0.5, -1.0, 1.0)
        return sign * self.rng.uniform(*self.factor, size=batch) * 0.5

    def transform(self, x, shift):
        low, high = self.value_range
        hue, saturation, value = ops.unstack(image_ops.rgb_to_hsv(ops.divide(ops.subtract(x, low), high - low)),
                                             axis=-1)
        hue = ops.add(hue, np.reshape(shift, (-1, 1, 1)).astype(x.dtype))
        hue = ops.where(ops.greater(hue, 1.0), ops.subtract(hue, 1.0), hue)
        hue = ops.where(ops.less(hue, 0.0), ops.add(hue, 1.0), hue)
        rgb = ops.clip(image_ops.hsv_to_rgb(ops.stack([hue, saturation, value], axis=-1)), 0.0, 1.0)
        return ops.add(ops.multiply(rgb, high - low), low)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomSaturation(_ColorLayer):
    """Scales each image's HSV saturation by ``f / (1 - f)``, ``f`` drawn in ``factor`` (0.5 keeps the image).

    As in Keras, the images go to HSV as they are (hue and saturation do not depend on the scale) and the scaled
    saturation is clipped to ``value_range``.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (-1, 1))
        self.value_range = sorted(_checked_value_range(value_range))

    def sample(self, batch):
        """The saturation multiplier of each image."""
        factor = self.rng.uniform(*self.factor, size=batch)
        return factor / (1 - factor + _EPSILON)

    def transform(self, x, scale):
        hue, saturation, value = ops.unstack(image_ops.rgb_to_hsv(x), axis=-1)
        saturation = ops.multiply(saturation, np.reshape(scale, (-1, 1, 1)).astype(x.dtype))
        saturation = ops.clip(saturation, self.value_range[0], self.value_range[1])
        return image_ops.hsv_to_rgb(ops.stack([hue, saturation, value], axis=-1))

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomColorJitter(_RandomLayer):
    """Random brightness, contrast, saturation and hue, in that order; a factor left ``None`` skips its step.

    The steps are kgraph's RandomBrightness, RandomContrast, RandomSaturation and RandomHue (given
    ``value_range``), all drawing from this layer's generator.
    """

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None, saturation_factor=None,
                 hue_factor=None, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.value_range = _checked_value_range(value_range)
        self.brightness_factor = brightness_factor
        self.contrast_factor = contrast_factor
        self.saturation_factor = saturation_factor
        self.hue_factor = hue_factor
        steps = ((RandomBrightness, brightness_factor), (RandomContrast, contrast_factor),
                 (RandomSaturation, saturation_factor), (RandomHue, hue_factor))
        self.steps = [step(factor=factor, value_range=value_range, seed=seed) for step, factor in steps
                      if factor is not None]
        for step in self.steps:
            step._rng = self._rng  # one stream for the whole layer, as Keras draws every step from its own seed

    def augment(self, x):
        for step in self.steps:
            x = step.augment(x)
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"value_range": self.value_range, "brightness_factor": self.brightness_factor,
                       "contrast_factor": self.contrast_factor, "saturation_factor": self.saturation_factor,
                       "hue_factor": self.hue_factor})
        return config


class RandomColorDegeneration(_ColorLayer):
    """Blends each image toward its grayscale version by ``f`` drawn in ``factor``, clipped to ``value_range``."""

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (-1, 1))
        self.value_range = sorted(_checked_value_range(value_range))

    def sample(self, batch):
        """The blend weight of each image's grayscale version."""
        return self.rng.uniform(*self.factor, size=batch)

    def transform(self, x, weight):
        out = ops.add(x, ops.multiply(_per_image(weight, x), ops.subtract(_grayscale(x), x)))
        return ops.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomGrayscale(_ColorLayer):
    """Turns each image to grayscale with probability ``factor``, keeping its channel count (luma repeated).

    As in Keras, ``factor`` is a single probability and the config carries no ``seed``.
    """

    def __init__(self, factor=0.5, data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 <= factor <= 1:
            raise ValueError(f"`factor` should be between 0 and 1. Received: factor={factor}")
        self.factor = factor

    def sample(self, batch):
        """Whether each image turns gray."""
        return self.rng.uniform(size=batch) < self.factor

    def transform(self, x, gray):
        return ops.where(np.reshape(gray, (-1, 1, 1, 1)), _grayscale(x), x)

    def get_config(self):
        config = super().get_config()
        del config["seed"]
        config["factor"] = self.factor
        return config


class RandomSharpness(_ColorLayer):
    """Moves each image away from (or toward) its 3x3 smoothing by ``s = 2 f``, ``f`` drawn in ``factor``.

    The output is ``x + (1 - s) * (smooth(x) - x)`` clipped to ``value_range``: ``f = 0.5`` keeps the image,
    ``f = 0`` gives the smoothing. The smoothing kernel weighs the centre 5/13 and each neighbour 1/13 and, as in
    Keras, pads the borders with zeros.
    """

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.value_range = sorted(_checked_value_range(value_range))

    def sample(self, batch):
        """The sharpness ``2 f`` of each image."""
        return self.rng.uniform(*self.factor, size=batch) * 2

    def transform(self, x, sharpness):
        kernel = np.full((3, 3), 1 / 13)
        kernel[1, 1] = 5 / 13
        kernel = np.repeat(kernel[:, :, None, None], x.shape[-1], axis=2).astype(x.dtype)
        smooth = ops.depthwise_conv(x, kernel, padding="same")
        out = ops.add(x, ops.multiply(_per_image(1 - sharpness, x), ops.subtract(smooth, x)))
        return ops.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomInvert(_ColorLayer):
    """Replaces each image ``x`` by ``value_range[1] - x`` with a probability ``p`` drawn in ``factor``."""

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.value_range = _checked_value_range(value_range)

    def sample(self, batch):
        """Whether each image is inverted: a uniform draw below its drawn probability."""
        probability = self.rng.uniform(*self.factor, size=batch)
        return self.rng.uniform(size=batch) < probability

    def transform(self, x, invert):
        return ops.where(np.reshape(invert, (-1, 1, 1, 1)), ops.subtract(self.value_range[1], x), x)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config
