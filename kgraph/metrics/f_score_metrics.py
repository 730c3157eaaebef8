"""F-scores: FBetaScore and F1Score over ``(batch, classes)`` predictions."""
import numpy as np

from kgraph import backend
from kgraph.metrics.metric import Metric, to_numpy


class FBetaScore(Metric):
    """The F-beta score per class or averaged; positive above ``threshold``, or each row's top score when None."""

    def __init__(self, average=None, beta=1.0, threshold=None, name="fbeta_score", dtype=None):
        super().__init__(name=name, dtype=dtype)
        if average not in (None, "micro", "macro", "weighted"):
            raise ValueError("Invalid `average` argument value. Expected one of: {None, 'micro', 'macro', "
                             f"'weighted'}}. Received: average={average}")
        if not isinstance(beta, float):
            raise ValueError("Invalid `beta` argument value. It should be a Python float. "
                             f"Received: beta={beta} of type '{type(beta)}'")
        if beta <= 0.0:
            raise ValueError(f"Invalid `beta` argument value. It should be > 0. Received: beta={beta}")
        if threshold is not None:
            if not isinstance(threshold, float):
                raise ValueError("Invalid `threshold` argument value. It should be a Python float. "
                                 f"Received: threshold={threshold} of type '{type(threshold)}'")
            if threshold > 1.0 or threshold <= 0.0:
                raise ValueError("Invalid `threshold` argument value. It should verify 0 < threshold <= 1. "
                                 f"Received: threshold={threshold}")
        self.average = average
        self.beta = beta
        self.threshold = threshold
        self.axis = None if average == "micro" else 0
        self._built = False

    def _build(self, y_true_shape, y_pred_shape):
        if len(y_pred_shape) != 2 or len(y_true_shape) != 2:
            raise ValueError("FBetaScore expects 2D inputs with shape (batch_size, output_dim). Received input "
                             f"shapes: y_pred.shape={y_pred_shape} and y_true.shape={y_true_shape}.")
        shape = () if self.average == "micro" else (y_pred_shape[-1],)
        for name in ("true_positives", "false_positives", "false_negatives", "intermediate_weights"):
            setattr(self, name, self.add_variable(name=name, shape=shape, initializer="zeros", dtype=self.dtype))
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_numpy(y_true, self.dtype)
        y_pred = to_numpy(y_pred, self.dtype)
        if not self._built:
            self._build(y_true.shape, y_pred.shape)
        if self.threshold is None:
            positive = (y_pred >= np.max(y_pred, axis=-1, keepdims=True)) & (np.abs(y_pred) > 1e-9)
        else:
            positive = y_pred > self.threshold
        y_pred = positive.astype(np.float64)
        y_true = y_true.astype(np.float64)
        weight = None if sample_weight is None else to_numpy(sample_weight, np.float64)[:, None]

        def weighted_sum(values):
            return np.sum(values if weight is None else values * weight, axis=self.axis)

        self.true_positives.assign(self.true_positives.value + weighted_sum(y_pred * y_true))
        self.false_positives.assign(self.false_positives.value + weighted_sum(y_pred * (1.0 - y_true)))
        self.false_negatives.assign(self.false_negatives.value + weighted_sum((1.0 - y_pred) * y_true))
        self.intermediate_weights.assign(self.intermediate_weights.value + weighted_sum(y_true))

    def result(self):
        eps = backend.epsilon()
        tp = self.true_positives.value.astype(np.float64)
        precision = tp / (tp + self.false_positives.value + eps)
        recall = tp / (tp + self.false_negatives.value + eps)
        f_score = precision * recall / (self.beta**2 * precision + recall + eps) * (1.0 + self.beta**2)
        if self.average == "weighted":
            weights = self.intermediate_weights.value / (np.sum(self.intermediate_weights.value) + eps)
            f_score = np.sum(f_score * weights)
        elif self.average is not None:
            f_score = np.mean(f_score)
        return self._as_result(f_score)

    def get_config(self):
        return {**super().get_config(), "average": self.average, "beta": self.beta, "threshold": self.threshold}


class F1Score(FBetaScore):
    """The F1 score: ``FBetaScore`` with ``beta=1``."""

    def __init__(self, average=None, threshold=None, name="f1_score", dtype=None):
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name, dtype=dtype)

    def get_config(self):
        config = super().get_config()
        del config["beta"]
        return config
