"""Correlation metrics: running means of per-sample Pearson and concordance correlations."""
import numpy as np

from kgraph import backend
from kgraph.metrics.reduction_metrics import MeanOfFunction
from kgraph.metrics.regression_metrics import aligned


def pearson_correlation(y_true, y_pred, axis=-1):
    """Per-sample Pearson correlation coefficient along ``axis``."""
    y_true, y_pred = aligned(y_true, y_pred)
    y_true = y_true - np.mean(y_true, axis=axis, keepdims=True)
    y_pred = y_pred - np.mean(y_pred, axis=axis, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        y_true = y_true / np.std(y_true, axis=axis, keepdims=True)
        y_pred = y_pred / np.std(y_pred, axis=axis, keepdims=True)
    return np.mean(y_true * y_pred, axis=axis)


def concordance_correlation(y_true, y_pred, axis=-1):
    """Per-sample concordance correlation coefficient (Lin) along ``axis``."""
    y_true, y_pred = aligned(y_true, y_pred)
    true_mean = np.mean(y_true, axis=axis, keepdims=True)
    pred_mean = np.mean(y_pred, axis=axis, keepdims=True)
    true_var = np.var(y_true - true_mean, axis=axis, keepdims=True)
    pred_var = np.var(y_pred - pred_mean, axis=axis, keepdims=True)
    # Keras centres y_true on the prediction's mean here; kept for identical values.
    covariance = (y_true - pred_mean) * (y_pred - pred_mean)
    norm = true_var + pred_var + np.square(true_mean - pred_mean)
    return np.mean(2.0 * covariance / (norm + backend.epsilon()), axis=axis)


class PearsonCorrelation(MeanOfFunction):
    """Running mean of the per-sample Pearson correlation."""

    def __init__(self, name="pearson_correlation", dtype=None, axis=-1):
        super().__init__(pearson_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis


class ConcordanceCorrelation(MeanOfFunction):
    """Running mean of the per-sample concordance correlation."""

    def __init__(self, name="concordance_correlation", dtype=None, axis=-1):
        super().__init__(concordance_correlation, name=name, dtype=dtype, axis=axis)
        self.axis = axis
