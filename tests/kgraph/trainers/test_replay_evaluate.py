"""evaluate's test_step (and fit's validation) and predict's predict_step replayed: the same results bit for bit
as the steps as written."""
import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.trainers import replay


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6)).astype("float32")
    return x, (x[:, 0] - x[:, 2] > 0).astype("int64")


def _mlp():
    x = kgraph.Input((6,))
    h = layers.BatchNormalization()(layers.Dense(8, activation="relu")(x))
    return kgraph.Model(x, layers.Dense(2, activation="softmax")(layers.Dropout(0.3)(h)))


def _two_outputs():
    x = kgraph.Input((6,))
    h = layers.Dense(8, activation="relu")(x)
    return kgraph.Model(x, {"kind": layers.Dense(2, activation="softmax", name="kind")(h),
                            "score": layers.Dense(1, name="score")(h)})


def _compiled(build, jit_compile, **kwargs):
    kgraph.utils.set_random_seed(2)
    model = build()
    model.compile(**{"optimizer": "adam", "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"],
                     **kwargs}, jit_compile=jit_compile)
    return model


def _replayed(model, steps=replay._TEST_STEPS):
    """Whether a step of ``model`` in ``steps`` (evaluate's by default) was replayed."""
    step = steps.get(model)
    return step is not None and any(type(p) is not str and p.confirmed for p in step.programs.values())


def test_evaluate_replayed_bit_for_bit_and_after_weights_change():
    x, y = _data()
    runs = {}
    for jit_compile in ("auto", False):  # one after the other: Dropout draws from the global generator
        model = _compiled(_mlp, jit_compile)
        results = []
        for _ in range(3):  # later evaluates replay the traces of the first, on the trained weights
            results.append(model.evaluate(x, y, batch_size=32, verbose=0, return_dict=True))
            model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        runs[jit_compile] = results, model.evaluate(x, y, batch_size=32, verbose=0)
        assert _replayed(model) == (jit_compile == "auto")
    assert runs["auto"] == runs[False]
    assert runs["auto"][0][0] != runs["auto"][0][2]  # the weights changed between the evaluates


def test_fit_validation_replayed_bit_for_bit():
    x, y = _data()
    vx, vy = _data(96, seed=1)
    histories = []
    for jit_compile in ("auto", False):
        model = _compiled(_mlp, jit_compile)
        histories.append(model.fit(x, y, batch_size=32, epochs=3, verbose=0, validation_data=(vx, vy)).history)
    assert "val_loss" in histories[0] and histories[0] == histories[1]


def test_evaluate_of_several_losses_and_a_callback_reading_each_batch():
    x, _ = _data()
    targets = {"kind": (x[:, 1] > 0).astype("int64"), "score": x[:, :1] * 2.0}
    compile_kwargs = {"loss": {"kind": "sparse_categorical_crossentropy", "score": "mse"},
                      "metrics": {"kind": ["accuracy"]}}
    seen = {"auto": [], False: []}
    results = {}
    for jit_compile in ("auto", False):
        model = _compiled(_two_outputs, jit_compile, **compile_kwargs)
        callback = kgraph.callbacks.LambdaCallback(on_test_batch_end=lambda batch, logs, j=jit_compile:
                                                   seen[j].append(logs))
        for _ in range(2):
            results[jit_compile] = model.evaluate(x, targets, batch_size=32, verbose=0, return_dict=True,
                                                  callbacks=[callback])
        assert _replayed(model) == (jit_compile == "auto")
    assert results["auto"] == results[False] and {"kind_loss", "score_loss"} <= set(results[False])
    assert len(seen["auto"]) == 14 and seen["auto"] == seen[False]


def test_a_custom_test_step_and_run_eagerly_evaluate_as_written():
    class Custom(kgraph.Model):
        def test_step(self, data):
            self.calls = getattr(self, "calls", 0) + 1
            return super().test_step(data)
    x, y = _data()
    inputs = kgraph.Input((6,))
    model = Custom(inputs, layers.Dense(2, activation="softmax")(inputs))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.evaluate(x, y, batch_size=32, verbose=0)
    assert model.calls == 7 and replay._TEST_STEPS.get(model) is None
    eager = _compiled(_mlp, "auto", run_eagerly=True)
    eager.evaluate(x, y, batch_size=32, verbose=0)
    assert replay._TEST_STEPS.get(eager) is None


@pytest.mark.parametrize("labels", [np.array([0, 1] * 100), np.array([0, 5] * 100)])
def test_labels_out_of_range_still_raise_in_a_replayed_evaluate(labels):
    x, _ = _data()
    model = _compiled(_mlp, "auto")
    model.evaluate(x, np.array([0, 1] * 100), batch_size=32, verbose=0)
    model.evaluate(x, np.array([0, 1] * 100), batch_size=32, verbose=0)
    assert _replayed(model)
    if labels.max() < 2:
        model.evaluate(x, labels, batch_size=32, verbose=0)
    else:
        with pytest.raises(ValueError, match="Expected labels in"):
            model.evaluate(x, labels, batch_size=32, verbose=0)


def test_predict_replayed_bit_for_bit_compiled_or_not():
    x, y = _data()
    outputs = {}
    for jit_compile in ("auto", False):
        model = _compiled(_mlp, jit_compile)
        first = [model.predict(x, batch_size=32, verbose=0) for _ in range(3)]
        model.fit(x, y, batch_size=32, epochs=1, verbose=0)
        outputs[jit_compile] = first + [model.predict(x, batch_size=32, verbose=0)]
        assert _replayed(model, replay._PREDICT_STEPS) == (jit_compile == "auto")
    for got, expected in zip(outputs["auto"], outputs[False]):
        np.testing.assert_array_equal(got, expected)
    assert not np.array_equal(outputs["auto"][0], outputs["auto"][3])  # trained in between
    kgraph.utils.set_random_seed(4)
    uncompiled = _two_outputs()
    runs = [uncompiled.predict(x, batch_size=64, verbose=0) for _ in range(3)]
    assert _replayed(uncompiled, replay._PREDICT_STEPS)
    expected = uncompiled(x[:64], training=False)
    for key in ("kind", "score"):
        np.testing.assert_array_equal(runs[2][key][:64], np.asarray(expected[key]))
        np.testing.assert_array_equal(runs[0][key], runs[2][key])


def test_a_custom_predict_step_and_single_rows_predict_as_written():
    class Custom(kgraph.Model):
        def predict_step(self, data):
            return super().predict_step(data) * 2.0
    x, _ = _data()
    inputs = kgraph.Input((6,))
    model = Custom(inputs, layers.Dense(2)(inputs))
    np.testing.assert_array_equal(model.predict(x, verbose=0), np.asarray(model(x)) * 2.0)
    assert replay._PREDICT_STEPS.get(model) is None
    single = _compiled(_mlp, "auto")
    rows = [single.predict(x[i:i + 1], verbose=0) for i in range(3)]  # a batch of one row is never replayed
    assert not _replayed(single, replay._PREDICT_STEPS)
    for i, row in enumerate(rows):
        np.testing.assert_array_equal(row, np.asarray(single(x[i:i + 1], training=False)))
