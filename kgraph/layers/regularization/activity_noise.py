"""ActivityRegularization and the noise layers: GaussianNoise, GaussianDropout, AlphaDropout (active in training)."""
import math

import numpy as np

from kgraph import ops, regularizers
from kgraph.layers.layer import Layer
from kgraph.random import generator

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _check_fraction(value, name, below_one=False):
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not number or not (0 <= value < 1 if below_one else 0 <= value <= 1):
        expected = "at least 0 and below 1 (a rate of 1 leaves no signal to rescale)" if below_one else \
            "between 0 and 1"
        raise ValueError(f"Invalid value received for argument `{name}`. Expected a float value {expected}. "
                         f"Received: {name}={value}")
    return float(value)


class _PassThrough(Layer):
    """A layer whose output has its input's shape and dtype, and that passes masks on."""

    _preserves_dtype = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class ActivityRegularization(_PassThrough):
    """Returns its input and adds ``(l1 * sum(|x|) + l2 * sum(x**2)) / batch_size`` to the layer's losses."""

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        # As Keras: the layer is the base class's activity regularization of an identity.
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.l1, self.l2 = self.activity_regularizer.l1, self.activity_regularizer.l2

    def call(self, inputs):
        return inputs

    def get_config(self):
        config = super().get_config()
        config.pop("activity_regularizer", None)
        config.update({"l1": self.l1, "l2": self.l2})
        return config


class _Noise(_PassThrough):
    """A layer that perturbs its input in training only and returns it unchanged otherwise."""

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None

    def _random(self):
        return self._rng or generator()

    def get_config(self):
        config = super().get_config()
        config["seed"] = self.seed
        return config


class GaussianNoise(_Noise):
    """Adds zero-centred Gaussian noise of standard deviation ``stddev`` in training."""

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.stddev = _check_fraction(stddev, "stddev")

    def call(self, inputs, training=False):
        if not training or self.stddev == 0:
            return inputs
        noise = self._random().normal(0.0, self.stddev, np.shape(inputs)).astype(inputs.dtype)
        return ops.add(inputs, noise)

    def get_config(self):
        config = super().get_config()
        config["stddev"] = self.stddev
        return config


class GaussianDropout(_Noise):
    """Multiplies by Gaussian noise of mean 1 and standard deviation ``sqrt(rate / (1 - rate))`` in training."""

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.rate = _check_fraction(rate, "rate", below_one=True)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        stddev = math.sqrt(self.rate / (1.0 - self.rate))
        noise = self._random().normal(1.0, stddev, np.shape(inputs)).astype(inputs.dtype)
        return ops.multiply(inputs, noise)

    def get_config(self):
        config = super().get_config()
        config["rate"] = self.rate
        return config


class AlphaDropout(_Noise):
    """Dropout that keeps the mean and variance of SELU activations: dropped units go to SELU's negative limit."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.rate = _check_fraction(rate, "rate", below_one=True)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        shape = np.shape(inputs)
        if self.noise_shape is not None:
            shape = tuple(s if n is None else n for s, n in zip(shape, self.noise_shape))
        kept = (self._random().random(shape) >= self.rate).astype(inputs.dtype)
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        dropped = np.asarray(alpha_p * (1 - kept), dtype=inputs.dtype)
        return ops.add(ops.multiply(ops.add(ops.multiply(inputs, kept), dropped), a), b)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "noise_shape": None if self.noise_shape is None else list(self.noise_shape)})
        return config
