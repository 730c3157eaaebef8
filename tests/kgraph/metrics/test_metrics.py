"""Metrics: hand-computed values, weighting, reset semantics, AUC against a NumPy trapezoid."""
import pickle

import numpy as np
import pytest

from kgraph import losses, metrics


def test_mean_and_sum_with_weights_and_reset():
    mean = metrics.Mean()
    mean.update_state([1.0, 3.0, 5.0, 7.0])
    assert mean.result() == 4.0
    mean.update_state([1.0, 3.0, 5.0, 7.0], sample_weight=[1, 1, 0, 0])
    assert mean.result() == pytest.approx((16 + 4) / 6)
    mean.reset_state()
    assert mean.result() == 0.0
    total = metrics.Sum()
    total.update_state([1.0, 3.0, 5.0, 7.0], sample_weight=[1, 1, 0, 0])
    assert total.result() == 4.0
    # A scalar value with a scalar weight counts with that weight (e.g. a batch loss and its size).
    mean.update_state(2.0, sample_weight=10)
    mean.update_state(4.0, sample_weight=30)
    assert mean.result() == pytest.approx(3.5)


def test_accuracies():
    acc = metrics.Accuracy()
    acc.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
    assert acc.result() == 0.75
    binary = metrics.BinaryAccuracy()
    binary.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    assert binary.result() == 0.75
    binary.reset_state()
    binary.update_state([1, 1, 0, 0], [[0.98], [1], [0], [0.6]], sample_weight=[1, 0, 0, 1])
    assert binary.result() == 0.5
    assert metrics.BinaryAccuracy(threshold=0.7)([[1], [0]], [[0.65], [0.65]]) == 0.5
    cat = metrics.CategoricalAccuracy()
    cat.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert cat.result() == 0.5
    cat.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]], sample_weight=[0.7, 0.3])
    assert cat.result() == pytest.approx(1.3 / 3)
    sparse = metrics.SparseCategoricalAccuracy()
    sparse.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
    sparse.update_state(np.array([2.0, 1.0]), [[0.1, 0.6, 0.3], [0.05, 0.95, 0]])
    assert sparse.result() == 0.5


def test_top_k_accuracies_count_ties_as_hits():
    top = metrics.TopKCategoricalAccuracy(k=1)
    top.update_state([[0, 0, 1], [0, 1, 0]], [[0.1, 0.9, 0.8], [0.05, 0.95, 0]])
    assert top.result() == 0.5
    sparse_top = metrics.SparseTopKCategoricalAccuracy(k=2)
    sparse_top.update_state([2, 1, 0], [[0.1, 0.9, 0.8], [0.05, 0.95, 0], [0.2, 0.5, 0.5]])
    assert sparse_top.result() == pytest.approx(2 / 3)
    tied = metrics.SparseTopKCategoricalAccuracy(k=1)
    tied.update_state([0], [[0.5, 0.5, 0.1]])
    assert tied.result() == 1.0


def test_regression_metrics():
    y_true, y_pred = np.array([[0.0, 1], [0, 0]]), np.array([[1.0, 1], [0, 0]])
    assert metrics.MeanSquaredError()(y_true, y_pred) == 0.25
    mae = metrics.MeanAbsoluteError()
    mae.update_state(y_true, y_pred, sample_weight=[1, 0])
    assert mae.result() == 0.5


def test_precision_and_recall():
    y_true = np.array([0, 1, 1, 1])
    y_pred = np.array([1, 0, 1, 1])
    precision, recall = metrics.Precision(), metrics.Recall()
    precision.update_state(y_true, y_pred)
    recall.update_state(y_true, y_pred)
    assert precision.result() == pytest.approx(2 / 3)
    assert recall.result() == pytest.approx(2 / 3)
    precision.reset_state()
    precision.update_state(y_true, y_pred, sample_weight=[0, 0, 1, 0])
    assert precision.result() == 1.0
    multi = metrics.Precision(thresholds=[0.2, 0.6])
    multi.update_state([0, 1, 1, 0], [0.3, 0.7, 0.5, 0.1])
    np.testing.assert_allclose(multi.result(), [2 / 3, 1.0])
    top = metrics.Precision(top_k=1)
    top.update_state([[0, 0, 1, 1]], [[1, 1, 0.5, 0.3]])
    assert top.result() == 0.0
    per_class = metrics.Recall(class_id=2)
    per_class.update_state([[0, 0, 1], [0, 0, 1], [1, 0, 0]], [[0.1, 0.1, 0.8], [0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    assert per_class.result() == 0.5
    with pytest.raises(ValueError, match="Threshold values must be in"):
        metrics.Recall(thresholds=[1.5])


def np_roc_auc(y_true, scores, thresholds):
    """Trapezoid under (FPR, TPR) counted with ``score > threshold``, as a reference."""
    tpr = np.array([np.sum((scores > t) & (y_true == 1)) for t in thresholds]) / np.sum(y_true == 1)
    fpr = np.array([np.sum((scores > t) & (y_true == 0)) for t in thresholds]) / np.sum(y_true == 0)
    return np.trapezoid(tpr[::-1], fpr[::-1])


def test_auc_roc_against_numpy_trapezoid():
    y_true = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.62, 0.91, 0.05, 0.55])
    auc = metrics.AUC(num_thresholds=5)
    auc.update_state(y_true, scores)
    eps = 1e-7
    expected = np_roc_auc(y_true, scores, [-eps, 0.25, 0.5, 0.75, 1 + eps])
    assert auc.result() == pytest.approx(expected, abs=1e-6)
    # With many thresholds every distinct score gets its own bucket: the exact AUC.
    fine = metrics.AUC(num_thresholds=1001)
    fine.update_state(y_true, scores)
    positives, negatives = scores[y_true == 1], scores[y_true == 0]
    exact = np.mean(positives[:, None] > negatives[None, :])
    assert fine.result() == pytest.approx(exact, abs=1e-6)
    # Keras's documented example.
    keras_case = metrics.AUC(num_thresholds=3)
    keras_case.update_state([0, 0, 1, 1], [0, 0.5, 0.3, 0.9])
    assert keras_case.result() == pytest.approx(0.75)


def test_auc_pr_summation_methods_weights_and_reset():
    y_true = np.array([0, 0, 1, 1])
    scores = np.array([0.0, 0.5, 0.3, 0.9])
    auc = metrics.AUC(num_thresholds=3, curve="PR", summation_method="majoring")
    auc.update_state(y_true, scores)
    # Thresholds (-eps, 0.5, 1+eps): (recall, precision) = (1, 0.5), (0.5, 1), (0, 0).
    assert auc.result() == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)
    minoring = metrics.AUC(num_thresholds=3, curve="PR", summation_method="minoring")
    minoring.update_state(y_true, scores)
    assert minoring.result() == pytest.approx(0.5 * 0.5 + 0.5 * 0.0)
    weighted = metrics.AUC(num_thresholds=11)
    weighted.update_state(y_true, scores)
    assert weighted.result() == pytest.approx(0.75)
    weighted.reset_state()
    # Weight 0 on the negative scored 0.5 leaves perfectly separated scores.
    weighted.update_state(y_true, scores, sample_weight=[1, 0, 1, 1])
    assert weighted.result() == pytest.approx(1.0)
    weighted.reset_state()
    assert weighted.result() == 0.0
    assert np.all(np.asarray(weighted.true_positives) == 0)
    logits = metrics.AUC(num_thresholds=3, from_logits=True)
    logits.update_state(y_true, [-9.0, 0.0, -0.8, 2.2])
    assert logits.result() == pytest.approx(0.75)


def test_auc_multi_label_averages_label_aucs():
    y_true = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    scores = np.array([[0.2, 0.9], [0.7, 0.1], [0.6, 0.3], [0.1, 0.4]])
    auc = metrics.AUC(num_thresholds=101, multi_label=True)
    auc.update_state(y_true, scores)
    per_label = []
    for j in range(2):
        single = metrics.AUC(num_thresholds=101)
        single.update_state(y_true[:, j], scores[:, j])
        per_label.append(single.result())
    assert auc.result() == pytest.approx(np.mean(per_label))


def test_get_names_and_serialization_and_pickle():
    assert type(metrics.get("mse")) is metrics.MeanSquaredError and metrics.get("mse").name == "mse"
    assert type(metrics.get("accuracy")) is metrics.Accuracy
    for name in ["mae", "auc", "precision", "recall", "binary_accuracy", "categorical_accuracy",
                 "sparse_categorical_accuracy", "top_k_categorical_accuracy"]:
        metric = metrics.get(name)
        assert metric.name == name
        rebuilt = metrics.deserialize(metrics.serialize(metric))
        assert type(rebuilt) is type(metric) and rebuilt.get_config() == metric.get_config()
    auc = metrics.AUC(thresholds=[0.2, 0.7], curve="PR")
    assert metrics.deserialize(metrics.serialize(auc)).thresholds == auc.thresholds
    auc.update_state([0, 1, 1], [0.1, 0.8, 0.4])
    clone = pickle.loads(pickle.dumps(auc))
    assert clone.result() == auc.result()
    wrapper = metrics.MeanMetricWrapper(metrics.binary_accuracy, name="ba", threshold=0.2)
    assert metrics.MeanMetricWrapper.from_config(wrapper.get_config())([[1]], [[0.3]]) == 1.0
    with pytest.raises(ValueError, match="'accuracyy'.*Valid names"):
        metrics.get("accuracyy")


@pytest.mark.parametrize("y_true,y_pred,loss,expected", [
    ((8, 1), (8, 1), None, metrics.BinaryAccuracy),
    ((8, 5), (8, 5), "binary_crossentropy", metrics.BinaryAccuracy),
    ((8,), (8, 5), None, metrics.SparseCategoricalAccuracy),
    ((8, 1), (8, 5), None, metrics.SparseCategoricalAccuracy),
    ((8, 5), (8, 5), None, metrics.CategoricalAccuracy),
    ((8, 5), (8, 5), losses.BinaryCrossentropy(), metrics.BinaryAccuracy),
])
def test_resolve_accuracy(y_true, y_pred, loss, expected):
    metric = metrics.resolve_accuracy("acc", y_true, y_pred, loss)
    assert type(metric) is expected and metric.name == "acc"


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_mean_of_single_values_equals_the_general_reduction(monkeypatch, dtype):
    # A step's loss (one value, weighed by the batch size or not) takes a shorter path: the same totals, bit for
    # bit, as reducing it as an array (overflow to inf and NaN included).
    from kgraph.metrics import reduction_metrics
    from kgraph.metrics.reduction_metrics import Mean, reduce_to_samplewise_values
    general_calls = []
    monkeypatch.setattr(reduction_metrics, "reduce_to_samplewise_values",
                        lambda *args: general_calls.append(args) or reduce_to_samplewise_values(*args))
    rng = np.random.default_rng(0)
    fast, general = Mean(dtype=dtype), Mean(dtype=dtype)
    weights = [None, 128, 3.5, np.asarray(7, np.int64), np.asarray(0.25, np.float32), np.float32(2)]
    with np.errstate(all="ignore"):
        for i in range(120):
            value = np.asarray(rng.standard_normal() * 10.0 ** rng.integers(-8, 8),
                               dtype=["float32", "float64", "float16"][i % 3])
            weight = weights[i % len(weights)]
            fast.update_state(value, sample_weight=weight)
            values, w = reduce_to_samplewise_values(value, weight, np.mean)
            general.total.assign(general.total.value + np.sum(values))
            general.count.assign(general.count.value + (np.sum(w) if w is not None else 1))
            assert fast.total.value.tobytes() == general.total.value.tobytes()
            assert fast.count.value.tobytes() == general.count.value.tobytes()
    assert not general_calls  # every update above took the shorter path
    fast.update_state(np.ones(3, dtype))  # an array still takes the general one
    assert len(general_calls) == 1


def test_divide_no_nan_of_two_numbers_equals_the_array_division():
    from kgraph.metrics.metric import divide_no_nan
    values = [0.0, -0.0, 1.0, -3.5, 1e-300, 1e300, np.inf, -np.inf, np.nan, 7, np.float32(0.1)]
    with np.errstate(all="ignore"):
        for a in values:
            for b in values:
                expected = np.zeros(())
                np.divide(np.float64(a), np.float64(b), out=expected, where=np.float64(b) != 0)
                got = divide_no_nan(a, b)
                assert got.shape == () and got.dtype == np.float64 and got.tobytes() == expected.tobytes(), (a, b)
    np.testing.assert_array_equal(divide_no_nan([1.0, 2.0], [0.0, 4.0]), [0.0, 0.5])
