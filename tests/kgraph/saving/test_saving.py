"""model.save / kgraph.load_model: round trips, resumed training, and the restricted unpickler."""
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import kgraph
from kgraph import layers


def _model():
    a = kgraph.Input(shape=(6,), name="a")
    shared = layers.Dense(6, activation="tanh", name="shared")
    h = layers.Add(name="add")([shared(a), shared(shared(a))])
    return kgraph.Model(a, layers.Dense(3, activation="softmax", name="head")(layers.Dropout(0.1)(h)))


def _data(n=96):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 6)).astype("float32"), rng.integers(0, 3, size=n)


def test_round_trip_architecture_weights_and_compile(tmp_path):
    x, y = _data()
    model = _model()
    model.compile(optimizer=kgraph.optimizers.Adam(learning_rate=0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, y, epochs=1, verbose=0)
    path = tmp_path / "model.pkl"
    model.save(path)
    loaded = kgraph.load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    assert loaded.compiled and type(loaded.optimizer).__name__ == "Adam"
    assert loaded.optimizer.learning_rate == pytest.approx(0.01)
    assert loaded.optimizer.iterations == model.optimizer.iterations
    assert set(loaded.evaluate(x, y, verbose=0, return_dict=True)) == {"loss", "accuracy"}


def test_resumed_training_continues_exactly(tmp_path):
    x, y = _data()

    def fresh():
        kgraph.utils.set_random_seed(7)
        model = _model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        return model

    stopped = fresh()
    stopped.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    stopped.save(tmp_path / "half.pkl")
    resumed = kgraph.load_model(tmp_path / "half.pkl")
    kgraph.utils.set_random_seed(7)
    resumed.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    kgraph.utils.set_random_seed(7)
    stopped.fit(x, y, epochs=1, batch_size=16, shuffle=False, verbose=0)
    for a, b in zip(resumed.get_weights(), stopped.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_sequential_round_trip(tmp_path):
    model = kgraph.Sequential([kgraph.Input(shape=(3,)), layers.Dense(4, activation="relu"), layers.Dense(2)])
    model.save(tmp_path / "seq.pkl")
    loaded = kgraph.load_model(tmp_path / "seq.pkl")
    assert isinstance(loaded, kgraph.Sequential)
    x = np.ones((2, 3), "float32")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_weights_only(tmp_path):
    model, other = _model(), _model()
    model.save_weights(tmp_path / "w.pkl")
    other.load_weights(tmp_path / "w.pkl")
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /tmp/kgraph_pwned",))


class _EvilEval:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


@pytest.mark.parametrize("payload", [
    _Evil(), _EvilEval(), {"format": "kgraph-model", "x": _Evil()},
    np.array([1, "a"], dtype=object),
])
def test_malicious_pickles_are_refused_and_nothing_runs(tmp_path, payload):
    if os.path.exists("/tmp/kgraph_pwned"):
        os.unlink("/tmp/kgraph_pwned")
    path = tmp_path / "evil.pkl"
    path.write_bytes(pickle.dumps(payload))
    with pytest.raises(ValueError, match="Cannot load"):
        kgraph.load_model(path)
    assert not os.path.exists("/tmp/kgraph_pwned")


def test_getattr_chain_is_refused(tmp_path):
    # builtins.getattr(builtins, "eval") built with raw pickle opcodes.
    raw = b"cbuiltins\ngetattr\n(cbuiltins\n__dict__\nS'eval'\ntR."
    path = tmp_path / "chain.pkl"
    path.write_bytes(raw)
    with pytest.raises(ValueError, match="refusing to load global 'builtins.getattr'"):
        kgraph.load_model(path)


def test_truncated_and_foreign_files_are_clear_errors(tmp_path):
    model = _model()
    path = tmp_path / "m.pkl"
    model.save(path)
    data = path.read_bytes()
    (tmp_path / "cut.pkl").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        kgraph.load_model(tmp_path / "cut.pkl")
    (tmp_path / "list.pkl").write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(ValueError, match="not a kgraph model file"):
        kgraph.load_model(tmp_path / "list.pkl")
    with pytest.raises(FileNotFoundError):
        kgraph.load_model(tmp_path / "missing.pkl")


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "model.pkl"
    first = _model()
    first.save(path)
    original = path.read_bytes()

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(kgraph.saving.pickle_format.os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        _model().save(path)
    assert path.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["model.pkl"]


def test_layer_built_from_two_shapes_reloads(tmp_path):
    class Bilinear(kgraph.Layer):
        def build(self, left_shape, right_shape):
            self.w = self.add_weight(shape=(left_shape[-1], right_shape[-1]), name="w")

        def call(self, left, right):
            return kgraph.ops.sum(kgraph.ops.multiply(kgraph.ops.matmul(left, self.w), right), axis=-1,
                                  keepdims=True)

        def compute_output_shape(self, left_shape):
            return left_shape[:-1] + (1,)

    a, b = kgraph.Input(shape=(3,), name="left"), kgraph.Input(shape=(2,), name="right")
    model = kgraph.Model([a, b], Bilinear(name="bilinear")(a, b))
    model.save(tmp_path / "bilinear.pkl")
    loaded = kgraph.load_model(tmp_path / "bilinear.pkl")
    x = [np.ones((2, 3), "float32"), np.ones((2, 2), "float32")]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_model_saved_before_the_package_layout_changed_still_loads():
    # Written by kgraph 0.1 when its modules sat flat in kgraph/ (kgraph.layer, kgraph.functional, ...): model
    # files hold plain data and class names, never module paths, so they load into the current layout.
    data = Path(__file__).resolve().parents[3] / "tests" / "data" / "saved"
    model = kgraph.load_model(data / "model_0_1_flat_layout.pkl")
    expected = np.load(data / "model_0_1_flat_layout.npz")
    np.testing.assert_allclose(model.predict(expected["x"], verbose=0), expected["y"], rtol=1e-6, atol=1e-7)
    assert model.optimizer is not None and model.name == "before_move"
