"""Hinge metrics: running means of the hinge, squared hinge and categorical hinge losses."""
import numpy as np

from kgraph.metrics.metric import to_numpy
from kgraph.metrics.reduction_metrics import MeanOfFunction


def _margins(y_true, y_pred):
    """``1 - y_true * y_pred`` floored at 0, with 0/1 labels first mapped to -1/1."""
    y_pred = to_numpy(y_pred, np.float64)
    y_true = to_numpy(y_true, np.float64)
    if np.all((y_true == 0) | (y_true == 1)):
        y_true = 2.0 * y_true - 1.0
    return np.maximum(1.0 - y_true * y_pred, 0.0)


def hinge(y_true, y_pred):
    """Per-sample ``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; labels -1/1 (or 0/1)."""
    return np.mean(_margins(y_true, y_pred), axis=-1)


def squared_hinge(y_true, y_pred):
    """Per-sample ``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)``; labels -1/1 (or 0/1)."""
    return np.mean(np.square(_margins(y_true, y_pred)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """Per-sample ``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` for one-hot labels."""
    y_pred = to_numpy(y_pred, np.float64)
    y_true = to_numpy(y_true, np.float64)
    positive = np.sum(y_true * y_pred, axis=-1)
    negative = np.max((1.0 - y_true) * y_pred, axis=-1)
    return np.maximum(negative - positive + 1.0, 0.0)


class Hinge(MeanOfFunction):
    """Running mean of the hinge loss."""

    def __init__(self, name="hinge", dtype=None):
        super().__init__(hinge, name=name, dtype=dtype)


class SquaredHinge(MeanOfFunction):
    """Running mean of the squared hinge loss."""

    def __init__(self, name="squared_hinge", dtype=None):
        super().__init__(squared_hinge, name=name, dtype=dtype)


class CategoricalHinge(MeanOfFunction):
    """Running mean of the categorical hinge loss."""

    def __init__(self, name="categorical_hinge", dtype=None):
        super().__init__(categorical_hinge, name=name, dtype=dtype)
