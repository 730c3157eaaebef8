"""Thresholded confusion-matrix metrics: Precision, Recall and AUC."""
import numpy as np

from kgraph import backend
from kgraph.metrics.metric import Metric, divide_no_nan, squeeze_or_expand_to_same_rank, to_numpy

# The score given to entries outside the top k, below any threshold.
NEG_INF = -1e10

CURVES = ("ROC", "PR")
SUMMATION_METHODS = ("interpolation", "minoring", "majoring")


def _parse_thresholds(thresholds, default):
    if thresholds is None:
        return [default]
    values = [float(t) for t in np.atleast_1d(np.asarray(thresholds, dtype=np.float64))]
    if any(not 0.0 <= t <= 1.0 for t in values):
        raise ValueError(f"Threshold values must be in [0, 1]. Received: thresholds={thresholds!r}")
    return values


def is_evenly_distributed(thresholds):
    n = len(thresholds)
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(thresholds, even, atol=backend.epsilon()))


def _filter_top_k(x, k):
    """Keep the ``k`` highest scores of the last axis; set the rest to ``NEG_INF``."""
    top = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    keep = np.zeros(x.shape, dtype=bool)
    np.put_along_axis(keep, top, True, axis=-1)
    return np.where(keep, x, NEG_INF)


def sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def confusion_counts(
    y_true,
    y_pred,
    thresholds,
    sample_weight=None,
    top_k=None,
    class_id=None,
    multi_label=False,
    label_weights=None,
    clip_predictions=False,
    dtype="float32",
):
    """Weighted ``(tp, fp, tn, fn)`` counting a prediction positive when ``y_pred > threshold``.

    Each count has shape ``(len(thresholds),)``, or ``(len(thresholds), labels)``
    when ``multi_label``. Any non-zero label is positive.
    dtype: the precision in which predictions are compared with thresholds.
    """
    y_pred = to_numpy(y_pred, np.float64)
    y_true = to_numpy(y_true, np.float64)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    weights = None
    if sample_weight is not None:
        weights = to_numpy(sample_weight, np.float64)[..., None]
        if weights.ndim == y_true.ndim + 1 and weights.shape[-1] == 1:
            weights = np.squeeze(weights, -1)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim == 1:
            raise ValueError(
                "When class_id is provided, y_pred must have shape (num_samples, num_classes). "
                f"Received y_pred.shape={y_pred.shape}."
            )
        y_true = y_true[..., class_id, None]
        y_pred = y_pred[..., class_id, None]
    if clip_predictions:
        y_pred = np.clip(y_pred, 0.0, 1.0)
    weights = np.ones(y_pred.shape) if weights is None else np.broadcast_to(weights, y_pred.shape)
    if label_weights is not None:
        weights = weights * np.broadcast_to(np.asarray(label_weights, np.float64), y_pred.shape)
    positive = np.broadcast_to(y_true != 0, y_pred.shape)

    if multi_label:
        if y_pred.ndim != 2:
            raise ValueError(
                f"multi_label=True needs y_pred of rank 2, received y_pred.shape={y_pred.shape}."
            )
        num_labels = y_pred.shape[1]
    else:
        num_labels = 1
    y_pred = y_pred.reshape(-1, num_labels)
    positive = positive.reshape(-1, num_labels)
    weights = weights.reshape(-1, num_labels)

    thresholds = np.asarray(thresholds, dtype=dtype)
    order = np.argsort(thresholds, kind="stable")
    n = len(thresholds)
    # Number of thresholds strictly below each prediction: it is positive for
    # exactly those thresholds. NaN predictions are positive for none.
    above = np.searchsorted(thresholds[order], y_pred.astype(dtype), side="left")
    above[np.isnan(y_pred)] = 0
    bins = (above + (n + 1) * np.arange(num_labels)).ravel()
    size = (n + 1) * num_labels
    pos_weights = np.where(positive, weights, 0.0).ravel()
    neg_weights = np.where(positive, 0.0, weights).ravel()
    pos_hist = np.bincount(bins, weights=pos_weights, minlength=size).reshape(num_labels, n + 1)
    neg_hist = np.bincount(bins, weights=neg_weights, minlength=size).reshape(num_labels, n + 1)

    def at_or_above(hist):
        return np.cumsum(hist[:, ::-1], axis=1)[:, ::-1][:, 1:]

    def below(hist):
        return np.cumsum(hist, axis=1)[:, :n]

    counts = []
    for sorted_count in (at_or_above(pos_hist), at_or_above(neg_hist), below(neg_hist), below(pos_hist)):
        count = np.empty_like(sorted_count)
        count[:, order] = sorted_count
        counts.append(count.T if multi_label else count[0])
    return tuple(counts)


class _ThresholdMetric(Metric):
    """Precision/Recall state: true positives plus one kind of error per threshold."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        self.thresholds = _parse_thresholds(thresholds, 0.5 if top_k is None else NEG_INF)
        self.reset_state()

    def reset_state(self):
        self.true_positives = np.zeros(len(self.thresholds))
        self.errors = np.zeros(len(self.thresholds))

    def update_state(self, y_true, y_pred, sample_weight=None):
        tp, fp, _, fn = confusion_counts(
            y_true,
            y_pred,
            self.thresholds,
            sample_weight=sample_weight,
            top_k=self.top_k,
            class_id=self.class_id,
            dtype=self.dtype,
        )
        self.true_positives += tp
        self.errors += self._errors(fp, fn)

    def result(self):
        value = divide_no_nan(self.true_positives, self.true_positives + self.errors)
        return float(value[0]) if len(self.thresholds) == 1 else value

    def get_config(self):
        return {
            **super().get_config(),
            "thresholds": self.init_thresholds,
            "top_k": self.top_k,
            "class_id": self.class_id,
        }


class Precision(_ThresholdMetric):
    """``tp / (tp + fp)`` at each threshold (default 0.5).

    top_k: only the k highest scores of each sample count as predicted positive.
    class_id: restrict the metric to one column of ``(batch, classes)`` inputs.
    """

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="precision", dtype=None):
        super().__init__(thresholds, top_k, class_id, name=name, dtype=dtype)

    @staticmethod
    def _errors(false_positives, false_negatives):
        return false_positives

    @property
    def false_positives(self):
        return self.errors


class Recall(_ThresholdMetric):
    """``tp / (tp + fn)`` at each threshold (default 0.5); see ``Precision`` for the arguments."""

    def __init__(self, thresholds=None, top_k=None, class_id=None, name="recall", dtype=None):
        super().__init__(thresholds, top_k, class_id, name=name, dtype=dtype)

    @staticmethod
    def _errors(false_positives, false_negatives):
        return false_negatives

    @property
    def false_negatives(self):
        return self.errors
