"""`.keras` files keep what resuming training needs: the ``compile_config`` (optimizer, loss, metrics, loss weights)
and the optimizer's variables, which Keras writes under ``optimizer/`` of ``model.weights.h5`` in its own order.

kgraph -> kgraph resumes exactly. Between Keras (torch) and kgraph the optimizer variables are equal as saved, and
after one more epoch of training the weights agree to 1e-5 and the losses to 1e-5 (float32, summed in another order).
"""
import io
import json
import zipfile

import numpy as np
import pytest

import kgraph
from kgraph import layers, optimizers
from kgraph.saving.keras_compile import optimizer_variables

h5py = pytest.importorskip("h5py")
RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 3)).astype("float32")
Y = RNG.integers(0, 2, size=(32, 1)).astype("float32")
FIT = {"batch_size": 8, "shuffle": False, "verbose": 0}


def _optimizers():
    return {"adam": optimizers.Adam(0.01), "adam_amsgrad": optimizers.Adam(0.01, amsgrad=True),
            "adamw": optimizers.AdamW(0.01), "adagrad": optimizers.Adagrad(0.1),
            "rmsprop_centered": optimizers.RMSprop(0.01, momentum=0.5, centered=True),
            "sgd_schedule": optimizers.SGD(optimizers.schedules.ExponentialDecay(0.1, 10, 0.9), momentum=0.9)}


def _model(optimizer):
    kgraph.utils.set_random_seed(1)
    model = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(4, activation="relu"), layers.BatchNormalization(),
                               layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"], loss_weights=[2.0])
    return model


def _max_difference(left, right):
    return max(float(np.abs(np.asarray(a) - np.asarray(b)).max()) for a, b in zip(left, right))


@pytest.mark.parametrize("name", list(_optimizers()))
def test_kgraph_resumes_training_exactly(tmp_path, name):
    model = _model(_optimizers()[name])
    model.fit(X, Y, epochs=2, **FIT)
    model.save(tmp_path / "model.keras")
    loaded = kgraph.load_model(tmp_path / "model.keras")
    assert type(loaded.optimizer) is type(model.optimizer)
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert loaded.optimizer.iterations == model.optimizer.iterations == 8
    assert _max_difference(optimizer_variables(loaded), optimizer_variables(model)) == 0.0
    assert loaded.evaluate(X, Y, verbose=0) == model.evaluate(X, Y, verbose=0)
    model.fit(X, Y, epochs=1, **FIT)
    loaded.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(loaded.get_weights(), model.get_weights()) == 0.0


def test_compile_config_and_optimizer_group_are_keras_s(tmp_path):
    model = _model(optimizers.Adam(0.01))
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "model.keras")
    with zipfile.ZipFile(tmp_path / "model.keras") as zf:
        config = json.loads(zf.read("config.json"))["compile_config"]
        weights = zf.read("model.weights.h5")
    assert config["optimizer"]["module"] == "keras.optimizers" and config["optimizer"]["class_name"] == "Adam"
    assert (config["loss"], config["metrics"], config["loss_weights"]) == ("binary_crossentropy", ["accuracy"], [2.0])
    with h5py.File(io.BytesIO(weights), "r") as f:
        group = f["optimizer/vars"]
        assert len(group) == 2 + 2 * 6  # iterations, learning rate, momentum and velocity of six weights
        assert int(group["0"][()]) == 4 and group["1"][()] == np.float32(0.01)
        assert [group[str(i)].shape for i in range(2, 6)] == [(3, 4), (3, 4), (4,), (4,)]  # interleaved per weight


def test_files_without_optimizer_state_load_fresh(tmp_path):
    model = _model(optimizers.Adam(0.01))
    model.save(tmp_path / "unfitted.keras")
    loaded = kgraph.load_model(tmp_path / "unfitted.keras")
    assert loaded.optimizer.iterations == 0
    loaded.fit(X, Y, epochs=1, **FIT)
    assert loaded.optimizer.iterations == 4


@pytest.mark.parametrize("name", ["adam", "rmsprop_centered", "sgd_schedule"])
def test_keras_continues_kgraph_training(tmp_path, name):
    keras = pytest.importorskip("keras")
    model = _model(_optimizers()[name])
    model.fit(X, Y, epochs=2, **FIT)
    model.save(tmp_path / "kgraph.keras")
    theirs = keras.saving.load_model(tmp_path / "kgraph.keras")
    assert int(keras.ops.convert_to_numpy(theirs.optimizer.iterations)) == 8
    saved = [keras.ops.convert_to_numpy(v) for v in theirs.optimizer.variables]
    assert _max_difference(saved, optimizer_variables(model)) == 0.0
    assert theirs.evaluate(X, Y, verbose=0) == pytest.approx(model.evaluate(X, Y, verbose=0), abs=1e-5)
    theirs.fit(X, Y, epochs=1, **FIT)
    model.fit(X, Y, epochs=1, **FIT)
    assert _max_difference([keras.ops.convert_to_numpy(w) for w in theirs.weights], model.get_weights()) < 1e-5


def _keras_model(keras, optimizer):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.layers.Dense(4, activation="relu"), keras.layers.BatchNormalization(),
                              keras.layers.Dense(1, activation="sigmoid")])  # built by its first fit
    model.compile(optimizer=optimizer, loss=keras.losses.BinaryCrossentropy(),
                  metrics=["accuracy", keras.metrics.BinaryCrossentropy()])
    return model


def test_kgraph_continues_keras_training(tmp_path):
    keras = pytest.importorskip("keras")
    for optimizer in (keras.optimizers.Adam(0.01), keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
                      keras.optimizers.SGD(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9), momentum=0.9)):
        theirs = _keras_model(keras, optimizer)
        theirs.fit(X, Y, epochs=2, **FIT)
        theirs.save(tmp_path / "keras.keras")
        ours = kgraph.load_model(tmp_path / "keras.keras")
        assert ours.optimizer.iterations == 8
        saved = [keras.ops.convert_to_numpy(v) for v in theirs.optimizer.variables]
        assert _max_difference(optimizer_variables(ours), saved) == 0.0
        expected = theirs.evaluate(X, Y, verbose=0, return_dict=True)
        got = ours.evaluate(X, Y, verbose=0, return_dict=True)
        assert got == pytest.approx(expected, abs=1e-5)
        theirs.fit(X, Y, epochs=1, **FIT)
        ours.fit(X, Y, epochs=1, **FIT)
        assert _max_difference(ours.get_weights(), [keras.ops.convert_to_numpy(w) for w in theirs.weights]) < 1e-5


def test_optimizer_state_of_another_shape_is_skipped_with_a_warning(tmp_path):
    model = _model(optimizers.Adam(0.01))
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "adam.keras")
    with zipfile.ZipFile(tmp_path / "adam.keras") as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    buffer = io.BytesIO(members["model.weights.h5"])
    with h5py.File(buffer, "r+") as f:
        del f["optimizer/vars/13"]
    members["model.weights.h5"] = buffer.getvalue()
    with zipfile.ZipFile(tmp_path / "cut.keras", "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    with pytest.warns(UserWarning, match="optimizer state is not restored.*has 14 variables.*holds 13"):
        loaded = kgraph.load_model(tmp_path / "cut.keras")
    assert loaded.compiled and loaded.optimizer.iterations == 0


def test_pickle_files_keep_compile_and_optimizer_state(tmp_path):
    model = _model(optimizers.RMSprop(0.01, momentum=0.5))
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    assert loaded.optimizer.iterations == 4
    assert _max_difference(optimizer_variables(loaded), optimizer_variables(model)) == 0.0
    model.fit(X, Y, epochs=1, **FIT)
    loaded.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(loaded.get_weights(), model.get_weights()) == 0.0
