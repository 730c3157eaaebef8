"""compile / fit / evaluate / predict on real models, and learning a real dataset."""
import numpy as np
import pytest

import kgraph
from kgraph import layers


def _mlp(inputs=8, outputs=3, activation="softmax"):
    x = kgraph.Input(shape=(inputs,), name="x")
    h = layers.Dense(16, activation="relu", name="hidden")(x)
    return kgraph.Model(x, layers.Dense(outputs, activation=activation, name="out")(h))


def _blobs(n=240, features=8, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(classes, features))
    y = rng.integers(0, classes, size=n)
    x = (centers[y] + rng.normal(size=(n, features))).astype("float32")
    return x, y


def test_digits_mlp_reaches_95_percent_held_out():
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    kgraph.utils.set_random_seed(0)
    model = kgraph.Sequential([kgraph.Input(shape=(64,)), layers.Dense(64, activation="relu"),
                               layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x[:split], y[:split], batch_size=32, epochs=15, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, accuracy = model.evaluate(x[split:], y[split:], verbose=0)
    assert accuracy >= 0.95, accuracy
    predicted = model.predict(x[split:], verbose=0).argmax(axis=1)
    assert np.mean(predicted == y[split:]) == pytest.approx(accuracy, abs=1e-6)


def test_fit_returns_history_with_validation_metrics():
    x, y = _blobs()
    kgraph.utils.set_random_seed(1)
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=3, batch_size=32, validation_split=0.25, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(history.history["loss"]) == 3
    assert history.epoch == [0, 1, 2]
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert set(result) == {"loss", "accuracy"}


def test_accuracy_resolves_from_shapes():
    x, y = _blobs()
    onehot = np.eye(3, dtype="float32")[y]
    model = _mlp()
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, onehot, epochs=1, verbose=0)
    assert type(model.metrics[-1]).__name__ == "CategoricalAccuracy"
    binary = _mlp(outputs=1, activation="sigmoid")
    binary.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    binary.fit(x, (y > 0).astype("float32"), epochs=1, verbose=0)
    assert type(binary.metrics[-1]).__name__ == "BinaryAccuracy"
    sparse = _mlp()
    sparse.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    sparse.fit(x, y, epochs=1, verbose=0)
    assert type(sparse.metrics[-1]).__name__ == "SparseCategoricalAccuracy"


def test_multi_output_losses_by_dict_and_loss_weights():
    a = kgraph.Input(shape=(4,), name="a")
    b = kgraph.Input(shape=(2,), name="b")
    h = layers.Dense(8, activation="relu", name="h")(layers.Concatenate(name="cat")([a, b]))
    reg = layers.Dense(1, name="reg")(h)
    cls = layers.Dense(3, activation="softmax", name="cls")(h)
    model = kgraph.Model({"a": a, "b": b}, [reg, cls])
    model.compile(optimizer="adam", loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                  loss_weights={"reg": 0.5, "cls": 1.0}, metrics={"cls": ["accuracy"]})
    rng = np.random.default_rng(0)
    xa, xb = rng.normal(size=(64, 4)).astype("float32"), rng.normal(size=(64, 2)).astype("float32")
    yr, yc = rng.normal(size=(64, 1)).astype("float32"), rng.integers(0, 3, size=64)
    history = model.fit({"a": xa, "b": xb}, {"reg": yr, "cls": yc}, epochs=2, batch_size=16, verbose=0)
    assert {"loss", "reg_loss", "cls_loss", "cls_accuracy"} <= set(history.history)
    logs = model.evaluate({"a": xa, "b": xb}, [yr, yc], verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(0.5 * logs["reg_loss"] + logs["cls_loss"], rel=1e-4)


def test_data_errors_before_any_step():
    model = _mlp()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    before = model.get_weights()
    x, y = _blobs(n=40)
    with pytest.raises(ValueError, match="Data cardinality is ambiguous"):
        model.fit(x, y[:30], verbose=0)
    with pytest.raises(ValueError, match="(?i)unknown key"):
        model.fit({"x": x, "extra": x}, y, verbose=0)
    for w, b in zip(model.get_weights(), before):
        np.testing.assert_array_equal(w, b)
    with pytest.raises(RuntimeError, match="compile"):
        _mlp().fit(x, y, verbose=0)


def test_sample_and_class_weights_change_the_loss():
    x, y = _blobs(n=64)
    model = _mlp()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    plain = model.evaluate(x, y, verbose=0)
    weights = np.where(y == 0, 2.0, 0.0)
    weighted = model.evaluate(x, y, sample_weight=weights, verbose=0)
    assert weighted != pytest.approx(plain)
    model.fit(x, y, class_weight={0: 1.0, 1: 2.0, 2: 0.5}, epochs=1, verbose=0)


def test_on_batch_methods():
    x, y = _blobs(n=32)
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    loss, acc = model.train_on_batch(x, y)
    assert np.isfinite(loss) and 0 <= acc <= 1
    assert set(model.test_on_batch(x, y, return_dict=True)) == {"loss", "accuracy"}
    assert model.predict_on_batch(x).shape == (32, 3)


def test_dropout_only_in_training():
    drop = layers.Dropout(0.5, seed=3)
    x = np.ones((1000, 10), "float32")
    np.testing.assert_array_equal(drop(x), x)
    np.testing.assert_array_equal(drop(x, training=False), x)
    out = drop(x, training=True)
    assert set(np.unique(out)) <= {0.0, 2.0}
    assert 0.4 < np.mean(out == 0) < 0.6


def test_set_random_seed_makes_training_reproducible():
    x, y = _blobs()

    def run():
        kgraph.utils.set_random_seed(42)
        inputs = kgraph.Input(shape=(8,))
        h = layers.Dropout(0.3)(layers.Dense(16, activation="relu")(inputs))
        model = kgraph.Model(inputs, layers.Dense(3, activation="softmax")(h))
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, epochs=2, batch_size=16, verbose=0)
        return model.get_weights()

    for a, b in zip(run(), run()):
        np.testing.assert_array_equal(a, b)


def test_shared_and_nested_layers_train():
    inner_in = kgraph.Input(shape=(4,))
    inner = kgraph.Model(inner_in, layers.Dense(4, activation="tanh")(inner_in))
    a = kgraph.Input(shape=(4,))
    shared = layers.Dense(4)
    out = layers.Dense(1)(layers.Add()([inner(shared(a)), inner(shared(inner(a)))]))
    model = kgraph.Model(a, out)
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 4)).astype("float32")
    y = np.sum(x, axis=1, keepdims=True).astype("float32")
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=30, batch_size=32, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * first


def test_regularizers_and_add_loss_enter_the_loss():
    x, y = _blobs(n=32)
    inputs = kgraph.Input(shape=(8,))
    out = layers.Dense(3, activation="softmax", kernel_regularizer=kgraph.regularizers.L2(10.0))(inputs)
    model = kgraph.Model(inputs, out)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    plain = _mlp()
    plain.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    assert len(model.losses) == 1
    assert model.evaluate(x, y, verbose=0) > 1.0 + float(np.asarray(model.losses[0])) * 0.99

    class Penalty(kgraph.Layer):
        def call(self, inputs):
            self.add_loss(kgraph.ops.multiply(kgraph.ops.mean(kgraph.ops.square(inputs)), 100.0))
            return inputs

        def compute_output_shape(self, input_shape):
            return input_shape

    inputs = kgraph.Input(shape=(8,))
    model = kgraph.Model(inputs, layers.Dense(3, activation="softmax")(Penalty()(inputs)))
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    assert model.evaluate(x, y, verbose=0) > 100.0 * float(np.mean(np.square(x))) * 0.99


def test_verbose_progress_output(capsys):
    x, y = _blobs(n=64)
    model = _mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=2, batch_size=16, verbose=2)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "loss" in out and "accuracy" in out
    model.fit(x, y, epochs=1, batch_size=16, verbose=1)
    assert "4/4" in capsys.readouterr().out
