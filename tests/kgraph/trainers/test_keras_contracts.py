"""Keras 3's training contracts, kept: programs that customize `fit` run with `keras` renamed `kgraph`.

The programs follow Keras's guide "Customizing what happens in `fit()`" and the docstrings of
`Model.compute_loss` / `compute_metrics`. Where Keras is installed (torch backend, see tests/conftest.py)
the same program runs on both from the same weights, and their losses, metrics and weights are compared.
"""
import inspect
import io
import sys
import warnings

import numpy as np
import pytest

import kgraph
from tests.kgraph.trainers.keras_contract_helpers import (
    _assert_close,
    _assert_same_weights,
    _copy_weights,
    _data,
    _dense_model,
)


# ----- 1. compile() without a loss ------------------------------------------------------------------------
def _penalized_model(K):
    class Penalized(K.Model):
        """A model whose whole objective is an `add_loss` term."""

        def __init__(self):
            super().__init__()
            self.dense = K.layers.Dense(2)

        def call(self, inputs):
            outputs = self.dense(inputs)
            self.add_loss(K.ops.mean(K.ops.square(outputs - 1.0)))
            return outputs

    return Penalized()


def test_compile_without_a_loss_trains_on_the_added_losses():
    x, _ = _data()
    model = _penalized_model(kgraph)
    model.compile(optimizer=kgraph.optimizers.SGD(0.1))
    history = model.fit(x, batch_size=8, epochs=3, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert model.evaluate(x, verbose=0) == pytest.approx(float(np.asarray(model.losses[0])), rel=1e-5)


def test_compile_without_a_loss_matches_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {}
    for K in (keras, kgraph):
        models[K] = _penalized_model(K)
        models[K].compile(optimizer=K.optimizers.SGD(0.1))
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, batch_size=8, epochs=2, shuffle=False, verbose=0).history,
                m.evaluate(x, verbose=0), m.evaluate(x, y, verbose=0)) for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1:], runs[keras][1:])
    _assert_same_weights(models[kgraph], models[keras])


def test_a_model_with_no_loss_at_all_fails_at_fit_with_the_keras_error():
    x, y = _data()
    model = _dense_model(kgraph)
    model.compile(optimizer="sgd")  # accepted, as in Keras: the loss may come from add_loss or compute_loss
    before = model.get_weights()
    for run in (lambda: model.fit(x, y, verbose=0), lambda: model.evaluate(x, y, verbose=0),
                lambda: model.train_on_batch(x, y)):
        with pytest.raises(ValueError, match=r"^No loss to compute\. Provide a `loss` argument in `compile\(\)`\.$"):
            run()
    for w, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(w, b)


# ----- 2. compute_loss / compute_metrics / metrics ----------------------------------------------------------
def test_compute_loss_has_the_keras_signature_and_sums_compiled_and_added_losses():
    keras = pytest.importorskip("keras")
    ours = inspect.signature(kgraph.Model.compute_loss).parameters
    theirs = inspect.signature(keras.Model.compute_loss).parameters
    assert [(p.name, p.default) for p in ours.values()] == [(p.name, p.default) for p in theirs.values()]
    x, y = _data(n=8)
    inputs = kgraph.Input(shape=(4,))
    model = kgraph.Model(inputs, kgraph.layers.Dense(2, kernel_regularizer=kgraph.regularizers.L2(0.5))(inputs))
    model.compile(optimizer="sgd", loss="mse")
    y_pred = model(x)
    loss = model.compute_loss(y=y, y_pred=y_pred)
    assert np.shape(loss) == ()
    expected = np.mean((y - y_pred) ** 2) + sum(float(np.asarray(term)) for term in model.losses)
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def _mae_loss_model(K, with_training=True):
    class CustomLoss(K.Model):
        """`compute_loss` overridden: a mean absolute error, doubled in training (so `training` matters)."""

        def __init__(self):
            super().__init__()
            self.dense = K.layers.Dense(2)

        def call(self, inputs):
            return self.dense(inputs)

        if with_training:
            def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
                return K.ops.mean(K.ops.abs(y_pred - y)) * (2.0 if training else 1.0)
        else:
            def compute_loss(self, inputs=None, targets=None, predictions=None, weights=None):  # as before Keras 3.3
                return K.ops.mean(K.ops.abs(predictions - targets))

    return CustomLoss()


@pytest.mark.parametrize("with_training", [True, False])
def test_an_overridden_compute_loss_is_what_fit_and_evaluate_use_as_in_keras(with_training):
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {K: _mae_loss_model(K, with_training) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.1))
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history, m.evaluate(x, y, verbose=0))
            for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1], runs[keras][1])


def _custom_metric_model(K):
    class WithCustomMetric(K.Model):
        """Keras's `compute_metrics` docstring example: a metric updated next to the compiled ones."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.custom_metric = K.metrics.MeanSquaredError(name="custom_metric")

        def compute_metrics(self, x, y, y_pred, sample_weight):
            results = super().compute_metrics(x, y, y_pred, sample_weight)
            self.custom_metric.update_state(y, 2.0 * y_pred)
            results["custom_metric"] = self.custom_metric.result()
            return results

    return _dense_model(K, WithCustomMetric)


def test_compute_metrics_override_and_attribute_metrics_match_keras():
    keras = pytest.importorskip("keras")
    x, y = _data()
    models = {K: _custom_metric_model(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history,
                m.evaluate(x, y, batch_size=8, verbose=0)) for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1], runs[keras][1])
    assert [m.name for m in models[kgraph].metrics] == ["loss", "mae", "custom_metric"]  # the attribute is tracked
    models[kgraph].reset_metrics()
    assert [m.result() for m in models[kgraph].metrics] == [0.0, 0.0, 0.0]


def _two_outputs(K):
    inputs = K.Input(shape=(4,))
    hidden = K.layers.Dense(8, name="hidden")(inputs)
    return K.Model(inputs, [K.layers.Dense(2, name="o1")(hidden), K.layers.Dense(3, name="o2")(hidden)])


def test_multi_output_logs_weighted_metrics_and_evaluate_order_match_keras():
    keras = pytest.importorskip("keras")
    x, y1 = _data()
    y2, weights = _data(outputs=3, seed=1)[1], np.random.default_rng(2).uniform(size=len(x)).astype("float32")
    models = {K: _two_outputs(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss=["mse", "mse"], loss_weights=[1.0, 0.5],
                      metrics=[["mae"], ["mse"]], weighted_metrics=[["mae"], ["mse"]])
    _copy_weights(models[keras], models[kgraph], x[:1])
    runs = {K: (m.fit(x, [y1, y2], sample_weight=weights, batch_size=8, epochs=2, shuffle=False,
                      verbose=0).history,
                m.evaluate(x, [y1, y2], sample_weight=weights, verbose=0),
                m.evaluate(x, [y1, y2], sample_weight=weights, verbose=0, return_dict=True))
            for K, m in models.items()}
    _assert_close(runs[kgraph][0], runs[keras][0])
    _assert_close(runs[kgraph][1], runs[keras][1])  # the list's order is Keras's
    _assert_close(runs[kgraph][2], runs[keras][2])


# ----- 3. the steps' data, predict_step and progress (custom steps: test_keras_custom_steps.py)
def test_steps_receive_batches_packed_as_keras_packs_them():
    keras = pytest.importorskip("keras")
    x, y = _data(n=8)
    weights = np.ones(8, "float32")

    def seen(K, *args, **kwargs):
        class Recorder(K.Model):
            def train_step(self, data):
                self.shapes.append(K.tree.map_structure(lambda a: tuple(a.shape), data))
                return {}

        model = _dense_model(K, Recorder)
        model.shapes = []
        model.compile(optimizer="sgd")
        model.fit(*args, batch_size=4, verbose=0, **kwargs)
        return model.shapes

    for args, kwargs in (((x,), {}), ((x, y), {}), ((x, y), {"sample_weight": weights}), (([x],), {})):
        assert seen(kgraph, *args, **kwargs) == seen(keras, *args, **kwargs)


def test_predict_step_outputs_reach_the_batch_logs_and_the_progress_bar(capsys):
    x, _ = _data(n=20)

    class Doubled(kgraph.Model):
        def predict_step(self, data):
            return {"twice": 2.0 * self(data, training=False)}

    model = _dense_model(kgraph, Doubled)
    seen = []

    class Outputs(kgraph.callbacks.Callback):
        def on_predict_batch_end(self, batch, logs=None):
            seen.append(logs["outputs"]["twice"].shape)

    out = model.predict(x, batch_size=8, callbacks=[Outputs()], verbose=0)
    np.testing.assert_allclose(out["twice"], 2.0 * model(x), rtol=1e-6)
    assert seen == [(8, 2), (8, 2), (4, 2)] and capsys.readouterr().out == ""
    model.predict(x, batch_size=8, verbose=1)
    assert "3/3 ━━━━━━━━━━━━━━━━━━━━" in capsys.readouterr().out
    model.predict(x, batch_size=8, verbose=2)
    assert capsys.readouterr().out.startswith("3/3 - ")


def test_predict_prints_the_keras_progress_bar_by_default(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stream)
    _dense_model(kgraph).predict(_data(n=40)[0], batch_size=16)
    assert stream.getvalue().startswith("3/3 ━━━━━━━━━━━━━━━━━━━━ ") and stream.getvalue().endswith("/step\n")


# ----- 4. and 5. outputs resolved at the first fit; losses for some outputs only; PyDataset batches -------------
def _two_headed(K):
    class TwoHeaded(K.Model):
        def __init__(self):
            super().__init__()
            self.first, self.second = K.layers.Dense(2), K.layers.Dense(3)

        def call(self, inputs):
            return [self.first(inputs), self.second(inputs)]

    return TwoHeaded()


def test_a_loss_list_compiled_before_a_subclassed_model_is_called_matches_keras():
    keras = pytest.importorskip("keras")
    x, y1 = _data()
    y2 = _data(outputs=3, seed=1)[1]
    models = {K: _two_headed(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss=["mse", "mae"], metrics=[["mae"], ["mse"]])
    _copy_weights(models[keras], models[kgraph], x[:1])
    histories = {K: m.fit(x, [y1, y2], batch_size=8, epochs=2, shuffle=False, verbose=0).history
                 for K, m in models.items()}
    assert set(histories[kgraph]) == {"loss", "mse_loss", "mae_loss", "mae", "mse"}
    _assert_close(histories[kgraph], histories[keras])
    _assert_close(models[kgraph].evaluate(x, [y1, y2], verbose=0), models[keras].evaluate(x, [y1, y2], verbose=0))


def test_a_none_loss_takes_targets_only_for_the_outputs_with_a_loss_as_keras():
    keras = pytest.importorskip("keras")
    x, y1 = _data()
    models = {K: _two_outputs(K) for K in (keras, kgraph)}
    for K, model in models.items():
        model.compile(optimizer=K.optimizers.SGD(0.05), loss=["mse", None], metrics=[["mae"], None])
    _copy_weights(models[keras], models[kgraph], x[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both warn once: the output without a loss gets no gradient
        histories = {K: m.fit(x, y1, batch_size=8, epochs=2, shuffle=False, verbose=0).history
                     for K, m in models.items()}
    assert set(histories[kgraph]) == {"loss", "o1_mae"}
    _assert_close(histories[kgraph], histories[keras])
    _assert_close(models[kgraph].evaluate(x, y1, verbose=0), models[keras].evaluate(x, y1, verbose=0))
    _assert_same_weights(models[kgraph], models[keras])


class _Batches(kgraph.utils.PyDataset):
    def __init__(self, x, y, size):
        super().__init__()
        self.x, self.y, self.size = x, y, size

    def __len__(self):
        return -(-len(self.x) // self.size)

    def __getitem__(self, index):
        rows = slice(index * self.size, (index + 1) * self.size)
        return self.x[rows], self.y[rows]


def test_fit_on_a_pydataset_ignores_batch_size_silently_as_keras():
    x, y = _data()
    reference, model = _dense_model(kgraph), _dense_model(kgraph)
    for m in (reference, model):
        m.compile(optimizer=kgraph.optimizers.SGD(0.05), loss="mse")
    _copy_weights(reference, model, x[:1])
    expected = reference.fit(_Batches(x, y, 8), epochs=2, shuffle=False, verbose=0).history
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history = model.fit(_Batches(x, y, 8), batch_size=3, epochs=2, shuffle=False, verbose=0).history
        loss = model.evaluate(_Batches(x, y, 8), batch_size=3, verbose=0)
    assert loss == pytest.approx(reference.evaluate(x, y, verbose=0), rel=1e-6)
    assert history == expected


def test_get_compile_config_and_compile_from_config_as_keras():
    model = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(2)])
    assert model.get_compile_config() is None
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    config = model.get_compile_config()
    assert config["loss"] == "mse" and config["metrics"] == ["mae"] and config["optimizer"]["class_name"] == "Adam"
    other = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(2)])
    other.compile_from_config(config)
    assert other.compiled and type(other.optimizer).__name__ == "Adam"
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
    assert set(other.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "mae"}

    class OwnCompile(kgraph.Sequential):
        def compile(self, scale=1.0, **kwargs):
            super().compile(**kwargs)

    custom = OwnCompile([kgraph.Input((3,)), kgraph.layers.Dense(2)])
    with pytest.warns(UserWarning, match="defines a `compile\\(\\)` of its own"):
        custom.compile_from_config(config)
    assert not custom.compiled
