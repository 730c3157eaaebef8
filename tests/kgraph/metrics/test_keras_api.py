"""Keras 3's metric API against kgraph's: custom metrics, the stateless API, metric functions, get/serialize."""
import zlib

import numpy as np
import pytest

import kgraph
from kgraph import metrics
from tests.kgraph.metrics.keras_batches import assert_close, batch

keras = pytest.importorskip("keras")


def binary_true_positives_class(framework):
    """Keras's documented custom metric, written once against ``framework`` (keras or kgraph)."""
    ops = framework.ops

    class BinaryTruePositives(framework.metrics.Metric):
        def __init__(self, name="binary_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_variable(shape=(), initializer="zeros", name="true_positives")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_true = ops.cast(y_true, "bool")
            y_pred = ops.cast(y_pred, "bool")
            values = ops.logical_and(ops.equal(y_true, True), ops.equal(y_pred, True))
            values = ops.cast(values, self.dtype)
            if sample_weight is not None:
                values = values * ops.cast(sample_weight, self.dtype)
            self.true_positives.assign(self.true_positives + ops.sum(values))

        def result(self):
            return self.true_positives

        def reset_state(self):
            self.true_positives.assign(0)

    return BinaryTruePositives


def test_a_keras_custom_metric_runs_unchanged():
    ours, theirs = binary_true_positives_class(kgraph)(), binary_true_positives_class(keras)()
    y_true, y_pred = np.array([1, 1, 0, 1, 0]), np.array([1, 0, 1, 1, 0])
    weight = np.array([0.5, 1.0, 2.0, 3.0, 1.0], dtype=np.float32)
    for metric in (ours, theirs):
        metric.update_state(y_true, y_pred)
        metric.update_state(y_true, y_pred, sample_weight=weight)
    assert_close(ours.result(), theirs.result())
    assert [(v.name, v.path, v.trainable) for v in ours.variables] == \
        [(v.name, v.path, v.trainable) for v in theirs.variables]
    assert_close(ours(y_true, y_pred), theirs(y_true, y_pred))
    ours.reset_state()
    assert float(np.asarray(ours.result())) == 0.0
    assert ours.get_config() == {"name": "binary_true_positives", "dtype": "float32"}


@pytest.mark.parametrize("name,kwargs,kind", [
    ("Mean", {}, "values"), ("AUC", {"num_thresholds": 20}, "binary"), ("Precision", {"thresholds": [0.3, 0.6]},
                                                                          "binary"),
])
def test_stateless_api_matches_keras_and_leaves_the_state_alone(name, kwargs, kind):
    ours, theirs = getattr(metrics, name)(**kwargs), getattr(keras.metrics, name)(**kwargs)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    inputs, weight = batch(kind, rng, integer_weights=False)
    ours.update_state(*inputs)
    before = [v.numpy() for v in ours.variables]
    state, theirs_state = ours.stateless_reset_state(), theirs.stateless_reset_state()
    for _ in range(2):
        inputs, weight = batch(kind, rng, integer_weights=False)
        state = ours.stateless_update_state(state, *inputs, sample_weight=weight)
        theirs_state = theirs.stateless_update_state(theirs_state, *inputs, sample_weight=weight)
    for mine, keras_value in zip(state, theirs_state):
        assert_close(mine, keras_value)
    assert_close(ours.stateless_result(state), theirs.stateless_result(theirs_state))
    for variable, value in zip(ours.variables, before):
        np.testing.assert_array_equal(variable.numpy(), value)
    with pytest.raises(ValueError, match="corresponding 1:1"):
        ours.stateless_result(state[:-1])


def test_add_weight_variables_of_nested_metrics_and_the_super_check():
    class Pair(metrics.Metric):
        def __init__(self):
            super().__init__(name="pair")
            self.inner = metrics.Mean(name="inner")
            self.hits = self.add_weight(shape=(2,), initializer="ones", dtype="int32", name="hits")

    pair = Pair()
    assert [v.path for v in pair.variables] == ["pair/hits", "inner/total", "inner/count"]
    assert pair.hits.dtype == "int32" and not pair.hits.trainable and pair.hits.numpy().tolist() == [1, 1]
    assert not hasattr(pair, "weights") and not hasattr(keras.metrics.Mean(), "weights")
    pair.inner.update_state([2.0, 4.0])
    pair.reset_state()
    assert all(not np.any(v.numpy()) for v in pair.variables)

    class Forgetful(metrics.Metric):
        def __init__(self):
            self.total = self.add_variable(shape=(), initializer="zeros")

    with pytest.raises(RuntimeError, match="super"):
        Forgetful()


FUNCTION_CASES = [
    ("binary_accuracy", {}, "binary"), ("binary_accuracy", {"threshold": 0.7}, "binary"),
    ("categorical_accuracy", {}, "categorical"), ("sparse_categorical_accuracy", {}, "sparse"),
    ("top_k_categorical_accuracy", {"k": 2}, "categorical"), ("sparse_top_k_categorical_accuracy", {"k": 2}, "sparse"),
    ("sparse_top_k_categorical_accuracy", {"k": 2, "from_sorted_ids": True}, "sorted_ids"),
    ("binary_crossentropy", {}, "binary"),
    ("binary_crossentropy", {"from_logits": True, "label_smoothing": 0.1}, "binary_logits"),
    ("binary_focal_crossentropy", {}, "binary"),
    ("binary_focal_crossentropy", {"apply_class_balancing": True, "gamma": 1.5, "from_logits": True},
     "binary_logits"),
    ("categorical_crossentropy", {}, "categorical"),
    ("categorical_crossentropy", {"from_logits": True, "label_smoothing": 0.2}, "categorical_logits"),
    ("categorical_focal_crossentropy", {}, "categorical"),
    ("categorical_focal_crossentropy", {"from_logits": True, "alpha": 0.5}, "categorical_logits"),
    ("sparse_categorical_crossentropy", {}, "sparse"),
    ("sparse_categorical_crossentropy", {"from_logits": True, "ignore_class": 1}, "sparse_logits"),
    ("kl_divergence", {}, "distribution"), ("poisson", {}, "positive"),
    ("hinge", {}, "hinge"), ("hinge", {}, "binary"), ("squared_hinge", {}, "hinge"),
    ("categorical_hinge", {}, "categorical"),
    ("huber", {}, "regression"), ("huber", {"delta": 0.3}, "regression"), ("log_cosh", {}, "regression"),
    ("mean_absolute_error", {}, "regression"), ("mean_absolute_percentage_error", {}, "positive"),
    ("mean_squared_error", {}, "regression"), ("mean_squared_logarithmic_error", {}, "positive"),
    ("pearson_correlation", {}, "regression"), ("concordance_correlation", {}, "regression"),
]


@pytest.mark.parametrize("name,kwargs,kind", FUNCTION_CASES)
def test_metric_functions_match_keras(name, kwargs, kind):
    inputs, _ = batch(kind, np.random.default_rng(zlib.crc32(name.encode())), integer_weights=False)
    ours = getattr(metrics, name)(*inputs, **kwargs)
    theirs = getattr(keras.metrics, name)(*inputs, **kwargs)
    assert np.shape(ours) == tuple(theirs.shape)
    assert_close(ours, theirs)


def test_functions_given_as_metrics_are_wrapped_and_named_as_keras_compile_does():
    from keras.src.trainers.compile_utils import get_metric

    def meanAbsoluteGap(y_true, y_pred):  # noqa: N802 (a camelCase name shows the snake_case naming)
        return np.mean(np.abs(np.asarray(y_true) - np.asarray(y_pred)), axis=-1)

    inputs, weight = batch("regression", np.random.default_rng(0), integer_weights=False)
    for identifier in (meanAbsoluteGap, metrics.hinge):
        ours, theirs = metrics.get(identifier), get_metric(identifier, None, None)
        assert type(ours) is metrics.MeanMetricWrapper and ours.name == theirs.name
        ours.update_state(*inputs, sample_weight=weight)
        theirs.update_state(*inputs, sample_weight=weight)
        assert_close(ours.result(), theirs.result())
    assert metrics.get(metrics.hinge).get_config() == keras.metrics.MeanMetricWrapper(
        keras.metrics.hinge, name="hinge").get_config()


def test_get_names_the_metric_after_the_string_as_keras_compile_does():
    from keras.src.metrics import ALL_OBJECTS_DICT
    from keras.src.trainers.compile_utils import get_metric

    for name in ALL_OBJECTS_DICT:
        if name.lower() == "accuracy":  # resolved from the data's shapes; see resolve_accuracy's tests
            continue
        try:
            theirs = get_metric(name, None, None)
        except TypeError:  # classes with required arguments (IoU, MeanMetricWrapper...)
            continue
        ours = metrics.get(name)
        assert (type(ours).__name__, ours.name) == (type(theirs).__name__, theirs.name)
        assert type(metrics.deserialize(name)).__name__ == type(keras.metrics.deserialize(name)).__name__
    assert metrics.get(None) is None
    assert metrics.get(metrics.AUC).name.startswith("auc")
    with pytest.raises(ValueError, match="'accuracyy'.*Valid names"):
        metrics.get("accuracyy")


def test_serialize_and_deserialize_speak_keras_configs():
    for name in ("hinge", "binary_accuracy", "kl_divergence", "concordance_correlation"):
        assert metrics.serialize(getattr(metrics, name)) == keras.metrics.serialize(getattr(keras.metrics, name))
        assert metrics.deserialize(keras.metrics.serialize(getattr(keras.metrics, name))) is getattr(metrics, name)
    for metric in (keras.metrics.AUC(curve="PR", thresholds=[0.2, 0.7], name="pr"), keras.metrics.F1Score(
            average="macro", name="f1"), keras.metrics.MeanMetricWrapper(keras.metrics.hinge, name="w")):
        config = keras.metrics.serialize(metric)
        ours = metrics.deserialize(config)
        assert type(ours).__name__ == type(metric).__name__
        assert metrics.serialize(ours)["config"] == config["config"]
        rebuilt = metrics.deserialize(metrics.serialize(ours))
        assert rebuilt.get_config() == ours.get_config()
    with pytest.raises(ValueError, match="Cannot serialize"):
        metrics.serialize(lambda y_true, y_pred: y_pred)


def test_custom_metrics_deserialize_from_custom_objects_and_the_registry():
    custom = binary_true_positives_class(kgraph)
    config = metrics.serialize(custom(name="tp"))
    assert config["class_name"] == "BinaryTruePositives" and config["module"] == __name__
    assert metrics.deserialize(config, custom_objects={"BinaryTruePositives": custom}).name == "tp"

    @kgraph.saving.register_keras_serializable(package="MetricsTest")
    def doubled_error(y_true, y_pred):
        return 2.0 * metrics.mean_absolute_error(y_true, y_pred)

    wrapper = metrics.MeanMetricWrapper(doubled_error, name="doubled")
    assert wrapper.get_config()["fn"]["config"] == "MetricsTest>doubled_error"
    rebuilt = metrics.deserialize(metrics.serialize(wrapper))
    assert rebuilt.get_config() == wrapper.get_config()
    assert rebuilt([[1.0, 2.0]], [[2.0, 2.0]]) == pytest.approx(1.0)


def test_compile_and_evaluate_with_function_and_new_metrics():
    def gap(y_true, y_pred):
        return np.abs(np.asarray(y_true) - np.asarray(y_pred))[..., 0]

    rng = np.random.default_rng(3)
    x = rng.normal(size=(32, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = kgraph.Sequential([kgraph.Input((4,)), kgraph.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy",
                  metrics=[gap, "mape", metrics.PrecisionAtRecall(0.5, name="p_at_r"), metrics.BinaryIoU(name="iou")])
    logs = model.evaluate(x, y, batch_size=8, return_dict=True, verbose=0)
    assert {"loss", "gap", "mape", "p_at_r", "iou"} <= set(logs)
    prediction = model.predict(x, verbose=0)
    assert logs["gap"] == pytest.approx(float(np.mean(np.abs(y - prediction))), rel=1e-5)
