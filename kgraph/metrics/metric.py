"""Stateful metrics in plain NumPy: the ``Metric`` base, ``Sum``, ``Mean`` and ``MeanMetricWrapper``.

Metrics never touch a ``GradientTape``: they accumulate float64 NumPy state
between ``reset_state()`` calls and report it through ``result()``.
"""
import re

import numpy as np

from kgraph import backend


def _snake_case(name):
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def to_numpy(x, dtype=None):
    """Return ``x`` (array, Variable, list or number) as an ndarray."""
    if hasattr(x, "value") and not isinstance(x, np.ndarray):
        x = x.value
    return np.asarray(x, dtype=dtype)


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """NumPy twin of the losses' rank alignment on a trailing unit axis."""
    r1, r2 = x1.ndim, x2.ndim
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = x2[..., None]
        else:
            x1 = np.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = x1[..., None]
        else:
            x2 = np.squeeze(x2, -1)
    return x1, x2


def divide_no_nan(numerator, denominator):
    """Elementwise ``numerator / denominator`` with 0 where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def reduce_to_samplewise_values(values, sample_weight, reduce_fn):
    """Weight ``values`` and reduce them to one value per sample, like Keras.

    Returns ``(values, sample_weight)``; ``sample_weight`` is reduced to one
    weight per sample as well (or stays ``None``).
    """
    values = to_numpy(values, np.float64)
    if sample_weight is not None:
        sample_weight = to_numpy(sample_weight, np.float64)
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        weight_ndim = sample_weight.ndim
        if values.ndim > weight_ndim:
            values = reduce_fn(values, axis=tuple(range(weight_ndim, values.ndim)))
        sample_weight = np.broadcast_to(sample_weight, values.shape)
        values = values * sample_weight
        if weight_ndim > 1:
            sample_weight = reduce_fn(sample_weight, axis=tuple(range(1, weight_ndim)))
    if values.ndim > 1:
        values = reduce_fn(values, axis=tuple(range(1, values.ndim)))
    return values, sample_weight


class Metric:
    """Base class: subclasses implement ``update_state``, ``result`` and ``reset_state``.

    Calling a metric updates it and returns the new result.
    """

    def __init__(self, name=None, dtype=None):
        self.name = name or _snake_case(type(self).__name__)
        self.dtype = dtype or backend.floatx()

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state().")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result().")

    def reset_state(self):
        raise NotImplementedError(f"{type(self).__name__} must implement reset_state().")

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


class Sum(Metric):
    """The (weighted) sum of all values seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.reset_state()

    def update_state(self, values, sample_weight=None):
        values, _ = reduce_to_samplewise_values(values, sample_weight, np.sum)
        self.total += float(np.sum(values))

    def result(self):
        return self.total

    def reset_state(self):
        self.total = 0.0


class Mean(Metric):
    """The (weighted) mean of all values seen: ``total / count``."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.reset_state()

    def update_state(self, values, sample_weight=None):
        values, sample_weight = reduce_to_samplewise_values(values, sample_weight, np.mean)
        self.total += float(np.sum(values))
        if sample_weight is not None:
            self.count += float(np.sum(sample_weight))
        else:
            self.count += values.shape[0] if values.ndim >= 1 else 1

    def result(self):
        return self.total / self.count if self.count else 0.0

    def reset_state(self):
        self.total = 0.0
        self.count = 0.0


class MeanMetricWrapper(Mean):
    """The running mean of a per-sample function ``fn(y_true, y_pred, **kwargs)``.

    fn: must be a module-level function so that the metric pickles.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        values = self._fn(y_true, y_pred, **self._fn_kwargs)
        super().update_state(values, sample_weight=sample_weight)

    def get_config(self):
        config = super().get_config()
        if type(self) is MeanMetricWrapper:
            config["fn"] = getattr(self._fn, "__name__", None)
        config.update(self._fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("fn"), str):
            from kgraph.metrics import get_function
            config["fn"] = get_function(config["fn"])
        return cls(**config)
