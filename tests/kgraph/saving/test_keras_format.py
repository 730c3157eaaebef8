"""Keras 3 `.keras` files: Keras-written files load with Keras's predictions, kgraph-written files load in Keras,
and hostile archives are refused before anything is decompressed.

The shipped files in tests/data/keras were written by Keras 3.15.1 (tests/data/keras/make_keras_files.py); the
tests that run Keras itself skip where it is not installed. Tolerance: 1e-5 absolute on float32 outputs of order
one, where Keras (torch) and kgraph (NumPy) sum in different orders.
"""
import io
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

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "keras"
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


def _keras_models(keras):
    """Keras models covering the layer kinds kgraph supports, by name."""
    L = keras.layers

    def seq(shape, *stack, dtype="float32"):
        return keras.Sequential([keras.Input(shape, dtype=dtype), *stack])

    x, y = keras.Input((4, 6)), keras.Input((4, 6))
    merged = [L.Add()([x, y]), L.Subtract()([x, y]), L.Multiply()([x, y]), L.Average()([x, y]),
              L.Maximum()([x, y]), L.Minimum()([x, y]), L.Concatenate(axis=1)([x, y]), L.Dot(axes=2)([x, y]),
              L.Attention()([x, y]), L.AdditiveAttention()([x, y]),
              L.MultiHeadAttention(2, 3, value_dim=2, output_shape=5, use_bias=False)(x, y, use_causal_mask=True),
              L.GroupQueryAttention(head_dim=3, num_query_heads=2, num_key_value_heads=1)(x, y),
              keras.ops.sum(x * 2.0 - y, axis=1), x[:, 1:3] @ keras.ops.transpose(y[:, :2], (0, 2, 1))]
    z = keras.Input((6,))
    inner = keras.Sequential([keras.Input((6,)), L.Dense(3)])
    sub_input = keras.Input((3,))
    sub = keras.Model(sub_input, L.Dense(2)(sub_input), name="sub")
    shared = L.Dense(6)
    normalization = L.Normalization()
    normalization.adapt(np.linspace(0.0, 3.0, 60, dtype="float32").reshape(20, 3))
    return {
        "preprocessing": seq((3,), normalization, L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5])),
        "image_preprocessing": seq((6, 6, 3), L.Resizing(4, 4), L.CenterCrop(2, 2), L.RandomFlip(),
                                   L.RandomRotation(0.1), L.RandomContrast(0.2)),
        "category_encoding": seq((3,), L.CategoryEncoding(num_tokens=5, output_mode="multi_hot"), dtype="int32"),
        "dense": seq((4,), L.Dense(3, activation="gelu", use_bias=False), L.Activation("softmax")),
        "reshaping": seq((4, 3), L.Flatten(), L.Reshape((3, 4)), L.Permute((2, 1)), L.Dropout(0.2)),
        "conv1d": seq((8, 3), L.Conv1D(4, 3, strides=2, padding="causal"), L.MaxPooling1D(2), L.GlobalMaxPooling1D()),
        "conv2d": seq((8, 8, 3), L.Conv2D(4, 3, dilation_rate=2, padding="same"), L.AveragePooling2D(2),
                      L.DepthwiseConv2D(3, depth_multiplier=2), L.SeparableConv2D(3, 2), L.GlobalMaxPooling2D()),
        "conv2d_transpose": seq((4, 4, 2), L.Conv2DTranspose(3, 3, strides=2, padding="same"), L.UpSampling2D(2),
                                L.ZeroPadding2D(1), L.Cropping2D(2)),
        "conv1d_variants": seq((5, 2), L.Conv1DTranspose(3, 3, strides=2), L.UpSampling1D(2), L.ZeroPadding1D(1),
                               L.Cropping1D(1), L.DepthwiseConv1D(3), L.SeparableConv1D(2, 2)),
        "conv3d": seq((4, 4, 4, 2), L.Conv3D(3, 2), L.MaxPooling3D(1), L.Conv3DTranspose(2, 2), L.UpSampling3D(1),
                      L.ZeroPadding3D(1), L.Cropping3D(1), L.GlobalAveragePooling3D()),
        "normalization": seq((5, 6), L.LayerNormalization(center=False), L.GroupNormalization(2),
                             L.UnitNormalization(), L.RMSNormalization(), L.BatchNormalization(scale=False)),
        "activations": seq((6,), L.ReLU(max_value=2.0), L.LeakyReLU(0.2), L.PReLU(), L.ELU(), L.Softmax()),
        "noise_and_scaling": seq((4, 3), L.Rescaling(0.5, 1.0), L.Identity(), L.SpatialDropout1D(0.1),
                                 L.GaussianNoise(0.1), L.GaussianDropout(0.1), L.AlphaDropout(0.1),
                                 L.ActivityRegularization(0.01), L.Masking(0.0), L.Flatten(), L.RepeatVector(2)),
        "embedding": seq((5,), L.Embedding(7, 3), L.GlobalAveragePooling1D(), dtype="int32"),
        "recurrent": seq((5, 3), L.SimpleRNN(3, return_sequences=True),
                         L.LSTM(2, return_sequences=True, go_backwards=True), L.GRU(2, reset_after=False)),
        "cells": seq((5, 3), L.RNN(L.LSTMCell(3), return_sequences=True), L.RNN([L.GRUCell(2), L.SimpleRNNCell(2)])),
        "bidirectional": seq((5, 3), L.Bidirectional(L.GRU(2, return_sequences=True), merge_mode="sum"),
                             L.Bidirectional(L.SimpleRNN(2), merge_mode="mul")),
        "time_distributed": seq((4, 3), L.TimeDistributed(L.Dense(2))),
        "conv_lstm": seq((3, 5, 5, 2), L.ConvLSTM2D(2, 3)),
        "einsum_dense": seq((5, 4), L.EinsumDense("abc,cd->abd", output_shape=(None, 3), bias_axes="d")),
        "wrappers_and_cells": seq((3, 5, 2), L.SpectralNormalization(L.Dense(3)), L.ConvLSTM1D(2, 2),
                                  L.RNN(L.StackedRNNCells([L.LSTMCell(2), L.LSTMCell(3)]))),
        "grouped_convolution": seq((6, 6, 4), L.Conv2D(4, 3, groups=2), L.PReLU(shared_axes=[1, 2]),
                                   L.AdaptiveAveragePooling2D((2, 2))),
        "gated_attention": keras.Model(z3 := keras.Input((3, 4)), [
            L.GroupQueryAttention(head_dim=3, num_query_heads=2, num_key_value_heads=1, use_gate=True)(z3, z3),
            L.Attention(use_scale=True, score_mode="concat")([z3, z3])]),
        "merging_attention_ops": keras.Model([x, y], merged),
        "nested_models": keras.Model(z, [sub(inner(z)), inner(z)]),
        "shared_layer": keras.Model(z, shared(shared(z))),
    }


def test_keras_layer_kinds_load_and_save_both_ways(tmp_path):
    keras = _keras()
    rng = np.random.default_rng(2)
    for name, model in _keras_models(keras).items():
        for weight in model.non_trainable_weights:  # moving statistics away from their initial values
            weight.assign(rng.uniform(0.5, 1.5, size=weight.shape).astype(weight.dtype))
        inputs = [rng.integers(0, 5, size=(2, *t.shape[1:])).astype("int32") if t.dtype == "int32"
                  else rng.normal(size=(2, *t.shape[1:])).astype("float32") for t in model.inputs]
        model.save(tmp_path / f"{name}.keras")
        ours = kgraph.load_model(tmp_path / f"{name}.keras")
        expected = _outputs(model, inputs)
        for got, want in zip(_outputs(ours, inputs), expected):
            np.testing.assert_allclose(got, want, atol=1e-5, rtol=0, err_msg=f"{name}: Keras file in kgraph")
        ours.save(tmp_path / f"{name}_kgraph.keras")
        theirs = keras.saving.load_model(tmp_path / f"{name}_kgraph.keras")
        for got, want in zip(_outputs(theirs, inputs), expected):
            np.testing.assert_allclose(got, want, atol=1e-5, rtol=0, err_msg=f"{name}: kgraph file in Keras")


def _outputs(model, inputs):
    outputs = model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0)
    return [np.asarray(o) for o in (outputs if isinstance(outputs, list) else [outputs])]


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


def test_assets_are_refused_rather_than_ignored(tmp_path):
    members = {**_mlp_members(), "assets/layers/string_lookup/vocabulary.txt": b"a\nb\n"}
    with pytest.raises(ValueError, match="holds assets .*vocabulary.txt.*lookup layer"):
        kgraph.load_model(_archive(tmp_path / "m.keras", members))


def test_truncated_and_corrupt_archives_are_clear_errors(tmp_path):
    whole = (DATA / "mlp.keras").read_bytes()
    (tmp_path / "cut.keras").write_bytes(whole[:len(whole) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        kgraph.load_model(tmp_path / "cut.keras")
    malformed = _mlp_members()
    malformed["config.json"] = json.dumps({"class_name": "Functional", "config": {"layers": [{"config": 1}]}})
    with pytest.raises(ValueError, match="Expected a Keras object with 'class_name' and 'config' at config.layers"):
        kgraph.load_model(_archive(tmp_path / "malformed.keras", malformed))
    malformed["config.json"] = json.dumps({"class_name": "Functional", "config": {"layers": []}})
    with pytest.raises(ValueError, match="cannot be rebuilt"):
        kgraph.load_model(_archive(tmp_path / "malformed.keras", malformed))
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
    with pytest.raises(ImportError, match=r"kgraph-engine\[keras\]"):
        kgraph.load_model(DATA / "mlp.keras")


def _edited_config(name, edit):
    """The members of a shipped archive with ``edit(config)`` applied to its config.json."""
    with zipfile.ZipFile(DATA / f"{name}.keras") as zf:
        members = {member: zf.read(member) for member in zf.namelist()}
    config = json.loads(members["config.json"])
    edit(config)
    members["config.json"] = json.dumps(config).encode()
    return members


def _layer_config(config, class_name):
    return next(entry for entry in config["config"]["layers"] if entry["class_name"] == class_name)


def test_keras_arguments_kgraph_lacks_are_refused_unless_inert(tmp_path):
    def gate(config):
        _layer_config(config, "MultiHeadAttention")["config"]["use_gate"] = True
    with pytest.raises(ValueError, match=r"MultiHeadAttention\).*`use_gate"):
        kgraph.load_model(_archive(tmp_path / "gate.keras", _edited_config("transformer", gate)))

    def mixed(config):
        _layer_config(config, "Dense")["config"]["dtype"]["config"]["name"] = "mixed_bfloat16"
    with pytest.raises(ValueError, match="dtype policy 'mixed_bfloat16'.*no bfloat16"):
        kgraph.load_model(_archive(tmp_path / "mixed.keras", _edited_config("mlp", mixed)))

    def constrained(config):
        _layer_config(config, "Dense")["config"]["kernel_constraint"] = {
            "module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 2.0, "axis": 0},
            "registered_name": None}
    model = kgraph.load_model(_archive(tmp_path / "constrained.keras", _edited_config("mlp", constrained)))
    constraint = model.get_layer("dense").kernel_constraint
    assert type(constraint).__name__ == "MaxNorm" and constraint.get_config() == {"max_value": 2.0, "axis": 0}
    inputs, expected = _reference("mlp")
    np.testing.assert_allclose(_predict(model, inputs), expected, atol=1e-5, rtol=0)


def test_custom_classes_come_from_custom_objects(tmp_path):
    from tests.custom_layers import Linear

    def custom(config):
        entry = _layer_config(config, "Dense")
        entry.update(module="my_package.layers", class_name="Linear", registered_name="my_package>Linear")
        entry["config"] = {"name": entry["config"]["name"], "units": 8, "trainable": True,
                           "dtype": entry["config"]["dtype"]}
    members = _edited_config("mlp", custom)
    import h5py
    buffer = io.BytesIO(members["model.weights.h5"])
    with h5py.File(buffer, "r+") as f:
        f.move("layers/dense", "layers/linear")  # Keras names groups after the class, numbered per class
        f.move("layers/dense_1", "layers/dense")
    members["model.weights.h5"] = buffer.getvalue()
    path = _archive(tmp_path / "custom.keras", members)
    with pytest.raises(ValueError, match="Unknown layer class 'Linear'"):
        kgraph.load_model(path)
    model = kgraph.load_model(path, custom_objects={"my_package>Linear": Linear})
    reference = kgraph.load_model(DATA / "mlp.keras")
    layer = model.get_layer("dense")
    assert isinstance(layer, Linear)
    for got, want in zip(layer.get_weights(), reference.get_layer("dense").get_weights()):
        np.testing.assert_array_equal(got, want)


def test_compile_configuration_is_restored(tmp_path):
    mlp = kgraph.load_model(DATA / "mlp.keras")
    assert type(mlp.optimizer).__name__ == "Adam" and mlp.optimizer.get_config()["learning_rate"] == pytest.approx(0.01)
    inputs, _ = _reference("mlp")
    assert set(mlp.evaluate(inputs[0], np.array([0, 1, 2, 1]), verbose=0, return_dict=True)) == {"loss", "accuracy"}
    cnn = kgraph.load_model(DATA / "cnn.keras")
    assert type(cnn.optimizer).__name__ == "SGD"
    assert cnn.optimizer.get_config()["learning_rate"]["class_name"] == "ExponentialDecay"
    inputs, _ = _reference("cnn")
    assert set(cnn.evaluate(inputs[0], np.zeros((3, 2), "float32"), verbose=0, return_dict=True)) == \
        {"loss", "mean_absolute_error"}
    assert kgraph.load_model(DATA / "mlp.keras", compile=False).optimizer is None

    def accumulate(config):
        config["compile_config"]["optimizer"]["config"]["gradient_accumulation_steps"] = 2
    model = kgraph.load_model(_archive(tmp_path / "accumulate.keras", _edited_config("mlp", accumulate)))
    assert model.optimizer.gradient_accumulation_steps == 2


def test_user_layers_are_written_under_their_module(tmp_path):
    from tests.custom_layers import Linear
    x = kgraph.Input((3,))
    model = kgraph.Model(x, Linear(2, name="projection")(x))
    model.save(tmp_path / "linear.keras")
    with zipfile.ZipFile(tmp_path / "linear.keras") as zf:
        entry = json.loads(zf.read("config.json"))["config"]["layers"][1]
    assert (entry["module"], entry["class_name"], entry["registered_name"]) == ("tests.custom_layers", "Linear",
                                                                                "Linear")
    again = kgraph.load_model(tmp_path / "linear.keras")  # the class is imported and its module matches
    inputs = [np.ones((2, 3), "float32")]
    np.testing.assert_array_equal(_predict(again, inputs), _predict(model, inputs))


def test_links_out_of_the_weights_file_are_refused(tmp_path):
    import h5py
    members = _mlp_members()
    buffer = io.BytesIO(members["model.weights.h5"])
    with h5py.File(buffer, "r+") as f:
        del f["layers/dense/vars/0"]
        f["layers/dense/vars/0"] = h5py.ExternalLink(str(tmp_path / "elsewhere.h5"), "/kernel")
    members["model.weights.h5"] = buffer.getvalue()
    with pytest.raises(ValueError, match="'layers/dense/vars/0' in model.weights.h5 is a link of type ExternalLink"):
        kgraph.load_model(_archive(tmp_path / "linked.keras", members))


def test_lambda_functions_come_only_from_custom_objects(tmp_path):
    def double(x):
        return x * 2.0

    def add_lambda(config):
        function = {"module": "builtins", "class_name": "function", "config": "double", "registered_name": "function"}
        source = {"class_name": "__keras_tensor__",
                  "config": {"shape": [None, 3], "dtype": "float32", "keras_history": ["dense_1", 0, 0]}}
        config["config"]["layers"].append({
            "module": "keras.layers", "class_name": "Lambda", "registered_name": None, "name": "twice",
            "config": {"name": "twice", "function": function, "arguments": {}},
            "inbound_nodes": [{"args": [source], "kwargs": {}}]})
        config["config"]["output_layers"] = ["twice", 0, 0]
    path = _archive(tmp_path / "m.keras", _edited_config("mlp", add_lambda))
    with pytest.raises(ValueError, match=r"custom_objects=\{'double': double\}"):
        kgraph.load_model(path)
    model = kgraph.load_model(path, custom_objects={"double": double})
    inputs, expected = _reference("mlp")
    np.testing.assert_allclose(_predict(model, inputs), 2.0 * expected, atol=1e-5, rtol=0)


class _Scale(kgraph.layers.Layer):
    """``inputs * factor``: a user layer registered under a package name."""

    def __init__(self, factor=1.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def test_registered_user_layers_load_by_registered_name(tmp_path):
    kgraph.saving.register_keras_serializable(package="keras_format_tests")(_Scale)
    x = kgraph.Input((3,))
    kgraph.Model(x, _Scale(3.0, name="scale")(x)).save(tmp_path / "scale.keras")
    with zipfile.ZipFile(tmp_path / "scale.keras") as zf:
        members = {name: zf.read(name) for name in zf.namelist()}
    config = json.loads(members["config.json"])
    entry = config["config"]["layers"][1]
    assert (entry["module"], entry["registered_name"]) == (__name__, "keras_format_tests>_Scale")
    entry["module"] = "another_package.layers"  # found by its registered name, not by module
    members["config.json"] = json.dumps(config).encode()
    again = kgraph.load_model(_archive(tmp_path / "moved.keras", members))
    np.testing.assert_array_equal(_predict(again, [np.ones((2, 3), "float32")]), np.full((2, 3), 3.0, "float32"))
