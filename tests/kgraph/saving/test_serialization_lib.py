"""Keras's object serialization: ``serialize_keras_object``/``deserialize_keras_object`` and their dict format,
``get_custom_objects`` and ``custom_object_scope``, registered functions, Keras objects inside a user layer's config,
and NumPy arrays in configs. Where Keras is installed, files go both ways between it and kgraph; predictions agree
to 1e-6 (float32 sums of a few terms in another order).
"""
import json
import zipfile

import numpy as np
import pytest

import kgraph
from kgraph import initializers, layers, regularizers, saving

pytest.importorskip("h5py")
X = np.arange(6, dtype="float32").reshape(2, 3) / 6.0


@saving.register_keras_serializable(package="serialization_tests")
def doubled_tanh(x):
    return kgraph.ops.tanh(x) * 2.0


class Gated(layers.Layer):
    """``inner(x) * gate``: keeps a layer, an initializer and a regularizer in its config as objects, as Keras's
    guide writes such layers, and deserializes them in ``from_config``."""

    def __init__(self, inner=None, init="ones", reg=None, fn=None, **kwargs):
        super().__init__(**kwargs)
        self.inner = inner if inner is not None else layers.Dense(2)
        self.init, self.reg, self.fn = initializers.get(init), regularizers.get(reg), fn

    def build(self, input_shape):
        self.gate = self.add_weight(shape=(2,), initializer=self.init, regularizer=self.reg, name="gate")

    def call(self, inputs):
        out = self.inner(inputs) * self.gate
        return self.fn(out) if self.fn is not None else out

    def get_config(self):
        return {**super().get_config(), "inner": self.inner, "init": self.init, "reg": self.reg, "fn": self.fn}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("inner", "init", "reg", "fn"):
            config[key] = saving.deserialize_keras_object(config[key])
        return cls(**config)


def _gated_model(fn=None):
    kgraph.utils.set_random_seed(3)
    inner = layers.Dense(2, kernel_initializer=initializers.Constant(np.arange(6.0).reshape(3, 2) / 10))
    gated = Gated(inner, init=initializers.Constant(np.array([1.0, -3.0])), reg=regularizers.L2(0.1), fn=fn,
                  name="gated")
    x = kgraph.Input((3,))
    return kgraph.Model(x, gated(x))


def test_objects_serialize_in_keras_dict_format():
    config = saving.serialize_keras_object(initializers.Constant(np.eye(2).flatten()))
    assert config == {"module": "keras.initializers", "class_name": "Constant", "registered_name": None,
                      "config": {"value": {"class_name": "__numpy__",
                                           "config": {"value": [1.0, 0.0, 0.0, 1.0], "dtype": "float64"}}}}
    assert list(config) == ["module", "class_name", "config", "registered_name"]
    assert saving.serialize_keras_object(doubled_tanh) == {
        "module": "builtins", "class_name": "function", "config": "serialization_tests>doubled_tanh",
        "registered_name": "function"}
    assert saving.serialize_keras_object(regularizers.L2(0.5))["module"] == "keras.regularizers"
    schedule = kgraph.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)
    sgd = saving.serialize_keras_object(kgraph.optimizers.SGD(schedule, momentum=0.5))
    assert (sgd["module"], sgd["config"]["learning_rate"]["module"]) == ("keras.optimizers",
                                                                         "keras.optimizers.schedules")
    assert saving.serialize_keras_object((1, np.float32(2.5), slice(1, None), b"ab")) == (
        1, 2.5, {"class_name": "__slice__", "config": {"start": 1, "stop": None, "step": None}},
        {"class_name": "__bytes__", "config": {"value": "ab"}})
    with pytest.raises(ValueError, match="lambda"):
        saving.serialize_keras_object(lambda x: x)


def test_objects_deserialize_back():
    constant = saving.deserialize_keras_object(saving.serialize_keras_object(initializers.Constant(np.arange(3.0))))
    np.testing.assert_array_equal(constant.value, np.arange(3.0))
    assert saving.deserialize_keras_object(saving.serialize_keras_object(doubled_tanh)) is doubled_tanh
    assert saving.deserialize_keras_object({"module": "builtins", "class_name": "function", "config": "relu",
                                            "registered_name": "function"}) is kgraph.activations.relu
    sgd = saving.deserialize_keras_object(saving.serialize_keras_object(
        kgraph.optimizers.SGD(kgraph.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9), momentum=0.5)))
    assert type(sgd._learning_rate).__name__ == "ExponentialDecay" and sgd.momentum == 0.5
    dense = saving.deserialize_keras_object(saving.serialize_keras_object(layers.Dense(3, activation="relu")))
    assert isinstance(dense, layers.Dense) and dense.units == 3
    assert saving.deserialize_keras_object([1, "x", {"a": None}]) == [1, "x", {"a": None}]
    with pytest.raises(ValueError, match="lambda"):
        saving.deserialize_keras_object({"class_name": "__lambda__", "config": {"value": "4wEAAAA"}})
    with pytest.raises(TypeError, match="Could not locate class 'Missing'"):
        saving.deserialize_keras_object({"module": "elsewhere", "class_name": "Missing", "config": {},
                                         "registered_name": "Missing"})


class _Counter:
    def __init__(self, start=0):
        self.start = start

    def get_config(self):
        return {"start": self.start}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def test_custom_object_scope_and_global_custom_objects():
    config = {"module": "my.module", "class_name": "_Counter", "config": {"start": 4}, "registered_name": "_Counter"}
    with pytest.raises(TypeError, match="Could not locate"):
        saving.deserialize_keras_object(config)
    with saving.custom_object_scope({"_Counter": _Counter}):
        assert saving.deserialize_keras_object(config).start == 4
        with saving.CustomObjectScope({"other": len}):
            assert saving.get_registered_object("_Counter") is _Counter
    assert saving.get_registered_object("_Counter") is None
    assert saving.get_custom_objects()["serialization_tests>doubled_tanh"] is doubled_tanh
    saving.get_custom_objects()["_Counter"] = _Counter
    try:
        assert saving.deserialize_keras_object(config).start == 4
    finally:
        del saving.get_custom_objects()["_Counter"]


@pytest.mark.parametrize("suffix", [".keras", ".pkl"])
def test_keras_objects_in_a_user_layer_config_round_trip(tmp_path, suffix):
    model = _gated_model(fn=doubled_tanh)
    model.save(tmp_path / f"gated{suffix}")
    with saving.custom_object_scope({"Gated": Gated}):
        loaded = kgraph.load_model(tmp_path / f"gated{suffix}")
    gated = loaded.get_layer("gated")
    assert isinstance(gated.inner, layers.Dense) and gated.fn is doubled_tanh
    np.testing.assert_array_equal(gated.init.value, [1.0, -3.0])
    assert gated.reg.get_config() == {"l2": pytest.approx(0.1)}
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_user_layer_config_holds_keras_objects_not_raw_ones(tmp_path):
    _gated_model(fn=doubled_tanh).save(tmp_path / "gated.keras")
    with zipfile.ZipFile(tmp_path / "gated.keras") as zf:
        config = json.loads(zf.read("config.json"))["config"]["layers"][1]["config"]
    assert (config["inner"]["module"], config["inner"]["class_name"]) == ("keras.layers", "Dense")
    assert config["init"]["config"]["value"]["class_name"] == "__numpy__"
    assert (config["reg"]["module"], config["fn"]["config"]) == ("keras.regularizers",
                                                                "serialization_tests>doubled_tanh")


def test_numpy_arrays_in_built_in_configs(tmp_path):
    x = kgraph.Input((3,))
    model = kgraph.Model(x, layers.Dense(9, bias_initializer=initializers.Constant(np.eye(3).flatten()))(x))
    model.save(tmp_path / "eye.keras")
    with zipfile.ZipFile(tmp_path / "eye.keras") as zf:
        bias = json.loads(zf.read("config.json"))["config"]["layers"][1]["config"]["bias_initializer"]
    assert bias["config"]["value"] == {"class_name": "__numpy__",
                                       "config": {"value": np.eye(3).flatten().tolist(), "dtype": "float64"}}
    loaded = kgraph.load_model(tmp_path / "eye.keras")
    np.testing.assert_array_equal(loaded.layers[1].bias_initializer.value, np.eye(3).flatten())
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def _keras_gated(keras):
    """Keras's version of ``Gated`` (and of ``doubled_tanh``, registered under the same name)."""
    @keras.saving.register_keras_serializable(package="serialization_tests", name="doubled_tanh")
    def keras_doubled_tanh(x):
        return keras.ops.tanh(x) * 2.0

    class Gated(keras.layers.Layer):
        def __init__(self, inner=None, init="ones", reg=None, fn=None, **kwargs):
            super().__init__(**kwargs)
            self.inner = inner if inner is not None else keras.layers.Dense(2)
            self.init, self.reg, self.fn = keras.initializers.get(init), keras.regularizers.get(reg), fn

        def build(self, input_shape):
            self.gate = self.add_weight(shape=(2,), initializer=self.init, regularizer=self.reg, name="gate")

        def call(self, inputs):
            out = self.inner(inputs) * self.gate
            return self.fn(out) if self.fn is not None else out

        def get_config(self):
            return {**super().get_config(), "inner": self.inner, "init": self.init, "reg": self.reg, "fn": self.fn}

        @classmethod
        def from_config(cls, config):
            config = dict(config)
            for key in ("inner", "init", "reg", "fn"):
                config[key] = keras.saving.deserialize_keras_object(config[key])
            return cls(**config)
    return Gated, keras_doubled_tanh


def test_user_layer_configs_move_between_keras_and_kgraph(tmp_path):
    keras = pytest.importorskip("keras")
    keras_gated, keras_fn = _keras_gated(keras)
    model = _gated_model(fn=doubled_tanh)
    model.save(tmp_path / "kgraph.keras")
    theirs = keras.saving.load_model(tmp_path / "kgraph.keras", custom_objects={"Gated": keras_gated})
    assert theirs.get_layer("gated").fn is keras_fn
    expected = model.predict(X, verbose=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(theirs(X)), expected, atol=1e-6, rtol=0)
    theirs.save(tmp_path / "keras.keras")
    ours = kgraph.load_model(tmp_path / "keras.keras", custom_objects={"Gated": Gated})
    np.testing.assert_allclose(ours.predict(X, verbose=0), expected, atol=1e-6, rtol=0)
    np.testing.assert_array_equal(ours.get_layer("gated").init.value, [1.0, -3.0])


def test_keras_file_with_a_registered_activation_loads(tmp_path):
    keras = pytest.importorskip("keras")
    _, keras_fn = _keras_gated(keras)
    x = keras.Input((3,))
    theirs = keras.Model(x, keras.layers.Dense(4, activation=keras_fn, name="dense")(x))
    theirs.save(tmp_path / "activation.keras")
    ours = kgraph.load_model(tmp_path / "activation.keras")
    assert ours.get_layer("dense").activation is doubled_tanh
    np.testing.assert_allclose(ours.predict(X, verbose=0), keras.ops.convert_to_numpy(theirs(X)), atol=1e-6, rtol=0)
    with zipfile.ZipFile(tmp_path / "activation.keras") as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    members["config.json"] = members["config.json"].replace(b"serialization_tests>doubled_tanh", b"other>fn")
    with zipfile.ZipFile(tmp_path / "unknown.keras", "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    with pytest.raises(ValueError, match="Unknown function 'other>fn'"):
        kgraph.load_model(tmp_path / "unknown.keras")
