"""Regression metrics: per-sample errors, their running means, RMSE and R2."""
import warnings

import numpy as np

from kgraph import backend
from kgraph.losses.functions import log_cosh, mean_absolute_percentage_error, mean_squared_logarithmic_error
from kgraph.metrics.metric import Metric, squeeze_or_expand_to_same_rank, to_numpy
from kgraph.metrics.reduction_metrics import Mean, MeanOfFunction


def aligned(y_true, y_pred):
    """``(y_true, y_pred)`` as float64 arrays of the same rank."""
    y_pred = to_numpy(y_pred, np.float64)
    y_true = to_numpy(y_true, np.float64)
    return squeeze_or_expand_to_same_rank(y_true, y_pred)


def mean_squared_error(y_true, y_pred):
    """Per-sample ``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = aligned(y_true, y_pred)
    return np.mean(np.square(y_true - y_pred), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """Per-sample ``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = aligned(y_true, y_pred)
    return np.mean(np.abs(y_true - y_pred), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Per-sample Huber loss: quadratic below ``delta``, linear above."""
    y_true, y_pred = aligned(y_true, y_pred)
    error = np.abs(y_pred - y_true)
    return np.mean(np.where(error <= delta, 0.5 * error**2, delta * error - 0.5 * delta**2), axis=-1)


def l2_normalize(x, axis=-1):
    """``x / max(norm(x), epsilon)`` along ``axis``."""
    inv_norm = 1.0 / np.sqrt(np.sum(np.square(x), axis=axis, keepdims=True))
    return x * np.minimum(inv_norm, 1.0 / backend.epsilon())


def cosine_similarity(y_true, y_pred, axis=-1):
    """Per-sample cosine of the angle between ``y_true`` and ``y_pred`` (1 when aligned)."""
    y_true, y_pred = aligned(y_true, y_pred)
    with np.errstate(divide="ignore"):
        return np.sum(l2_normalize(y_true, axis) * l2_normalize(y_pred, axis), axis=axis)


class MeanSquaredError(MeanOfFunction):
    """Running mean of the squared error."""

    def __init__(self, name="mean_squared_error", dtype=None):
        super().__init__(mean_squared_error, name=name, dtype=dtype)


class MeanAbsoluteError(MeanOfFunction):
    """Running mean of the absolute error."""

    def __init__(self, name="mean_absolute_error", dtype=None):
        super().__init__(mean_absolute_error, name=name, dtype=dtype)


class MeanAbsolutePercentageError(MeanOfFunction):
    """Running mean of the absolute percentage error."""

    def __init__(self, name="mean_absolute_percentage_error", dtype=None):
        super().__init__(mean_absolute_percentage_error, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(MeanOfFunction):
    """Running mean of the squared logarithmic error."""

    def __init__(self, name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(mean_squared_logarithmic_error, name=name, dtype=dtype)


class CosineSimilarity(MeanOfFunction):
    """Running mean of the cosine similarity along ``axis`` (Keras's config leaves ``axis`` out)."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name=name, dtype=dtype, axis=axis)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


class LogCoshError(MeanOfFunction):
    """Running mean of the log-cosh error."""

    def __init__(self, name="logcosh", dtype=None):
        super().__init__(log_cosh, name=name, dtype=dtype)


class RootMeanSquaredError(Mean):
    """Square root of the running (weighted) mean of the squared error."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name=name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = aligned(y_true, y_pred)
        super().update_state(np.square(y_pred - y_true), sample_weight=sample_weight)

    def result(self):
        return self._as_result(np.sqrt(super().result()))


class R2Score(Metric):
    """Coefficient of determination of ``(batch, outputs)`` data: per output or aggregated, adjusted if regressors."""

    AGGREGATIONS = (None, "uniform_average", "variance_weighted_average")

    def __init__(self, class_aggregation="uniform_average", num_regressors=0, name="r2_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if class_aggregation not in self.AGGREGATIONS:
            raise ValueError(
                f"Invalid value for argument `class_aggregation`. Expected one of {self.AGGREGATIONS}. "
                f"Received: class_aggregation={class_aggregation}"
            )
        if num_regressors < 0:
            raise ValueError(
                f"Invalid value for argument `num_regressors`. Expected a value >= 0. Received: "
                f"num_regressors={num_regressors}"
            )
        self.class_aggregation = class_aggregation
        self.num_regressors = num_regressors
        self.num_samples = self.add_variable(shape=(), initializer="zeros", name="num_samples")
        self._built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError(
                "R2Score expects 2D inputs with shape (batch_size, output_dim). Received input shapes: "
                f"y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}."
            )
        shape = (y_pred_shape[-1],)
        self.squared_sum = self.add_variable(name="squared_sum", shape=shape, initializer="zeros")
        self.sum = self.add_variable(name="sum", shape=shape, initializer="zeros")
        self.total_mse = self.add_variable(name="residual", shape=shape, initializer="zeros")
        self.count = self.add_variable(name="count", shape=shape, initializer="zeros")
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = aligned(y_true, y_pred)
        if not self._built:
            self._build(y_true.shape, y_pred.shape)
        weight = np.asarray(1.0 if sample_weight is None else to_numpy(sample_weight, np.float64))
        if weight.ndim == 1:
            weight = weight[:, None]
        weight = np.broadcast_to(weight, y_true.shape)
        weighted = y_true * weight
        self.sum.assign(self.sum.value + np.sum(weighted, axis=0))
        self.squared_sum.assign(self.squared_sum.value + np.sum(y_true * weighted, axis=0))
        self.total_mse.assign(self.total_mse.value + np.sum((y_true - y_pred) ** 2 * weight, axis=0))
        self.count.assign(self.count.value + np.sum(weight, axis=0))
        self.num_samples.assign(self.num_samples.value + y_true.size)

    def _adjusted(self, r2):
        n, p = float(self.num_samples.value), self.num_regressors
        if p > n - 1:
            warnings.warn("More independent predictors than datapoints in adjusted R2 score. "
                          "Falling back to standard R2 score.", stacklevel=3)
        elif p == n - 1:
            warnings.warn("Division by zero in Adjusted R2 score. Falling back to standard R2 score.", stacklevel=3)
        else:
            r2 = 1.0 - (1.0 - r2) * (n - 1.0) / (n - p - 1.0)
        return r2

    def result(self):
        sums, count = self.sum.value.astype(np.float64), self.count.value.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 before any update gives NaN, as in Keras
            total = self.squared_sum.value - sums * (sums / count)
            raw = 1.0 - self.total_mse.value / total
        raw = np.where(np.isinf(raw), 0.0, raw)
        if self.class_aggregation == "uniform_average":
            r2 = np.mean(raw)
        elif self.class_aggregation == "variance_weighted_average":
            r2 = np.sum(total * raw) / np.sum(total)
        else:
            r2 = raw
        if self.num_regressors != 0:
            r2 = self._adjusted(r2)
        return self._as_result(r2)

    def get_config(self):
        return {**super().get_config(), "class_aggregation": self.class_aggregation,
                "num_regressors": self.num_regressors}
