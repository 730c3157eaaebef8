"""`.keras` files as real programs write them: a TextVectorization model kgraph saved, Keras's records of the masks
it passed (``kwargs: {"mask": null}``), ``quantization_config: None`` in layer configs, and the batch size a
Sequential built by its first ``fit`` records. Predictions agree with Keras's to 1e-5 (float32)."""
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import kgraph
from kgraph import layers

pytest.importorskip("h5py")
DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "keras"
TEXTS = np.array([["the cat sat"], ["the dog ran far"], ["a cat"]], dtype=object)


def _rewrite(source, target, edit):
    """Copy the archive ``source`` to ``target`` with ``edit(config)`` applied to its config.json."""
    with zipfile.ZipFile(source) as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    config = json.loads(members["config.json"])
    edit(config)
    members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(target, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return target


@pytest.mark.parametrize("suffix", [".keras", ".pkl"])
def test_text_vectorization_model_reloads(tmp_path, suffix):
    vectorize = layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    vectorize.adapt(TEXTS[:, 0])
    x = kgraph.Input((1,), dtype="string")
    model = kgraph.Model(x, layers.Embedding(20, 2)(vectorize(x)))
    model.save(tmp_path / f"text{suffix}")
    loaded = kgraph.load_model(tmp_path / f"text{suffix}")
    assert loaded.layers[1].get_vocabulary() == vectorize.get_vocabulary()
    np.testing.assert_array_equal(loaded.predict(TEXTS, verbose=0), model.predict(TEXTS, verbose=0))


def test_recorded_mask_arguments_a_layer_does_not_take_are_dropped(tmp_path):
    def add_mask(config):
        for entry in config["config"]["layers"]:
            for node in entry["inbound_nodes"]:
                node["kwargs"]["mask"] = None
    model = kgraph.load_model(_rewrite(DATA / "mlp.keras", tmp_path / "masked.keras", add_mask))
    arrays = np.load(DATA / "mlp.npz")
    np.testing.assert_allclose(model.predict(arrays["x0"], verbose=0), arrays["y0"], atol=1e-5, rtol=0)


def test_quantization_config_none_is_accepted(tmp_path):
    def add_quantization(config):
        for entry in config["config"]["layers"]:
            entry["config"].setdefault("quantization_config", None)
    model = kgraph.load_model(_rewrite(DATA / "mlp.keras", tmp_path / "quantized.keras", add_quantization))
    arrays = np.load(DATA / "mlp.npz")
    np.testing.assert_allclose(model.predict(arrays["x0"], verbose=0), arrays["y0"], atol=1e-5, rtol=0)


def test_batch_size_recorded_by_a_sequential_built_from_data_is_not_enforced(tmp_path):
    def record_batch(config):
        config["config"]["layers"][0]["config"]["batch_shape"][0] = 4
    model = kgraph.load_model(_rewrite(DATA / "cnn.keras", tmp_path / "batch.keras", record_batch))
    arrays = np.load(DATA / "cnn.npz")
    assert len(arrays["x0"]) != 4
    np.testing.assert_allclose(model.predict(arrays["x0"], verbose=0), arrays["y0"], atol=1e-5, rtol=0)


def test_keras_programs_files_load_and_predict(tmp_path):
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 2)).astype("float32")
    fitted = keras.Sequential([keras.layers.Dense(4), keras.layers.BatchNormalization(), keras.layers.Dense(2)])
    fitted.compile(optimizer="adam", loss="mse")
    fitted.fit(x, y, epochs=1, batch_size=8, verbose=0)  # records batch_shape (8, 3)
    tokens = keras.Input((5,), dtype="int32")
    hidden = keras.layers.BatchNormalization()(keras.layers.Embedding(10, 4, mask_zero=True)(tokens))
    masked = keras.Model(tokens, keras.layers.LSTM(2)(hidden))  # BatchNormalization's node records its mask
    inputs = keras.Input((3,))
    plain = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.BatchNormalization()(inputs)))  # mask: null
    ids = np.array([[1, 2, 0, 0, 0], [3, 4, 5, 6, 7], [9, 0, 0, 0, 0]], "int32")
    for name, theirs, data in (("fitted", fitted, x[:3]), ("masked", masked, ids), ("plain", plain, x[:3])):
        for weight in theirs.non_trainable_weights:
            weight.assign(rng.uniform(0.5, 1.5, size=weight.shape).astype("float32"))
        theirs.save(tmp_path / f"{name}.keras")
        ours = kgraph.load_model(tmp_path / f"{name}.keras")
        np.testing.assert_allclose(ours.predict(data, verbose=0), keras.ops.convert_to_numpy(theirs(data)),
                                   atol=1e-5, rtol=0, err_msg=name)


class DoubledDense(layers.Dense):
    """Dense, doubled: a user's subclass of a built-in layer."""

    def call(self, inputs):
        return super().call(inputs) * 2.0


def _keras_doubled_dense(keras):
    @keras.saving.register_keras_serializable(package="program_tests")
    class DoubledDense(keras.layers.Dense):  # the same class name: Keras names weight groups after it
        def call(self, inputs):
            return super().call(inputs) * 2.0
    return DoubledDense


def test_user_subclass_of_a_keras_layer_with_quantization_config(tmp_path):
    keras = pytest.importorskip("keras")
    x = keras.Input((3,))
    theirs = keras.Model(x, _keras_doubled_dense(keras)(2, name="scaled")(x))
    theirs.save(tmp_path / "scaled.keras")
    with zipfile.ZipFile(tmp_path / "scaled.keras") as zf:
        assert json.loads(zf.read("config.json"))["config"]["layers"][1]["config"]["quantization_config"] is None
    ours = kgraph.load_model(tmp_path / "scaled.keras", custom_objects={"program_tests>DoubledDense": DoubledDense})
    data = np.ones((2, 3), "float32")
    np.testing.assert_allclose(ours.predict(data, verbose=0), keras.ops.convert_to_numpy(theirs(data)), atol=1e-6,
                               rtol=0)
