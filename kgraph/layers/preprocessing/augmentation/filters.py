"""Filtering augmentation layers of Keras 3 (Gaussian blur, elastic transform)."""
from kgraph import ops
from kgraph.layers.preprocessing.augmentation.basic import _RandomLayer, factor_range

__all__ = ["RandomElasticTransform", "RandomGaussianBlur"]

_ELASTIC_FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _odd_kernel_size(kernel_size):
    """``(width taps, height taps)`` from an odd number or a pair of odd numbers, as Keras reads them."""
    message = f"kernel_size must be an odd number. Received: kernel_size={kernel_size}"
    if isinstance(kernel_size, (tuple, list)):
        if len(kernel_size) != 2:
            raise ValueError("The `kernel_size` argument should be a number (or a list of two numbers) "
                             f"Received: kernel_size={kernel_size}")
        sizes = tuple(kernel_size)
    elif isinstance(kernel_size, (int, float)):
        sizes = (kernel_size, kernel_size)
    else:
        raise ValueError(message)
    if any(not isinstance(s, (int, float)) or s % 2 != 1 for s in sizes):
        raise ValueError(message)
    return sizes


def _keep_where(chosen, changed, x):
    """``changed`` for the images whose entry of the boolean vector ``chosen`` is true, ``x`` for the others."""
    return ops.where(chosen[:, None, None, None], changed, x)


class RandomGaussianBlur(_RandomLayer):
    """Blurs each image with probability drawn in ``factor``, by a Gaussian whose two standard deviations (width,
    height) are drawn in ``sigma`` once per batch; the result is clipped to ``value_range``."""

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255), data_format=None, seed=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.kernel_size = _odd_kernel_size(kernel_size)
        self.sigma = factor_range("sigma", sigma, (0, 1))
        self.value_range = value_range

    def augment(self, x):
        batch = x.shape[0]
        probability = self.rng.uniform(*self.factor, size=batch)
        chosen = self.rng.uniform(size=batch) < probability
        # The small offset keeps a draw at the lower bound 0 a (sharp) Gaussian.
        sigma = self.rng.uniform(*self.sigma, size=2) + 1e-6
        blurred = ops.image.gaussian_blur(x, self.kernel_size, tuple(sigma), data_format="channels_last")
        return ops.clip(_keep_where(chosen, blurred, x), self.value_range[0], self.value_range[1])

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "kernel_size": self.kernel_size, "sigma": self.sigma,
                       "value_range": self.value_range})
        return config


class RandomElasticTransform(_RandomLayer):
    """Warps each image, with probability drawn in ``factor``, by ``ops.image.elastic_transform``; a distortion
    ``d`` drawn in ``scale`` once per batch gives ``alpha = 0.1 d max(height, width)`` and
    ``sigma = 0.05 d min(height, width)``. The result is clipped to ``value_range``."""

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                 value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.scale = factor_range("scale", scale, (0, 1))
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      "('nearest', 'bilinear').")
        if fill_mode not in _ELASTIC_FILL_MODES:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one {_ELASTIC_FILL_MODES}.")
        self.interpolation = interpolation
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.value_range = value_range

    def augment(self, x):
        if self.scale[1] == 0 or self.factor[1] == 0:  # no distortion can be drawn: Keras leaves the batch as is
            return x
        batch, height, width = x.shape[:3]
        probability = self.rng.uniform(*self.factor, size=batch)
        chosen = self.rng.uniform(size=batch) < probability
        distortion = float(self.rng.uniform(*self.scale))
        alpha, sigma = max(height, width) * 0.1 * distortion, min(height, width) * 0.05 * distortion
        warped = ops.image.elastic_transform(x, alpha, sigma, self.interpolation, self.fill_mode, self.fill_value,
                                             seed=int(self.rng.integers(2 ** 31)), data_format="channels_last")
        return ops.clip(_keep_where(chosen, warped, x), self.value_range[0], self.value_range[1])

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "scale": self.scale, "interpolation": self.interpolation,
                       "fill_mode": self.fill_mode, "fill_value": self.fill_value, "value_range": self.value_range})
        return config
