"""Accuracy metrics: per-sample match functions and their running means."""
import numpy as np

from kgraph.metrics.metric import squeeze_or_expand_to_same_rank, to_numpy
from kgraph.metrics.reduction_metrics import MeanOfFunction


def accuracy(y_true, y_pred):
    """1.0 where ``y_true == y_pred`` exactly, else 0.0."""
    y_pred = to_numpy(y_pred)
    y_true = to_numpy(y_true, y_pred.dtype)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    return (y_true == y_pred).astype(np.float64)


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """1.0 where ``(y_pred > threshold)`` equals the 0/1 label."""
    y_pred = to_numpy(y_pred)
    y_true = to_numpy(y_true)
    y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
    predicted = (y_pred > threshold).astype(y_true.dtype)
    return (y_true == predicted).astype(np.float64)


def categorical_accuracy(y_true, y_pred):
    """1.0 where the argmax of one-hot ``y_true`` equals the argmax of ``y_pred``."""
    y_true = np.argmax(to_numpy(y_true), axis=-1)
    y_pred = to_numpy(y_pred)
    return (y_true == np.argmax(y_pred, axis=-1)).astype(np.float64)


def _sparse_labels(y_true, y_pred):
    y_true = to_numpy(y_true)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = np.squeeze(y_true, -1)
    return y_true


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where the integer label (shape ``(batch,)`` or ``(batch, 1)``) equals the argmax of ``y_pred``."""
    y_pred = to_numpy(y_pred)
    y_true = _sparse_labels(y_true, y_pred)
    return (y_true == np.argmax(y_pred, axis=-1)).astype(np.float64)


def _in_top_k(labels, y_pred, k):
    # A label is in the top k when fewer than k scores beat it strictly, so
    # ties with the k-th score count as hits; a NaN score never does.
    y_pred = y_pred.reshape(-1, y_pred.shape[-1])
    labels = labels.reshape(-1).astype(np.int64)
    at_label = np.take_along_axis(y_pred, labels[:, None], axis=-1)
    at_label = np.where(np.isnan(at_label), -np.inf, at_label)
    rank = 1 + np.sum(y_pred > at_label, axis=-1)
    return (rank <= k).astype(np.float64)


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the argmax of one-hot ``y_true`` is among the ``k`` highest scores."""
    y_true = np.argmax(to_numpy(y_true), axis=-1)
    matches = _in_top_k(y_true, to_numpy(y_pred), k)
    return matches.reshape(y_true.shape)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5, from_sorted_ids=False):
    """1.0 where the integer label is among the ``k`` highest scores (or the first ``k`` of sorted class ids)."""
    y_pred = to_numpy(y_pred)
    y_true = _sparse_labels(y_true, y_pred)
    if from_sorted_ids:
        flat = y_true.reshape(-1, 1)
        matches = np.any(flat == y_pred.reshape(len(flat), -1)[:, :k], axis=1).astype(np.float64)
    else:
        matches = _in_top_k(y_true, y_pred, k)
    return matches.reshape(y_true.shape)


class Accuracy(MeanOfFunction):
    """How often predictions equal labels exactly."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanOfFunction):
    """How often ``y_pred > threshold`` matches the 0/1 label."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)
        self.threshold = threshold


class CategoricalAccuracy(MeanOfFunction):
    """How often the predicted class (argmax) matches the one-hot label."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanOfFunction):
    """How often the predicted class (argmax) matches the integer label."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)


class TopKCategoricalAccuracy(MeanOfFunction):
    """How often the one-hot label is among the ``k`` highest predictions."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(top_k_categorical_accuracy, name=name, dtype=dtype, k=k)
        self.k = k


class SparseTopKCategoricalAccuracy(MeanOfFunction):
    """How often the integer label is among the ``k`` highest predictions (or the first ``k`` sorted ids)."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None, from_sorted_ids=False):
        super().__init__(sparse_top_k_categorical_accuracy, name=name, dtype=dtype, k=k,
                         from_sorted_ids=from_sorted_ids)
        self.k = k
        self.from_sorted_ids = from_sorted_ids

    def get_config(self):
        config = {"name": self.name, "dtype": self.dtype, "k": self.k}
        if self.from_sorted_ids:
            config["from_sorted_ids"] = True
        return config
