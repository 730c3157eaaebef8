"""Keras 3's file suffixes: ``save()`` takes ``.keras`` and ``.pkl`` only; ``.weights.h5`` is Keras's HDF5 layout."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import layers

h5py = pytest.importorskip("h5py")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(16, 5)).astype("float32")
Y = RNG.normal(size=(16, 3)).astype("float32")


def _kgraph_model():
    x = kgraph.Input((5,), name="x")
    h = layers.Dense(8, activation="relu")(x)
    h = layers.BatchNormalization()(h)
    return kgraph.Model(x, layers.Dense(3)(h))


def _keras_model(keras):
    x = keras.Input((5,), name="x")
    h = keras.layers.Dense(8, activation="relu")(x)
    h = keras.layers.BatchNormalization()(h)
    return keras.Model(x, keras.layers.Dense(3)(h))


def _trained(model):
    model.compile(optimizer="adam", loss="mse")
    model.fit(X, Y, epochs=2, batch_size=8, verbose=0)
    return model


@pytest.mark.parametrize("name", ["m.h5", "m.hdf5", "m.weights.h5"])
def test_saving_a_model_as_hdf5_is_refused_pointing_to_keras_format(tmp_path, name):
    with pytest.raises(ValueError, match=r"HDF5 file \(the legacy Keras format\).*model\.save\('my_model\.keras'\)"):
        _kgraph_model().save(tmp_path / name)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("name", ["noext", "m.kgraph", "m.onnx", "m.pickle"])
def test_saving_a_model_with_another_suffix_is_refused_by_name(tmp_path, name):
    with pytest.raises(ValueError, match=rf"Invalid filepath extension.*`\.keras`.*`\.pkl`.*filepath=.*{name}"):
        kgraph.saving.save_model(_kgraph_model(), tmp_path / name)
    assert os.listdir(tmp_path) == []


def test_save_weights_refuses_other_suffixes(tmp_path):
    with pytest.raises(ValueError, match=r"must end in `\.weights\.h5`.*`\.pkl`.*w\.weights"):
        _kgraph_model().save_weights(tmp_path / "w.weights")
    assert os.listdir(tmp_path) == []


def test_weights_h5_is_hdf5_in_keras_layout_and_round_trips(tmp_path):
    model, other = _trained(_kgraph_model()), _kgraph_model()
    path = tmp_path / "model.weights.h5"
    model.save_weights(path)
    with h5py.File(path, "r") as f:
        assert sorted(f["layers"].keys()) == ["batch_normalization", "dense", "dense_1", "input_layer"]
        assert f["layers/dense/vars/0"].shape == (5, 8) and len(f["layers/batch_normalization/vars"]) == 4
        assert "optimizer/vars" in f  # a compiled model's optimizer state, as Keras writes it
    other.load_weights(path)
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_optimizer_state_returns_into_a_compiled_model(tmp_path):
    model = _trained(_kgraph_model())
    path = tmp_path / "model.weights.h5"
    model.save_weights(path)
    other = _kgraph_model()
    other.compile(optimizer="adam", loss="mse")
    other.load_weights(path)
    assert int(np.asarray(other.optimizer.iterations)) == int(np.asarray(model.optimizer.iterations)) == 4


def test_load_weights_errors_name_the_problem(tmp_path):
    fake = tmp_path / "fake.weights.h5"
    fake.write_bytes(b"not an hdf5 file")
    with pytest.raises(ValueError, match="fake.weights.h5': it is not an HDF5 file"):
        _kgraph_model().load_weights(fake)
    path = tmp_path / "model.weights.h5"
    _kgraph_model().save_weights(path)
    wider = kgraph.Sequential([kgraph.Input((5,)), layers.Dense(9)])
    with pytest.raises(ValueError, match="Cannot load"):
        wider.load_weights(path)
    with pytest.raises(ValueError, match="it is an HDF5 file, which holds weights only"):
        kgraph.load_model(path)


def test_kgraph_weights_load_in_keras_and_back():
    keras = pytest.importorskip("keras")
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        ours = _trained(_kgraph_model())
        ours.save_weights(os.path.join(folder, "kgraph.weights.h5"))
        theirs = _keras_model(keras)
        theirs.load_weights(os.path.join(folder, "kgraph.weights.h5"))
        # float32 Dense + BatchNormalization in two engines: a few ulps of the outputs' scale.
        np.testing.assert_allclose(theirs.predict(X, verbose=0), ours.predict(X, verbose=0), rtol=1e-5, atol=1e-5)

        trained = _trained(_keras_model(keras))
        trained.save_weights(os.path.join(folder, "keras.weights.h5"))
        back = _kgraph_model()
        back.compile(optimizer="adam", loss="mse")
        back.load_weights(os.path.join(folder, "keras.weights.h5"))
        np.testing.assert_allclose(back.predict(X, verbose=0), trained.predict(X, verbose=0), rtol=1e-5, atol=1e-5)
        assert int(np.asarray(back.optimizer.iterations)) == int(trained.optimizer.iterations.numpy()) == 4


def test_model_checkpoint_checks_the_suffix_before_training(tmp_path):
    with pytest.raises(ValueError, match=r"must end in `\.keras` or `\.pkl`\. Received: filepath=.*ckpt\.h5"):
        kgraph.callbacks.ModelCheckpoint(str(tmp_path / "ckpt.h5"))
    with pytest.raises(ValueError, match=r"`\.weights\.h5` or `\.pkl` when save_weights_only=True"):
        kgraph.callbacks.ModelCheckpoint(str(tmp_path / "ckpt.keras"), save_weights_only=True)
    model = _kgraph_model()
    model.compile(optimizer="adam", loss="mse")
    checkpoint = kgraph.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch}.weights.h5"), save_weights_only=True)
    model.fit(X, Y, epochs=2, batch_size=8, verbose=0, callbacks=[checkpoint])
    assert sorted(os.listdir(tmp_path)) == ["w-1.weights.h5", "w-2.weights.h5"]
    restored = _kgraph_model()
    restored.load_weights(tmp_path / "w-2.weights.h5")
    np.testing.assert_array_equal(restored.predict(X, verbose=0), model.predict(X, verbose=0))


def test_a_legacy_hdf5_model_file_is_named_as_such(tmp_path):
    path = tmp_path / "legacy.h5"
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = "2.15.0"
        f.create_group("model_weights")
    with pytest.raises(ValueError, match=r"legacy.h5': it is an HDF5 file, Keras's legacy model format.*"
                                         r"model\.save\('my_model\.keras'\)"):
        kgraph.load_model(path)
