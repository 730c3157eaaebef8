"""Keras's saving hooks: ``save_own_variables``/``load_own_variables``, ``save_assets``/``load_assets``, the extra
keys of ``get_build_config``/``build_from_config``, and ``get_compile_config``/``compile_from_config``; in ``.keras``
files (both ways with Keras where it is installed) and in kgraph's ``.pkl`` files."""
import io
import json
import os
import pickle
import zipfile

import numpy as np
import pytest

import kgraph
from kgraph import layers

h5py = pytest.importorskip("h5py")
X = np.arange(6, dtype="float32").reshape(2, 3)


def _table_layer(base, to_numpy):
    """A layer that keeps state outside its variables: a table (saved by its own variable hooks) and a word list
    (saved as an asset); its build config carries an extra key."""

    class Table(base.layers.Layer):
        def __init__(self, size=3, **kwargs):
            super().__init__(**kwargs)
            self.size, self.table, self.words, self.seen_build_config = size, np.zeros(size, "float32"), [], None

        def build(self, input_shape):
            self.scale = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="scale")

        def call(self, inputs):
            return base.ops.add(base.ops.multiply(inputs, self.scale), self.table)

        def get_config(self):
            return {**super().get_config(), "size": self.size}

        def get_build_config(self):
            return {"input_shape": [None, self.size], "marker": "built-from-config"}

        def build_from_config(self, config):
            self.seen_build_config = dict(config)
            self.build(tuple(config["input_shape"]))

        def save_own_variables(self, store):
            store["0"] = to_numpy(self.scale)
            store["table"] = self.table

        def load_own_variables(self, store):
            self.scale.assign(np.asarray(store["0"]))
            self.table = np.asarray(store["table"])

        def save_assets(self, dir_path):
            with open(os.path.join(dir_path, "words.txt"), "w") as f:
                f.write("\n".join(self.words))

        def load_assets(self, dir_path):
            with open(os.path.join(dir_path, "words.txt")) as f:
                self.words = f.read().split("\n")
    return Table


Table = _table_layer(kgraph, lambda variable: variable.numpy())


def _table_model():
    x = kgraph.Input((3,))
    table = Table(3, name="table")
    model = kgraph.Model(x, table(x))
    table.table = np.array([1.0, 2.0, 3.0], "float32")
    table.scale.assign(np.array([2.0, -1.0, 0.5], "float32"))
    table.words = ["alpha", "beta"]
    return model


def _check_table(layer, expected_build_config):
    np.testing.assert_array_equal(layer.table, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(layer.scale.numpy(), [2.0, -1.0, 0.5])
    assert layer.words == ["alpha", "beta"]
    assert layer.seen_build_config == expected_build_config


@pytest.mark.parametrize("suffix", [".keras", ".pkl"])
def test_own_variables_assets_and_build_config_hooks(tmp_path, suffix):
    model = _table_model()
    model.save(tmp_path / f"table{suffix}")
    loaded = kgraph.load_model(tmp_path / f"table{suffix}", custom_objects={"Table": Table})
    _check_table(loaded.get_layer("table"), {"input_shape": (None, 3), "marker": "built-from-config"})
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


def test_keras_file_layout_of_the_hooks(tmp_path):
    _table_model().save(tmp_path / "table.keras")
    with zipfile.ZipFile(tmp_path / "table.keras") as zf:
        assert zf.read("assets/layers/table/words.txt") == b"alpha\nbeta"
        with h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as f:
            assert sorted(f["layers/table/vars"]) == ["0", "table"]
            np.testing.assert_array_equal(f["layers/table/vars/table"][()], [1.0, 2.0, 3.0])


def test_hooks_move_between_keras_and_kgraph(tmp_path):
    keras = pytest.importorskip("keras")
    keras_table = _table_layer(keras, keras.ops.convert_to_numpy)
    _table_model().save(tmp_path / "kgraph.keras")
    theirs = keras.saving.load_model(tmp_path / "kgraph.keras", custom_objects={"Table": keras_table})
    layer = theirs.get_layer("table")
    assert layer.words == ["alpha", "beta"] and layer.seen_build_config["marker"] == "built-from-config"
    np.testing.assert_array_equal(layer.table, [1.0, 2.0, 3.0])
    expected = _table_model().predict(X, verbose=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(theirs(X)), expected, atol=1e-6, rtol=0)
    theirs.save(tmp_path / "keras.keras")
    ours = kgraph.load_model(tmp_path / "keras.keras", custom_objects={"Table": Table})
    _check_table(ours.get_layer("table"), {"input_shape": (None, 3), "marker": "built-from-config"})
    np.testing.assert_allclose(ours.predict(X, verbose=0), expected, atol=1e-6, rtol=0)


def test_pickled_assets_may_not_leave_their_folder(tmp_path):
    _table_model().save(tmp_path / "table.pkl")
    payload = pickle.loads((tmp_path / "table.pkl").read_bytes())
    payload["assets"] = {"layers/table/../../../escaped.txt": b"x"}
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps(payload))
    with pytest.raises(ValueError, match="may not be absolute nor leave the folder"):
        kgraph.load_model(tmp_path / "evil.pkl", custom_objects={"Table": Table})
    assert not (tmp_path.parent / "escaped.txt").exists()


class Tuned(kgraph.Model):
    """A subclassed model with compile arguments of its own, saved by its compile-config hooks."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(1)
        self.loss_scale = 1.0

    def call(self, inputs):
        return self.dense(inputs)

    def compile(self, loss_scale=1.0, **kwargs):
        self.loss_scale = loss_scale
        super().compile(**kwargs)

    def get_compile_config(self):
        return {"loss_scale": self.loss_scale, "optimizer": "sgd", "loss": "mse"}

    def compile_from_config(self, config):
        self.compile(loss_scale=config["loss_scale"], optimizer=config["optimizer"], loss=config["loss"])


@pytest.mark.parametrize("suffix", [".keras", ".pkl"])
def test_compile_config_hooks(tmp_path, suffix):
    model = Tuned()
    model.compile(loss_scale=3.5, optimizer="sgd", loss="mse")
    model.fit(X, np.zeros((2, 1), "float32"), epochs=1, verbose=0)
    model.save(tmp_path / f"tuned{suffix}")
    if suffix == ".keras":
        with zipfile.ZipFile(tmp_path / "tuned.keras") as zf:
            assert json.loads(zf.read("config.json"))["compile_config"] == {"loss_scale": 3.5, "optimizer": "sgd",
                                                                           "loss": "mse"}
    loaded = kgraph.load_model(tmp_path / f"tuned{suffix}", custom_objects={"Tuned": Tuned})
    assert loaded.compiled and loaded.loss_scale == 3.5 and type(loaded.optimizer).__name__ == "SGD"
    assert loaded.optimizer.iterations == 1
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


class DenseWithOffset(layers.Dense):
    """The saving guide's layer: a Dense plus a Variable of its own, saved by extending Dense's hooks."""

    def __init__(self, units, **kwargs):
        super().__init__(units, **kwargs)
        self.offset = kgraph.Variable(np.arange(units, dtype="float32"), name="offset")

    def save_own_variables(self, store):
        super().save_own_variables(store)
        store["offset"] = self.offset.numpy()

    def load_own_variables(self, store):
        self.offset.assign(store["offset"])
        super().load_own_variables(store)

    def call(self, inputs):
        return super().call(inputs) + self.offset


def test_a_variable_set_as_an_attribute_is_a_weight_as_keras_tracks_it():
    layer = DenseWithOffset(3)
    layer.build((None, 2))
    assert [v.name for v in layer.weights] == ["offset", "kernel", "bias"]
    assert len(layer.trainable_weights) == 3
    layer.offset = layer.offset  # set again: still one weight
    assert len(layer.weights) == 3


def test_default_hooks_store_own_variables_by_index_and_dense_stores_kernel_and_bias():
    plain = layers.BatchNormalization()
    plain.build((None, 4))
    store = {}
    plain.save_own_variables(store)
    assert sorted(store) == ["0", "1", "2", "3"]
    np.testing.assert_array_equal(store["2"], plain.moving_mean.numpy())
    with pytest.raises(ValueError, match="expected 4 variables"):
        plain.load_own_variables({"0": store["0"]})
    with pytest.raises(ValueError, match="shape"):
        plain.load_own_variables({**store, "3": np.zeros(5)})
    store["3"] = np.full(4, 2.0, "float32")
    plain.load_own_variables(store)
    np.testing.assert_array_equal(plain.moving_variance.numpy(), 2.0)
    dense = DenseWithOffset(3)
    dense.build((None, 2))
    store = {}
    dense.save_own_variables(store)
    assert sorted(store) == ["0", "1", "offset"]  # Dense's own keys: kernel and bias only


def test_a_guide_style_hook_layer_round_trips_in_both_formats(tmp_path):
    inp = kgraph.Input((2,))
    model = kgraph.Model(inp, DenseWithOffset(3, name="with_offset")(inp))
    model.layers[1].offset.assign(np.array([5.0, 6.0, 7.0], "float32"))
    x = np.random.default_rng(0).standard_normal((4, 2)).astype("float32")
    for suffix in (".keras", ".pkl"):
        path = str(tmp_path / f"m{suffix}")
        model.save(path)
        restored = kgraph.models.load_model(path, custom_objects={"DenseWithOffset": DenseWithOffset})
        np.testing.assert_array_equal(restored.layers[1].offset.numpy(), [5.0, 6.0, 7.0])
        np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
