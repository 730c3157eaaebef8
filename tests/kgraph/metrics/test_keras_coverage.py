"""Every class and function of ``keras.metrics`` is provided, with Keras's arguments and defaults."""
import inspect

import pytest

from kgraph import metrics

# dir(keras.metrics) of Keras 3.15.1, pasted here so the check runs without Keras installed.
KERAS_METRICS = (
    "AUC", "Accuracy", "BinaryAccuracy", "BinaryCrossentropy", "BinaryIoU", "CategoricalAccuracy",
    "CategoricalCrossentropy", "CategoricalHinge", "ConcordanceCorrelation", "CosineSimilarity", "F1Score",
    "FBetaScore", "FalseNegatives", "FalsePositives", "Hinge", "IoU", "KLDivergence", "LogCoshError", "Mean",
    "MeanAbsoluteError", "MeanAbsolutePercentageError", "MeanIoU", "MeanMetricWrapper", "MeanSquaredError",
    "MeanSquaredLogarithmicError", "Metric", "OneHotIoU", "OneHotMeanIoU", "PearsonCorrelation", "Poisson",
    "Precision", "PrecisionAtRecall", "R2Score", "Recall", "RecallAtPrecision", "RootMeanSquaredError",
    "SensitivityAtSpecificity", "SparseCategoricalAccuracy", "SparseCategoricalCrossentropy",
    "SparseTopKCategoricalAccuracy", "SpecificityAtSensitivity", "SquaredHinge", "Sum", "TopKCategoricalAccuracy",
    "TrueNegatives", "TruePositives", "binary_accuracy", "binary_crossentropy", "binary_focal_crossentropy",
    "categorical_accuracy", "categorical_crossentropy", "categorical_focal_crossentropy", "categorical_hinge",
    "concordance_correlation", "deserialize", "get", "hinge", "huber", "kl_divergence", "log_cosh",
    "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error",
    "pearson_correlation", "poisson", "serialize", "sparse_categorical_accuracy", "sparse_categorical_crossentropy",
    "sparse_top_k_categorical_accuracy", "squared_hinge", "top_k_categorical_accuracy",
)


def test_every_keras_metrics_name_is_provided():
    missing = [name for name in KERAS_METRICS if not hasattr(metrics, name)]
    assert missing == [], missing
    assert len(KERAS_METRICS) == 72


def test_classes_are_metrics_and_functions_are_functions():
    for name in KERAS_METRICS:
        obj = getattr(metrics, name)
        if name[0].isupper():
            assert inspect.isclass(obj) and issubclass(obj, metrics.Metric), name
        else:
            assert inspect.isfunction(obj), name


def test_the_list_is_keras_own():
    keras = pytest.importorskip("keras")
    assert tuple(sorted(n for n in dir(keras.metrics) if not n.startswith("_"))) == tuple(sorted(KERAS_METRICS))


def test_constructor_arguments_and_defaults_match_keras():
    keras = pytest.importorskip("keras")
    differing = []
    for name in KERAS_METRICS:
        ours, theirs = getattr(metrics, name), getattr(keras.metrics, name)
        if name in ("get", "serialize", "deserialize"):
            continue
        ours = ours.__init__ if inspect.isclass(ours) else ours
        theirs = theirs.__init__ if inspect.isclass(theirs) else theirs
        ours_params = [(p.name, p.default, p.kind) for p in inspect.signature(ours).parameters.values()]
        theirs_params = [(p.name, p.default, p.kind) for p in inspect.signature(theirs).parameters.values()]
        if ours_params != theirs_params:
            differing.append((name, ours_params, theirs_params))
    assert differing == []
