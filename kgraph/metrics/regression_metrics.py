"""Regression metrics: running means of per-sample squared and absolute errors."""
import numpy as np

from kgraph.metrics.metric import MeanMetricWrapper, squeeze_or_expand_to_same_rank, to_numpy


def _aligned(y_true, y_pred):
    y_pred = to_numpy(y_pred, np.float64)
    y_true = to_numpy(y_true, np.float64)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    """Per-sample ``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _aligned(y_true, y_pred)
    return np.mean(np.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """Per-sample ``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _aligned(y_true, y_pred)
    return np.mean(np.abs(y_true - y_pred), axis=-1)


class MeanSquaredError(MeanMetricWrapper):
    """Running mean of the squared error."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    """Running mean of the absolute error."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)
