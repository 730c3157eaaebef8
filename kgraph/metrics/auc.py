"""AUC: area under the ROC or precision-recall curve, from thresholded counts."""
import numpy as np

from kgraph import backend
from kgraph.metrics.confusion_metrics import CURVES, SUMMATION_METHODS, confusion_counts, is_evenly_distributed, sigmoid
from kgraph.metrics.metric import Metric, divide_no_nan, to_numpy


class AUC(Metric):
    """Approximate AUC from confusion counts at ``num_thresholds`` thresholds.

    num_thresholds: thresholds evenly spaced over [0, 1] (endpoints widened
        by epsilon so scores of exactly 0 and 1 are handled).
    curve: ``"ROC"`` or ``"PR"``.
    summation_method: ``"interpolation"`` (trapezoids; for PR the
        Davis & Goadrich interpolation), ``"minoring"`` or ``"majoring"``.
    thresholds: explicit thresholds in [0, 1]; overrides ``num_thresholds``.
    multi_label: compute one AUC per label column and average them.
    label_weights: per-label weights, for the average when ``multi_label``,
        else for the individual predictions.
    from_logits: apply a sigmoid to ``y_pred`` first.
    """

    def __init__(
        self,
        num_thresholds=200,
        curve="ROC",
        summation_method="interpolation",
        name="auc",
        dtype=None,
        thresholds=None,
        multi_label=False,
        num_labels=None,
        label_weights=None,
        from_logits=False,
    ):
        super().__init__(name=name, dtype=dtype)
        if str(curve).upper() not in CURVES:
            raise ValueError(f"Invalid curve {curve!r}. Expected one of {list(CURVES)}.")
        if str(summation_method).lower() not in SUMMATION_METHODS:
            raise ValueError(
                f"Invalid summation_method {summation_method!r}. Expected one of {list(SUMMATION_METHODS)}."
            )
        self.curve = str(curve).upper()
        self.summation_method = str(summation_method).lower()
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(float(t) for t in np.atleast_1d(thresholds))
            self.num_thresholds = len(inner) + 2
            self._thresholds_distributed_evenly = is_evenly_distributed([0.0] + inner + [1.0])
        else:
            if int(num_thresholds) <= 1:
                raise ValueError(f"num_thresholds must be an integer > 1, received num_thresholds={num_thresholds!r}.")
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) / (self.num_thresholds - 1) for i in range(self.num_thresholds - 2)]
            self._thresholds_distributed_evenly = True
        self._thresholds = [0.0 - backend.epsilon()] + inner + [1.0 + backend.epsilon()]
        self.multi_label = multi_label
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else np.asarray(label_weights, np.float64)
        self._from_logits = from_logits
        if num_labels and not multi_label:
            raise ValueError("num_labels is needed only when multi_label is True.")
        self._num_labels = num_labels if multi_label else None
        self.reset_state()

    @property
    def thresholds(self):
        """The thresholds the counts are taken at, endpoints included."""
        return list(self._thresholds)

    def _state_shape(self):
        if self.multi_label:
            return (self.num_thresholds, self._num_labels)
        return (self.num_thresholds,)

    def reset_state(self):
        if self.multi_label and self._num_labels is None:
            self.true_positives = self.false_positives = None
            self.true_negatives = self.false_negatives = None
            return
        shape = self._state_shape()
        self.true_positives = np.zeros(shape)
        self.false_positives = np.zeros(shape)
        self.true_negatives = np.zeros(shape)
        self.false_negatives = np.zeros(shape)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = to_numpy(y_pred, np.float64)
        if self.multi_label and self._num_labels is None:
            if y_pred.ndim != 2:
                raise ValueError(
                    f"multi_label=True needs y_pred of rank 2, received y_pred.shape={y_pred.shape}."
                )
            self._num_labels = y_pred.shape[1]
            self.reset_state()
        if self._from_logits:
            y_pred = sigmoid(y_pred)
        tp, fp, tn, fn = confusion_counts(
            y_true,
            y_pred,
            self._thresholds,
            sample_weight=sample_weight,
            multi_label=self.multi_label,
            label_weights=None if self.multi_label else self.label_weights,
            clip_predictions=self._thresholds_distributed_evenly,
            dtype=self.dtype,
        )
        self.true_positives += tp
        self.false_positives += fp
        self.true_negatives += tn
        self.false_negatives += fn

    def _average_over_labels(self, by_threshold_terms):
        if not self.multi_label:
            return float(np.sum(by_threshold_terms))
        by_label = np.sum(by_threshold_terms, axis=0)
        if self.label_weights is None:
            return float(np.mean(by_label))
        return float(divide_no_nan(np.sum(by_label * self.label_weights), np.sum(self.label_weights)))

    def _interpolate_pr_auc(self):
        # Davis & Goadrich (2006): precision is interpolated through the true
        # and false positive counts between neighbouring thresholds.
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = divide_no_nan(dtp, np.maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both_positive = (p[:-1] > 0) & (p[1:] > 0)
        safe_ratio = np.where(both_positive, divide_no_nan(p[:-1], np.maximum(p[1:], 0.0)), 1.0)
        increments = divide_no_nan(
            slope * (dtp + intercept * np.log(safe_ratio)), np.maximum(tp[1:] + fn[1:], 0.0)
        )
        return self._average_over_labels(increments)

    def result(self):
        if self.true_positives is None:
            return 0.0
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr_auc()
        tp, fp, tn, fn = self.true_positives, self.false_positives, self.true_negatives, self.false_negatives
        recall = divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = divide_no_nan(fp, fp + tn), recall
        else:
            x, y = recall, divide_no_nan(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return self._average_over_labels((x[:-1] - x[1:]) * heights)

    def get_config(self):
        config = {
            **super().get_config(),
            "num_thresholds": self.num_thresholds,
            "curve": self.curve,
            "summation_method": self.summation_method,
            "multi_label": self.multi_label,
            "num_labels": self.num_labels,
            "label_weights": None if self.label_weights is None else self.label_weights.tolist(),
            "from_logits": self._from_logits,
        }
        if self._init_from_thresholds:
            config["thresholds"] = self._thresholds[1:-1]
        return config
