"""Probabilistic metrics: running means of crossentropies, KL divergence and Poisson deviance."""
import numpy as np

from kgraph import backend
from kgraph.losses.functions import poisson
from kgraph.metrics.metric import squeeze_or_expand_to_same_rank, to_numpy
from kgraph.metrics.reduction_metrics import MeanOfFunction


def _log_softmax(x, axis):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _clipped_probabilities(y_pred, axis):
    """Scores normalized to sum to 1 along ``axis`` and clipped to ``[epsilon, 1 - epsilon]``."""
    eps = backend.epsilon()
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(y_pred / np.sum(y_pred, axis=axis, keepdims=True), eps, 1.0 - eps)


def _elementwise_binary_crossentropy(y_true, y_pred, from_logits):
    if from_logits:
        return np.maximum(y_pred, 0.0) - y_pred * y_true + np.logaddexp(0.0, -np.abs(y_pred))
    eps = backend.epsilon()
    y_pred = np.clip(y_pred, eps, 1.0 - eps)
    return -(y_true * np.log(y_pred) + (1.0 - y_true) * np.log1p(-y_pred))


def _smoothed(y_true, label_smoothing, num_classes):
    return y_true * (1.0 - label_smoothing) + label_smoothing / num_classes if label_smoothing else y_true


def _binary_inputs(y_true, y_pred, label_smoothing):
    y_pred = to_numpy(y_pred, np.float64)
    y_true, y_pred = squeeze_or_expand_to_same_rank(to_numpy(y_true, np.float64), y_pred)
    return _smoothed(y_true, label_smoothing, 2.0), y_pred


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample mean binary crossentropy along ``axis``; labels smoothed towards 0.5."""
    y_true, y_pred = _binary_inputs(y_true, y_pred, label_smoothing)
    return np.mean(_elementwise_binary_crossentropy(y_true, y_pred, from_logits), axis=axis)


def _categorical_inputs(y_true, y_pred, label_smoothing, axis):
    if isinstance(axis, bool):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type {type(axis)}")
    y_pred = to_numpy(y_pred, np.float64)
    y_true = to_numpy(y_true, np.float64)
    return _smoothed(y_true, label_smoothing, y_true.shape[-1]), y_pred


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample crossentropy of one-hot (or soft) labels along ``axis``."""
    y_true, y_pred = _categorical_inputs(y_true, y_pred, label_smoothing, axis)
    log_prob = _log_softmax(y_pred, axis) if from_logits else np.log(_clipped_probabilities(y_pred, axis))
    return -np.sum(y_true * log_prob, axis=axis)


def _sparse_labels(y_true, y_pred, axis):
    y_true = to_numpy(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[axis] == 1:
        y_true = np.squeeze(y_true, axis)
    return y_true


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """Per-sample crossentropy of integer labels; entries labelled ``ignore_class`` give 0."""
    y_pred = to_numpy(y_pred, np.float64)
    y_true = _sparse_labels(y_true, y_pred, axis)
    valid = None
    if ignore_class is not None:
        valid = y_true != ignore_class
        y_true = np.where(valid, y_true, 0)
        y_pred = np.where(np.expand_dims(valid, axis), y_pred, 0.0)
    log_prob = _log_softmax(y_pred, axis) if from_logits else np.log(_clipped_probabilities(y_pred, axis))
    labels = np.expand_dims(y_true.astype(np.int64), axis)
    result = -np.squeeze(np.take_along_axis(log_prob, labels, axis=axis), axis)
    return result if valid is None else np.where(valid, result, 0.0)


def kl_divergence(y_true, y_pred):
    """Per-sample ``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[epsilon, 1]``."""
    eps = backend.epsilon()
    y_pred = np.clip(to_numpy(y_pred, np.float64), eps, 1.0)
    y_true = np.clip(to_numpy(y_true, np.float64), eps, 1.0)
    return np.sum(y_true * np.log(y_true / y_pred), axis=-1)


class KLDivergence(MeanOfFunction):
    """Running mean of the Kullback-Leibler divergence."""

    def __init__(self, name="kl_divergence", dtype=None):
        super().__init__(kl_divergence, name=name, dtype=dtype)


class Poisson(MeanOfFunction):
    """Running mean of the Poisson deviance ``y_pred - y_true * log(y_pred)``."""

    def __init__(self, name="poisson", dtype=None):
        super().__init__(poisson, name=name, dtype=dtype)


class BinaryCrossentropy(MeanOfFunction):
    """Running mean of the binary crossentropy."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False, label_smoothing=0):
        super().__init__(binary_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing


class CategoricalCrossentropy(MeanOfFunction):
    """Running mean of the categorical crossentropy of one-hot labels."""

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False, label_smoothing=0, axis=-1):
        super().__init__(categorical_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class SparseCategoricalCrossentropy(MeanOfFunction):
    """Running mean of the crossentropy of integer labels; ``ignore_class`` entries weigh 0 when weighted."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False, ignore_class=None,
                 axis=-1):
        super().__init__(sparse_categorical_crossentropy, name=name, dtype=dtype, from_logits=from_logits,
                         ignore_class=ignore_class, axis=axis)
        self.from_logits = from_logits
        self.ignore_class = ignore_class
        self.axis = axis

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.ignore_class is not None and sample_weight is not None:
            # Keras masks the ignored entries out of the weights (and only there: unweighted, they count as 0).
            valid = _sparse_labels(y_true, to_numpy(y_pred), self.axis) != self.ignore_class
            valid, sample_weight = squeeze_or_expand_to_same_rank(valid.astype(np.float64),
                                                                  to_numpy(sample_weight, np.float64))
            sample_weight = sample_weight * valid
        super().update_state(y_true, y_pred, sample_weight=sample_weight)
