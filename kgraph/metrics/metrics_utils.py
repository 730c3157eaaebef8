"""Shared counting for the confusion-matrix metrics: thresholds, weighted tp/fp/tn/fn, class confusion matrices."""
import numpy as np

from kgraph import backend
from kgraph.metrics.metric import squeeze_or_expand_to_same_rank, to_numpy

# The score given to entries outside the top k, below any threshold.
NEG_INF = -1e10


def parse_init_thresholds(thresholds, default_threshold=0.5):
    """The thresholds as a list (``[default_threshold]`` for ``None``), each checked to lie in [0, 1]."""
    if thresholds is None:
        return [default_threshold]
    thresholds = list(thresholds) if isinstance(thresholds, (list, tuple, np.ndarray)) else [thresholds]
    invalid = [t for t in thresholds if t is None or t < 0 or t > 1]
    if invalid:
        raise ValueError(f"Threshold values must be in [0, 1]. Received: {invalid}")
    return thresholds


def is_evenly_distributed_thresholds(thresholds):
    """True for at least 3 thresholds spaced evenly from 0 to 1 (within epsilon): Keras's bucketed fast path."""
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
    return np.where(keep, x, np.asarray(NEG_INF, x.dtype))


def _thresholds_below(y_pred, thresholds, evenly_distributed):
    """Per prediction, how many thresholds it exceeds (it is positive at those, the lowest), and their order."""
    # Evenly distributed thresholds count as Keras's buckets do: predictions clipped to [0, 1], the bucket
    # ceil(p * (n - 1)) found in float32, and every prediction above a first threshold below 0.
    n = len(thresholds)
    if evenly_distributed:
        above = np.ceil(np.clip(y_pred, 0.0, 1.0) * np.float32(n - 1))
        if thresholds[0] < 0.0 or thresholds[-1] > 1.0:
            above = np.maximum(above, 1.0)
        return np.where(np.isnan(above), 0, above).astype(np.int64), np.arange(n)
    order = np.argsort(thresholds, kind="stable")
    above = np.searchsorted(thresholds[order], y_pred, side="left")
    above[np.isnan(y_pred)] = 0
    return above, order


def _weights(sample_weight, y_true, dtype):
    """Sample weights given a trailing axis, aligned to ``y_true`` as Keras aligns them (or None)."""
    if sample_weight is None:
        return None
    weights = to_numpy(sample_weight, dtype)[..., None]
    _, weights = squeeze_or_expand_to_same_rank(y_true, weights, expand_rank_1=False)
    return weights


def confusion_counts(y_true, y_pred, thresholds, sample_weight=None, top_k=None, class_id=None, multi_label=False,
                     label_weights=None, thresholds_distributed_evenly=False, dtype="float32"):
    """Weighted ``(tp, fp, tn, fn)`` per threshold (and label if ``multi_label``) of ``y_pred > threshold`` in dtype."""
    # Any non-zero label is positive; dtype is the state's, in which predictions meet the thresholds.
    y_pred = to_numpy(y_pred, dtype)
    y_true = to_numpy(y_true, dtype)
    y_pred, y_true = squeeze_or_expand_to_same_rank(y_pred, y_true)
    weights = _weights(sample_weight, y_true, dtype)
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        if y_pred.ndim == 1:
            raise ValueError(
                "When class_id is provided, y_pred must be a 2D array with shape (num_samples, num_classes), "
                f"found shape: {y_pred.shape}"
            )
        y_true = y_true[..., class_id, None]
        y_pred = y_pred[..., class_id, None]
    weights = np.ones(y_pred.shape) if weights is None else np.broadcast_to(weights, y_pred.shape)
    if label_weights is not None:
        weights = weights * np.broadcast_to(to_numpy(label_weights, np.float64), y_pred.shape)
    positive = np.broadcast_to(y_true != 0, y_pred.shape)
    if multi_label and y_pred.ndim != 2:
        raise ValueError(f"multi_label=True needs y_pred of rank 2, received y_pred.shape={y_pred.shape}.")
    num_labels = y_pred.shape[1] if multi_label else 1
    y_pred = y_pred.reshape(-1, num_labels)
    positive = positive.reshape(-1, num_labels)
    weights = weights.reshape(-1, num_labels).astype(np.float64)

    thresholds = np.asarray(thresholds, dtype=dtype)
    n = len(thresholds)
    above, order = _thresholds_below(y_pred, thresholds, thresholds_distributed_evenly)
    bins = (above + (n + 1) * np.arange(num_labels)).ravel()
    size = (n + 1) * num_labels
    pos_hist = np.bincount(bins, weights=np.where(positive, weights, 0.0).ravel(), minlength=size)
    neg_hist = np.bincount(bins, weights=np.where(positive, 0.0, weights).ravel(), minlength=size)
    pos_hist, neg_hist = pos_hist.reshape(num_labels, n + 1), neg_hist.reshape(num_labels, n + 1)

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


def update_confusion_matrix_variables(variables_to_update, y_true, y_pred, thresholds, **options):
    """Add this batch's counts (``confusion_counts``'s options) to the Variables of ``{"tp"|"fp"|"tn"|"fn": var}``."""
    dtype = next(iter(variables_to_update.values())).dtype
    counts = dict(zip(("tp", "fp", "tn", "fn"), confusion_counts(y_true, y_pred, thresholds, dtype=dtype, **options)))
    for key, variable in variables_to_update.items():
        variable.assign(variable.value + counts[key])


def confusion_matrix(labels, predictions, num_classes, weights=None, dtype="int32"):
    """The ``(num_classes, num_classes)`` matrix of summed ``weights`` at (label, prediction), in ``dtype``."""
    labels = np.asarray(labels).astype(np.int64).ravel()
    predictions = np.asarray(predictions).astype(np.int64).ravel()
    values = np.ones(labels.shape, dtype) if weights is None else np.broadcast_to(weights, labels.shape).astype(dtype)
    matrix = np.zeros((num_classes, num_classes), dtype=dtype)
    np.add.at(matrix, (labels, predictions), values)
    return matrix
