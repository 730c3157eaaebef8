"""AUC: area under the ROC, precision-recall or precision-recall-gain curve, from thresholded counts."""
import numpy as np

from kgraph import backend
from kgraph.metrics import metrics_utils
from kgraph.metrics.metric import Metric, divide_no_nan, sigmoid, to_numpy

# Keras's accepted spellings -> the canonical value.
CURVES = {"ROC": "ROC", "roc": "ROC", "PR": "PR", "pr": "PR", "PRGAIN": "PRGAIN", "prgain": "PRGAIN"}
SUMMATION_METHODS = {spelling: method for method in ("interpolation", "majoring", "minoring")
                     for spelling in (method, method.capitalize())}


def _canonical(table, value, what):
    if value not in table:
        raise ValueError(f'Invalid AUC {what} value: "{value}". Expected values are {sorted(set(table.values()))}')
    return table[value]


class AUC(Metric):
    """Approximate area under the ROC/PR/PRGAIN curve from confusion counts at ``num_thresholds`` thresholds."""
    # Thresholds are spread evenly over [0, 1] with the end points widened by epsilon (or are `thresholds`);
    # "interpolation" sums trapezoids (for PR, Davis & Goadrich's interpolation); multi_label averages one
    # AUC per label column (weighted by label_weights), else label_weights weigh the individual predictions.

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name=None, dtype=None,
                 thresholds=None, multi_label=False, num_labels=None, label_weights=None, from_logits=False):
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            self.num_thresholds = len(thresholds) + 2
            inner = sorted(thresholds)
            self._thresholds_distributed_evenly = metrics_utils.is_evenly_distributed_thresholds(
                np.array([0.0] + inner + [1.0]))
        else:
            if num_thresholds <= 1:
                raise ValueError(f"Argument `num_thresholds` must be an integer > 1. Received: "
                                 f"num_thresholds={num_thresholds}")
            self.num_thresholds = num_thresholds
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self._thresholds_distributed_evenly = True
        self._thresholds = np.array([0.0 - backend.epsilon()] + inner + [1.0 + backend.epsilon()])
        self.curve = _canonical(CURVES, curve, "curve")
        self.summation_method = _canonical(SUMMATION_METHODS, summation_method, "summation method")
        super().__init__(name=name, dtype=dtype)
        self.multi_label = multi_label
        self.num_labels = num_labels
        self.label_weights = None if label_weights is None else np.array(label_weights, dtype=self.dtype)
        self._from_logits = from_logits
        self._built = False
        if multi_label:
            if num_labels:
                self._build((None, num_labels))
        elif num_labels:
            raise ValueError("`num_labels` is needed only when `multi_label` is True.")
        else:
            self._build(None)

    @property
    def thresholds(self):
        """The thresholds the counts are taken at, endpoints included."""
        return list(self._thresholds)

    def _build(self, shape):
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError(f"`y_pred` must have rank 2 when `multi_label=True`. Found rank {len(shape)}. "
                                 f"Full shape received for `y_pred`: {shape}")
            self._num_labels = shape[1]
            variable_shape = (self.num_thresholds, self._num_labels)
        else:
            variable_shape = (self.num_thresholds,)
        self.true_positives = self.add_variable(shape=variable_shape, initializer="zeros", name="true_positives")
        self.false_positives = self.add_variable(shape=variable_shape, initializer="zeros", name="false_positives")
        self.true_negatives = self.add_variable(shape=variable_shape, initializer="zeros", name="true_negatives")
        self.false_negatives = self.add_variable(shape=variable_shape, initializer="zeros", name="false_negatives")
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = to_numpy(y_pred, np.float64)
        if not self._built:
            self._build(y_pred.shape)
        if self._from_logits:
            y_pred = sigmoid(y_pred)
        metrics_utils.update_confusion_matrix_variables(
            {"tp": self.true_positives, "tn": self.true_negatives, "fp": self.false_positives,
             "fn": self.false_negatives}, y_true, y_pred, self._thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly, sample_weight=sample_weight,
            multi_label=self.multi_label, label_weights=None if self.multi_label else self.label_weights,
        )

    def _counts(self):
        return tuple(v.value.astype(np.float64) for v in (self.true_positives, self.false_positives,
                                                           self.true_negatives, self.false_negatives))

    def _average_over_labels(self, by_threshold_terms):
        if not self.multi_label:
            return np.sum(by_threshold_terms)
        by_label = np.sum(by_threshold_terms, axis=0)
        if self.label_weights is None:
            return np.mean(by_label)
        return divide_no_nan(np.sum(by_label * self.label_weights), np.sum(self.label_weights))

    def _interpolate_pr_auc(self):
        # Davis & Goadrich (2006): precision is interpolated through the true
        # and false positive counts between neighbouring thresholds.
        tp, fp, _, fn = self._counts()
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

    def _curve_points(self):
        """The (x, y) points of the curve, one per threshold."""
        tp, fp, tn, fn = self._counts()
        if self.curve == "ROC":
            return divide_no_nan(fp, fp + tn), divide_no_nan(tp, tp + fn)
        if self.curve == "PR":
            return divide_no_nan(tp, tp + fn), divide_no_nan(tp, tp + fp)
        scaling = divide_no_nan(tp + fn, tn + fp)
        recall_gain = np.where(tp == 0, 0.0, 1.0 - scaling * divide_no_nan(fn, tp))
        precision_gain = np.where(tp == 0, 1.0, 1.0 - scaling * divide_no_nan(fp, tp))
        return np.maximum(recall_gain, 0.0), precision_gain

    def result(self):
        if not self._built:
            return self._as_result(0.0)
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._as_result(self._interpolate_pr_auc())
        x, y = self._curve_points()
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return self._as_result(self._average_over_labels((x[:-1] - x[1:]) * heights))

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
            config["thresholds"] = self.thresholds[1:-1]
        return config
