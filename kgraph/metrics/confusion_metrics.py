"""Thresholded confusion-matrix metrics: the four counts, Precision, Recall and the X-at-Y metrics."""
import numpy as np

from kgraph.metrics import metrics_utils
from kgraph.metrics.metric import Metric, divide_no_nan


class _ConfusionMatrixConditionCount(Metric):
    """One weighted count (``"tp"``, ``"fp"``, ``"tn"`` or ``"fn"``) per threshold (default 0.5)."""

    def __init__(self, confusion_matrix_cond, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._confusion_matrix_cond = confusion_matrix_cond
        self.init_thresholds = thresholds
        self.thresholds = metrics_utils.parse_init_thresholds(thresholds, default_threshold=0.5)
        self._thresholds_distributed_evenly = metrics_utils.is_evenly_distributed_thresholds(self.thresholds)
        self.accumulator = self.add_variable(shape=(len(self.thresholds),), initializer="zeros", name="accumulator")

    def update_state(self, y_true, y_pred, sample_weight=None):
        metrics_utils.update_confusion_matrix_variables(
            {self._confusion_matrix_cond: self.accumulator}, y_true, y_pred, self.thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly, sample_weight=sample_weight,
        )

    def result(self):
        value = self.accumulator.value
        return self._as_result(value[0] if len(self.thresholds) == 1 else value)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds}


class FalsePositives(_ConfusionMatrixConditionCount):
    """Weighted count of negatives predicted positive (``y_pred > threshold``)."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__("fp", thresholds=thresholds, name=name, dtype=dtype)


class FalseNegatives(_ConfusionMatrixConditionCount):
    """Weighted count of positives predicted negative."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__("fn", thresholds=thresholds, name=name, dtype=dtype)


class TrueNegatives(_ConfusionMatrixConditionCount):
    """Weighted count of negatives predicted negative."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__("tn", thresholds=thresholds, name=name, dtype=dtype)


class TruePositives(_ConfusionMatrixConditionCount):
    """Weighted count of positives predicted positive."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__("tp", thresholds=thresholds, name=name, dtype=dtype)


class _PrecisionOrRecall(Metric):
    """True positives and one kind of error per threshold; ``_error`` names it (``"fp"`` or ``"fn"``)."""

    _error = None

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else metrics_utils.NEG_INF
        self.thresholds = metrics_utils.parse_init_thresholds(thresholds, default_threshold=default)
        self._thresholds_distributed_evenly = metrics_utils.is_evenly_distributed_thresholds(self.thresholds)
        shape = (len(self.thresholds),)
        self.true_positives = self.add_variable(shape=shape, initializer="zeros", name="true_positives")
        error_name = {"fp": "false_positives", "fn": "false_negatives"}[self._error]
        setattr(self, error_name, self.add_variable(shape=shape, initializer="zeros", name=error_name))
        self._errors = getattr(self, error_name)

    def update_state(self, y_true, y_pred, sample_weight=None):
        metrics_utils.update_confusion_matrix_variables(
            {"tp": self.true_positives, self._error: self._errors}, y_true, y_pred, self.thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly, top_k=self.top_k,
            class_id=self.class_id, sample_weight=sample_weight,
        )

    def result(self):
        tp = self.true_positives.value
        value = divide_no_nan(tp, tp + self._errors.value)
        return self._as_result(value[0] if len(self.thresholds) == 1 else value)

    def get_config(self):
        return {**super().get_config(), "thresholds": self.init_thresholds, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_PrecisionOrRecall):
    """``tp / (tp + fp)`` at each threshold (default 0.5), of the ``top_k`` scores or class ``class_id`` if given."""

    _error = "fp"


class Recall(_PrecisionOrRecall):
    """``tp / (tp + fn)`` at each threshold (default 0.5); see ``Precision`` for the arguments."""

    _error = "fn"


class SensitivitySpecificityBase(Metric):
    """The four counts at ``num_thresholds`` thresholds spread over [0, 1] (one, 0.5, when ``num_thresholds`` is 1)."""

    def __init__(self, value, num_thresholds=200, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if num_thresholds <= 0:
            raise ValueError(f"Argument `num_thresholds` must be an integer > 0. "
                             f"Received: num_thresholds={num_thresholds}")
        self.value = value
        self.class_id = class_id
        if num_thresholds == 1:
            self.thresholds = [0.5]
            self._thresholds_distributed_evenly = False
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
            self.thresholds = [0.0] + inner + [1.0]
            self._thresholds_distributed_evenly = True
        shape = (len(self.thresholds),)
        self.true_positives = self.add_variable(shape=shape, initializer="zeros", name="true_positives")
        self.false_positives = self.add_variable(shape=shape, initializer="zeros", name="false_positives")
        self.true_negatives = self.add_variable(shape=shape, initializer="zeros", name="true_negatives")
        self.false_negatives = self.add_variable(shape=shape, initializer="zeros", name="false_negatives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        metrics_utils.update_confusion_matrix_variables(
            {"tp": self.true_positives, "tn": self.true_negatives, "fp": self.false_positives,
             "fn": self.false_negatives}, y_true, y_pred, self.thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly, class_id=self.class_id,
            sample_weight=sample_weight,
        )

    def _rates(self):
        """Sensitivity (recall), specificity and precision at each threshold."""
        tp, fp = self.true_positives.value, self.false_positives.value
        tn, fn = self.true_negatives.value, self.false_negatives.value
        return divide_no_nan(tp, tp + fn), divide_no_nan(tn, tn + fp), divide_no_nan(tp, tp + fp)

    def _find_max_under_constraint(self, constrained, dependent):
        """The largest ``dependent`` value where ``constrained >= value`` (0 where none is), compared in dtype."""
        feasible = np.asarray(constrained, self.dtype) >= np.asarray(self.value, self.dtype)
        return self._as_result(np.max(np.where(feasible, dependent, 0.0), initial=0.0))

    def get_config(self):
        return {**super().get_config(), "class_id": self.class_id}


def _check_fraction(name, value):
    if value < 0 or value > 1:
        raise ValueError(f"Argument `{name}` must be in the range [0, 1]. Received: {name}={value}")


class SensitivityAtSpecificity(SensitivitySpecificityBase):
    """The best sensitivity (recall) at a threshold whose specificity is at least ``specificity``."""

    def __init__(self, specificity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_fraction("specificity", specificity)
        self.specificity = specificity
        self.num_thresholds = num_thresholds
        super().__init__(specificity, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        sensitivity, specificity, _ = self._rates()
        return self._find_max_under_constraint(specificity, sensitivity)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "specificity": self.specificity}


class SpecificityAtSensitivity(SensitivitySpecificityBase):
    """The best specificity at a threshold whose sensitivity (recall) is at least ``sensitivity``."""

    def __init__(self, sensitivity, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_fraction("sensitivity", sensitivity)
        self.sensitivity = sensitivity
        self.num_thresholds = num_thresholds
        super().__init__(sensitivity, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        sensitivity, specificity, _ = self._rates()
        return self._find_max_under_constraint(sensitivity, specificity)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "sensitivity": self.sensitivity}


class PrecisionAtRecall(SensitivitySpecificityBase):
    """The best precision at a threshold whose recall is at least ``recall``."""

    def __init__(self, recall, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_fraction("recall", recall)
        self.recall = recall
        self.num_thresholds = num_thresholds
        super().__init__(value=recall, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        recall, _, precision = self._rates()
        return self._find_max_under_constraint(recall, precision)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "recall": self.recall}


class RecallAtPrecision(SensitivitySpecificityBase):
    """The best recall at a threshold whose precision is at least ``precision``."""

    def __init__(self, precision, num_thresholds=200, class_id=None, name=None, dtype=None):
        _check_fraction("precision", precision)
        self.precision = precision
        self.num_thresholds = num_thresholds
        super().__init__(value=precision, num_thresholds=num_thresholds, class_id=class_id, name=name, dtype=dtype)

    def result(self):
        recall, _, precision = self._rates()
        return self._find_max_under_constraint(precision, recall)

    def get_config(self):
        return {**super().get_config(), "num_thresholds": self.num_thresholds, "precision": self.precision}
