"""Keras 3 `.keras` files: Keras-written files load with Keras's predictions, kgraph-written files load in Keras,
and hostile archives are refused before anything is decompressed.

The shipped files in tests/data/keras were written by Keras 3.15.1 (tests/data/keras/make_keras_files.py); the
tests that run Keras itself skip where it is not installed. Tolerance: 1e-5 absolute on float32 outputs of order
one, where Keras (torch) and kgraph (NumPy) sum in different orders.
"""
import json
import os
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import kgraph
from kgraph import layers, ops

DATA = Path(__file__).resolve().parent.parent / "data" / "keras"
FILES = ["mlp", "cnn", "recurrent", "bidirectional", "transformer"]
pytest.importorskip("h5py")


def _reference(name):
    arrays = np.load(DATA / f"{name}.npz")
    return [arrays[k] for k in sorted(arrays) if k.startswith("x")], arrays["y0"]


def _predict(model, inputs):
    return np.asarray(model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0))


@pytest.mark.parametrize("name", FILES)
def test_keras_files_give_keras_predictions(name):
    model = kgraph.load_model(DATA / f"{name}.keras")
    inputs, expected = _reference(name)
    np.testing.assert_allclose(_predict(model, inputs), expected, atol=1e-5, rtol=0)


def test_keras_file_layers_and_statistics():
    model = kgraph.load_model(DATA / "cnn.keras")
    assert type(model).__name__ == "Sequential"
    assert [type(layer).__name__ for layer in model.layers][:3] == ["Conv2D", "BatchNormalization", "Activation"]
    moving_mean = model.layers[1].weights[2].numpy()
    assert np.abs(moving_mean).max() > 0.1  # the file's perturbed statistics, not the zeros of a fresh layer
    transformer = kgraph.load_model(DATA / "transformer.keras")
    assert "Add" in [type(op).__name__ for op in transformer.operations if op not in transformer.layers]


@pytest.mark.parametrize("name", FILES)
def test_kgraph_writes_what_it_reads(name, tmp_path):
    model = kgraph.load_model(DATA / f"{name}.keras")
    model.save(tmp_path / "again.keras")
    again = kgraph.load_model(tmp_path / "again.keras")
    inputs, _ = _reference(name)
    np.testing.assert_array_equal(_predict(again, inputs), _predict(model, inputs))
    assert [w.shape for w in again.get_weights()] == [w.shape for w in model.get_weights()]


def _kgraph_models():
    rng = np.random.default_rng(1)
    x = kgraph.Input((6, 4))
    h = ops.sum(layers.Conv1D(3, 2, activation="relu")(x), axis=1) * 0.5
    yield "ops", kgraph.Model(x, layers.Dense(2)(h)), [rng.normal(size=(2, 6, 4)).astype("float32")]
    inner = kgraph.Sequential([kgraph.Input((4,)), layers.Dense(3, activation="tanh")])
    a, b = kgraph.Input((4,)), kgraph.Input((4,))
    yield "nested", kgraph.Model([a, b], layers.Concatenate()([inner(a), inner(b)])), \
        [rng.normal(size=(2, 4)).astype("float32"), rng.normal(size=(2, 4)).astype("float32")]
    x = kgraph.Input((5, 3))
    h = layers.SimpleRNN(3)(layers.Bidirectional(layers.GRU(2, return_sequences=True))(x))
    yield "recurrent", kgraph.Model(x, h), [rng.normal(size=(2, 5, 3)).astype("float32")]
    model = kgraph.Sequential([layers.Dense(4, input_shape=(3,)), layers.BatchNormalization(), layers.Dense(1)])
    yield "sequential", model, [rng.normal(size=(2, 3)).astype("float32")]


@pytest.mark.parametrize("name, model, inputs", list(_kgraph_models()), ids=lambda v: v if isinstance(v, str) else "")
def test_kgraph_models_round_trip(name, model, inputs, tmp_path):
    path = tmp_path / f"{name}.keras"
    model.save(path)
    np.testing.assert_array_equal(_predict(kgraph.load_model(path), inputs), _predict(model, inputs))


def _keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


def test_keras_loads_kgraph_files(tmp_path):
    keras = _keras()
    models = [(name, kgraph.load_model(DATA / f"{name}.keras"), _reference(name)[0]) for name in FILES]
    for name, model, inputs in models + list(_kgraph_models()):
        path = tmp_path / f"{name}.keras"
        model.save(path)
        loaded = keras.saving.load_model(path)
        np.testing.assert_allclose(_predict(loaded, inputs), _predict(model, inputs), atol=1e-5, rtol=0,
                                   err_msg=name)


# ----- hostile and broken archives ------------------------------------------------------------------------

def _archive(path, members, compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, payload in members.items():
            zf.writestr(name, payload)
    return path


def _mlp_members():
    with zipfile.ZipFile(DATA / "mlp.keras") as zf:
        return {name: zf.read(name) for name in zf.namelist()}


@pytest.mark.parametrize("name", ["../config.json", "/etc/config.json", "assets\\..\\x", "C:/x", "a/../../b"])
def test_traversal_names_are_refused(name, tmp_path):
    path = _archive(tmp_path / "m.keras", {**_mlp_members(), name: b"{}"})
    with pytest.raises(ValueError, match="path traversal"):
        kgraph.load_model(path)


def _set_declared_size(path, member, size):
    """Rewrite the uncompressed size that the central directory declares for ``member``."""
    data = bytearray(path.read_bytes())
    start = data.find(b"PK\x01\x02")
    while start != -1:
        name_length = struct.unpack_from("<H", data, start + 28)[0]
        if data[start + 46:start + 46 + name_length] == member.encode():
            struct.pack_into("<I", data, start + 24, size)
        start = data.find(b"PK\x01\x02", start + 4)
    path.write_bytes(bytes(data))


def test_huge_declared_size_is_refused(tmp_path):
    path = _archive(tmp_path / "m.keras", _mlp_members())
    _set_declared_size(path, "config.json", 0xFFFFFFF0)
    with pytest.raises(ValueError, match="declares 4294967280 bytes"):
        kgraph.load_model(path)


def test_decompression_bomb_is_refused(tmp_path):
    members = {**_mlp_members(), "model.weights.h5": bytes(8 << 20)}
    path = _archive(tmp_path / "m.keras", members, compression=zipfile.ZIP_DEFLATED)
    with pytest.raises(ValueError, match="decompression bomb"):
        kgraph.load_model(path)


def test_too_many_members_are_refused(tmp_path):
    members = {**_mlp_members(), **{f"assets/{i}": b"" for i in range(300)}}
    with pytest.raises(ValueError, match="303 members"):
        kgraph.load_model(_archive(tmp_path / "m.keras", members))


def test_truncated_and_corrupt_archives_are_clear_errors(tmp_path):
    whole = (DATA / "mlp.keras").read_bytes()
    (tmp_path / "cut.keras").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        kgraph.load_model(tmp_path / "cut.keras")
    bad_json = _archive(tmp_path / "json.keras", {**_mlp_members(), "config.json": b"{not json"})
    with pytest.raises(ValueError, match="config.json is not valid JSON"):
        kgraph.load_model(bad_json)
    other = _mlp_members()
    with zipfile.ZipFile(DATA / "cnn.keras") as zf:
        other["model.weights.h5"] = zf.read("model.weights.h5")
    with pytest.raises(ValueError, match="do not match the model|has shape"):
        kgraph.load_model(_archive(tmp_path / "mixed.keras", other))


def _with_layer(entry):
    """The MLP archive's members with ``entry`` appended to its functional config as an unused layer."""
    members = _mlp_members()
    config = json.loads(members["config.json"])
    config["config"]["layers"].append(entry)
    members["config.json"] = json.dumps(config).encode()
    return members


def test_lambda_bytecode_is_refused(tmp_path):
    code = {"class_name": "__lambda__", "config": {"code": "4wEAAAAAAAAA", "defaults": None, "closure": None}}
    entry = {"module": "keras.layers", "class_name": "Lambda", "registered_name": None, "name": "evil",
             "config": {"name": "evil", "function": code, "arguments": {}}, "inbound_nodes": []}
    with pytest.raises(ValueError, match="bytecode"):
        kgraph.load_model(_archive(tmp_path / "m.keras", _with_layer(entry)))


def test_unknown_class_names_it_and_custom_objects(tmp_path):
    entry = {"module": "my_package.layers", "class_name": "MyLayer", "registered_name": "my_package>MyLayer",
             "name": "mine", "config": {"name": "mine"}, "inbound_nodes": []}
    with pytest.raises(ValueError, match=r"Unknown layer class 'MyLayer' \(module 'my_package.layers'\).*"
                                         r"custom_objects"):
        kgraph.load_model(_archive(tmp_path / "m.keras", _with_layer(entry)))


def test_missing_h5py_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=r"kgraph\[keras\]"):
        kgraph.load_model(DATA / "mlp.keras")
