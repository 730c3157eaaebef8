"""Every metric class of Keras 3 against kgraph's on the same seeded batches (tolerance: keras_batches.py)."""
import re
import warnings
import zlib

import numpy as np
import pytest

from kgraph import metrics
from tests.kgraph.metrics.keras_batches import CLASSES, assert_close, batch

keras = pytest.importorskip("keras")

CASES = [
    ("Mean", {}, "values"), ("Sum", {}, "values"),
    ("MeanMetricWrapper", {"fn": "hinge"}, "hinge"),
    ("MeanMetricWrapper", {"fn": "binary_accuracy", "threshold": 0.3}, "binary"),
    ("Accuracy", {}, "ints"), ("BinaryAccuracy", {}, "binary"), ("BinaryAccuracy", {"threshold": 0.7}, "binary"),
    ("CategoricalAccuracy", {}, "categorical"), ("SparseCategoricalAccuracy", {}, "sparse"),
    ("SparseCategoricalAccuracy", {}, "sparse_col"), ("TopKCategoricalAccuracy", {"k": 2}, "categorical"),
    ("SparseTopKCategoricalAccuracy", {"k": 2}, "sparse"),
    ("SparseTopKCategoricalAccuracy", {"k": 2, "from_sorted_ids": True}, "sorted_ids"),
    ("AUC", {}, "binary_1d"), ("AUC", {"num_thresholds": 50, "curve": "PR"}, "binary"),
    ("AUC", {"curve": "PR", "summation_method": "majoring"}, "binary"),
    ("AUC", {"summation_method": "minoring"}, "binary"), ("AUC", {"curve": "PRGAIN"}, "binary"),
    ("AUC", {"thresholds": [0.1, 0.5, 0.8]}, "binary"), ("AUC", {"multi_label": True}, "binary"),
    ("AUC", {"multi_label": True, "num_labels": 3, "label_weights": [1.0, 2.0, 0.5]}, "binary"),
    ("AUC", {"label_weights": [1.0, 2.0, 0.5]}, "binary"), ("AUC", {"from_logits": True}, "binary_logits"),
    ("FalseNegatives", {}, "binary"), ("FalsePositives", {"thresholds": [0.2, 0.5, 0.9]}, "binary"),
    ("TrueNegatives", {"thresholds": [0.0, 0.5, 1.0]}, "binary"), ("TruePositives", {}, "binary"),
    ("Precision", {}, "binary"), ("Precision", {"thresholds": [0.3, 0.6]}, "binary"),
    ("Precision", {"top_k": 2}, "binary"), ("Precision", {"class_id": 1}, "binary"),
    ("Precision", {"thresholds": [0.0, 0.5, 1.0]}, "binary"),
    ("Recall", {}, "binary"), ("Recall", {"thresholds": [0.3, 0.6], "top_k": 1}, "binary"),
    ("Recall", {"class_id": 2}, "categorical"),
    ("PrecisionAtRecall", {"recall": 0.6}, "binary"), ("PrecisionAtRecall", {"recall": 0.5, "num_thresholds": 1},
                                                        "binary"),
    ("RecallAtPrecision", {"precision": 0.7, "class_id": 2}, "categorical"),
    ("SensitivityAtSpecificity", {"specificity": 0.5, "num_thresholds": 20}, "binary"),
    ("SpecificityAtSensitivity", {"sensitivity": 0.5}, "binary"),
    ("ConcordanceCorrelation", {}, "regression"), ("PearsonCorrelation", {}, "regression"),
    ("F1Score", {}, "categorical"), ("F1Score", {"average": "macro", "threshold": 0.5}, "binary"),
    ("FBetaScore", {"beta": 2.0, "average": "weighted"}, "binary"),
    ("FBetaScore", {"average": "micro", "threshold": 0.3}, "binary"),
    ("Hinge", {}, "hinge"), ("Hinge", {}, "binary"), ("SquaredHinge", {}, "hinge"),
    ("CategoricalHinge", {}, "categorical"),
    ("IoU", {"num_classes": CLASSES, "target_class_ids": [0, 2]}, "classes"),
    ("IoU", {"num_classes": CLASSES, "target_class_ids": [1, 3], "ignore_class": 1}, "classes"),
    ("BinaryIoU", {}, "binary"), ("BinaryIoU", {"target_class_ids": [1], "threshold": 0.3}, "binary"),
    ("MeanIoU", {"num_classes": CLASSES}, "classes"),
    ("MeanIoU", {"num_classes": CLASSES, "sparse_y_pred": False}, "sparse"),
    ("OneHotIoU", {"num_classes": CLASSES, "target_class_ids": [1, 3]}, "onehot_scores"),
    ("OneHotMeanIoU", {"num_classes": CLASSES}, "onehot_scores"),
    ("KLDivergence", {}, "distribution"), ("Poisson", {}, "positive"),
    ("BinaryCrossentropy", {}, "binary"),
    ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1}, "binary_logits"),
    ("CategoricalCrossentropy", {}, "categorical"),
    ("CategoricalCrossentropy", {"from_logits": True, "label_smoothing": 0.2}, "categorical_logits"),
    ("SparseCategoricalCrossentropy", {}, "sparse"),
    ("SparseCategoricalCrossentropy", {"from_logits": True}, "sparse_logits"),
    ("SparseCategoricalCrossentropy", {"ignore_class": 0}, "sparse"),
    ("CosineSimilarity", {}, "regression"), ("LogCoshError", {}, "regression"),
    ("MeanAbsoluteError", {}, "regression"), ("MeanAbsolutePercentageError", {}, "positive"),
    ("MeanSquaredError", {}, "regression"), ("MeanSquaredLogarithmicError", {}, "positive"),
    ("RootMeanSquaredError", {}, "regression"), ("R2Score", {}, "regression"),
    ("R2Score", {"class_aggregation": None}, "regression"),
    ("R2Score", {"class_aggregation": "variance_weighted_average", "num_regressors": 2}, "regression"),
]


def _make(module, name, kwargs):
    kwargs = dict(kwargs)
    if "fn" in kwargs:
        kwargs["fn"] = getattr(module, kwargs["fn"])
    return getattr(module, name)(**kwargs)


def _plain(config):
    """A config with array values as lists, and the function of a wrapper by name."""
    return {k: np.asarray(v).tolist() if hasattr(v, "shape") else v for k, v in config.items()}


def _case_id(case):
    name, kwargs, kind = case
    return f"{name}-{'-'.join(f'{k}={v}' for k, v in kwargs.items())}-{kind}"


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_results_after_several_updates_match_keras(case, weighted):
    name, kwargs, kind = case
    ours, theirs = _make(metrics, name, kwargs), _make(keras.metrics, name, kwargs)
    rng = np.random.default_rng(zlib.crc32(_case_id(case).encode()))
    for _ in range(3):
        inputs, weight = batch(kind, rng, integer_weights="IoU" in name)
        sample_weight = weight if weighted else None
        ours.update_state(*inputs, sample_weight=sample_weight)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs.update_state(*inputs, sample_weight=sample_weight)
        assert_close(ours.result(), theirs.result())
    ours.reset_state()
    theirs.reset_state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the adjusted R2 of no samples warns, in both
        assert_close(ours.result(), theirs.result())
    assert [(v.name, v.shape, v.dtype) for v in ours.variables] == [
        (v.name, tuple(v.shape), v.dtype) for v in theirs.variables]


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_configs_and_default_names_match_keras(case):
    name, kwargs, _ = case
    ours, theirs = _make(metrics, name, kwargs), _make(keras.metrics, name, kwargs)
    assert re.sub(r"_\d+$", "", ours.name) == re.sub(r"_\d+$", "", theirs.name)
    ours_config, theirs_config = _plain(ours.get_config()), _plain(theirs.get_config())
    ours_config.pop("name"), theirs_config.pop("name")
    assert ours_config == theirs_config
    rebuilt = type(ours).from_config(ours.get_config())
    assert rebuilt.get_config() == ours.get_config()
