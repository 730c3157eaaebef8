"""The random generator behind weight init, shuffling and dropout, and Keras's ``keras.random`` functions."""
import random as _py_random

import numpy as np

_generator = np.random.default_rng()


def generator():
    """Return kgraph's global ``numpy.random.Generator``."""
    return _generator


def set_seed(seed):
    """Reseed kgraph's generator (and Python's and NumPy's legacy ones)."""
    global _generator
    _generator = np.random.default_rng(seed)
    _py_random.seed(seed)
    np.random.seed(seed % (2**32))


class SeedGenerator:
    """Keras's SeedGenerator: a generator of its own, so a layer's draws repeat when seeded."""

    def __init__(self, seed=None, name=None):
        from kgraph.backend.variable import Variable
        self.name = name or "seed_generator"
        self._rng = np.random.default_rng(seed)
        # As Keras's: a non-trainable `state` variable [seed, draws so far], listed in its layer's `variables`
        # (not its weights). kgraph's draws come from a NumPy generator; the state counts them.
        self.state = Variable(np.array([0 if seed is None else int(seed) % 2**32, 0], dtype="uint32"),
                              trainable=False, name="seed_generator_state", dtype="uint32")

    def next(self):
        self.state.assign(self.state.numpy() + np.array([0, 1], dtype="uint32"))
        return self._rng


def _source(seed):
    """The generator for a ``seed`` argument: an int (a fresh seeded one), a SeedGenerator, or None (global)."""
    if seed is None:
        return _generator
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return np.random.default_rng(int(seed))
    raise ValueError(f"`seed` must be None, an int or a kgraph.random.SeedGenerator. Received: seed={seed!r}")


def _shape(shape):
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if any(d is None for d in shape):
        raise ValueError(f"Random values need a fully known shape. Received: shape={shape}")
    return tuple(int(d) for d in shape)


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Samples from a normal distribution."""
    return (_source(seed).standard_normal(_shape(shape)) * stddev + mean).astype(dtype or "float32")


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Samples from a uniform distribution on ``[minval, maxval)``."""
    return _source(seed).uniform(minval, maxval, _shape(shape)).astype(dtype or "float32")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal samples redrawn until within two standard deviations of the mean."""
    rng, size = _source(seed), _shape(shape)
    values = rng.standard_normal(size)
    outside = np.abs(values) > 2.0
    while outside.any():
        values[outside] = rng.standard_normal(int(outside.sum()))
        outside = np.abs(values) > 2.0
    return (values * stddev + mean).astype(dtype or "float32")


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers drawn uniformly from ``[minval, maxval)``."""
    return _source(seed).integers(minval, maxval, _shape(shape)).astype(dtype)


def shuffle(x, axis=0, seed=None):
    """``x`` with its entries along ``axis`` in a random order."""
    x = np.asarray(x)
    return np.take(x, _source(seed).permutation(x.shape[axis]), axis=axis)


def dropout(inputs, rate, noise_shape=None, seed=None):
    """Zeroes entries with probability ``rate`` and scales the rest by ``1 / (1 - rate)`` (differentiable)."""
    from kgraph import ops
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"`rate` must be in [0, 1). Received: rate={rate!r}")
    shape = np.shape(inputs) if noise_shape is None else tuple(noise_shape)
    keep = (_source(seed).random(shape) >= rate).astype(np.asarray(inputs).dtype) / (1.0 - rate)
    return ops.multiply(inputs, keep)


def categorical(logits, num_samples, dtype="int32", seed=None):
    """For each row of ``logits``, ``num_samples`` class indices drawn from its softmax."""
    logits = np.asarray(logits, dtype="float64")
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    rng = _source(seed)
    return np.stack([rng.choice(p.shape[-1], size=num_samples, p=p) for p in probabilities]).astype(dtype)


def _float_dtype(dtype):
    from kgraph.backend.settings import floatx, standardize_dtype
    return floatx() if dtype is None else standardize_dtype(dtype)


def _parameter(value, shape, name):
    """``value`` broadcast to ``shape`` (a scalar or an array of parameters, one per sample)."""
    value = np.asarray(value, dtype="float64")
    try:
        return np.broadcast_to(value, shape)
    except ValueError:
        raise ValueError(f"`{name}` must broadcast to the sample shape {shape}. Received: {name} with shape "
                         f"{value.shape}") from None


def gamma(shape, alpha, dtype=None, seed=None):
    """Samples from the Gamma distribution of shape parameter ``alpha`` (and scale 1)."""
    size = _shape(shape)
    alpha = _parameter(alpha, size, "alpha")
    if np.any(alpha <= 0):
        raise ValueError(f"`alpha` must be positive. Received: alpha={alpha.min() if alpha.size else alpha}")
    return _source(seed).standard_gamma(alpha, size).astype(_float_dtype(dtype))


def binomial(shape, counts, probabilities, dtype=None, seed=None):
    """Numbers of successes in ``counts`` trials of success probability ``probabilities`` (as floats by default)."""
    size = _shape(shape)
    counts = _parameter(counts, size, "counts")
    probabilities = _parameter(probabilities, size, "probabilities")
    if np.any(counts < 0) or np.any(counts != np.floor(counts)):
        raise ValueError("`counts` must be non-negative whole numbers of trials.")
    if np.any((probabilities < 0) | (probabilities > 1)):
        raise ValueError("`probabilities` must lie in [0, 1].")
    return _source(seed).binomial(counts.astype("int64"), probabilities, size).astype(_float_dtype(dtype))


def beta(shape, alpha, beta, dtype=None, seed=None):
    """Samples from the Beta distribution of parameters ``alpha`` and ``beta``."""
    size = _shape(shape)
    a, b = _parameter(alpha, size, "alpha"), _parameter(beta, size, "beta")
    if np.any(a <= 0) or np.any(b <= 0):
        raise ValueError("`alpha` and `beta` must be positive.")
    return _source(seed).beta(a, b, size).astype(_float_dtype(dtype))
