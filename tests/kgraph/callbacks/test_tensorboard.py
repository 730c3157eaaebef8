"""TensorBoard callback: event files read back with the tensorboard package's own reader."""
import importlib.util
import io
import json
import sys

import numpy as np
import pytest

import kgraph
from kgraph import callbacks, layers

requires_tensorboard = pytest.mark.skipif(
    importlib.util.find_spec("tensorboardX") is None or importlib.util.find_spec("tensorboard") is None,
    reason="needs the tensorboard extra (tensorboardX) and the tensorboard package to read event files")


def op_model():
    """A functional model with layers, op nodes (``+``, indexing) and a nested model."""
    kgraph.utils.clear_session()  # op nodes are named "add", "get_item" in a fresh session
    inputs = kgraph.Input(shape=(4,), name="features")
    hidden = layers.Dense(8, activation="relu", name="hidden")(inputs)
    mixed = hidden + inputs[:, :1]
    inner_inputs = kgraph.Input(shape=(8,), name="inner_in")
    head = kgraph.Model(inner_inputs, layers.Dense(3, name="head_dense")(inner_inputs), name="head")
    model = kgraph.Model(inputs, head(mixed), name="outer")
    model.compile(optimizer=kgraph.optimizers.SGD(learning_rate=0.05), loss="mse", metrics=["mae"])
    return model


def data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 4), dtype=np.float32), rng.random((n, 3), dtype=np.float32)


def read(path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    accumulator = EventAccumulator(str(path), size_guidance={"histograms": 0, "images": 0, "scalars": 0,
                                                             "tensors": 0})
    accumulator.Reload()
    return accumulator


def scalars(accumulator, tag):
    return [(e.step, e.value) for e in accumulator.Scalars(tag)]


@requires_tensorboard
def test_epoch_and_batch_scalars_in_train_and_validation_runs(tmp_path):
    kgraph.utils.set_random_seed(1)
    model = op_model()
    x, y = data()
    board = callbacks.TensorBoard(tmp_path, update_freq=2)
    history = model.fit(x, y, batch_size=10, epochs=3, validation_data=data(20, seed=1), callbacks=[board],
                        verbose=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train", "validation"]
    train, validation = read(tmp_path / "train"), read(tmp_path / "validation")
    # Scalars are stored as float32, hence the relative tolerance.
    for name in ("loss", "mae"):
        steps, values = zip(*scalars(train, f"epoch_{name}"))
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, history.history[name], rtol=1e-6)
        steps, values = zip(*scalars(validation, f"epoch_{name}"))
        assert steps == (0, 1, 2)
        np.testing.assert_allclose(values, history.history[f"val_{name}"], rtol=1e-6)
    assert scalars(train, "epoch_learning_rate") == [(0, pytest.approx(0.05)), (1, pytest.approx(0.05)),
                                                     (2, pytest.approx(0.05))]
    # 4 batches an epoch, written every 2nd: steps count batches across epochs, from 1.
    batch_loss = dict(scalars(train, "batch_loss"))
    assert sorted(batch_loss) == [2, 4, 6, 8, 10, 12]
    np.testing.assert_allclose([batch_loss[4], batch_loss[8], batch_loss[12]], history.history["loss"], rtol=1e-6)
    assert "batch_loss" not in validation.Tags()["scalars"]


@requires_tensorboard
def test_update_freq_epoch_writes_no_batch_scalars_and_evaluate_writes_against_iterations(tmp_path):
    model = op_model()
    x, y = data()
    model.fit(x, y, batch_size=10, epochs=2, callbacks=[callbacks.TensorBoard(tmp_path)], verbose=0)
    board = callbacks.TensorBoard(tmp_path)
    result = model.evaluate(x, y, callbacks=[board], verbose=0, return_dict=True)
    assert not [t for t in read(tmp_path / "train").Tags()["scalars"] if t.startswith("batch_")]
    validation = read(tmp_path / "validation")
    assert scalars(validation, "evaluation_loss_vs_iterations") == [(8, pytest.approx(result["loss"], rel=1e-6))]
    assert scalars(validation, "evaluation_mae_vs_iterations") == [(8, pytest.approx(result["mae"], rel=1e-6))]


@requires_tensorboard
def test_weight_histograms_every_histogram_freq_epochs_and_weight_images(tmp_path):
    from PIL import Image
    model = op_model()
    x, y = data()
    board = callbacks.TensorBoard(tmp_path, histogram_freq=2, write_images=True)
    model.fit(x, y, batch_size=10, epochs=3, callbacks=[board], verbose=0)
    train = read(tmp_path / "train")
    tags = set(train.Tags()["histograms"])
    assert tags == {"hidden/kernel/histogram", "hidden/bias/histogram", "head_dense/kernel/histogram",
                    "head_dense/bias/histogram"}
    for weight in model.weights:
        events = train.Histograms(f"{weight.path}/histogram")
        assert [e.step for e in events] == [0, 2]
        last = events[-1].histogram_value  # written after the last epoch: the final weights
        value = np.asarray(weight, dtype=np.float64)
        assert last.num == value.size and sum(last.bucket) == value.size
        assert last.min == pytest.approx(value.min()) and last.max == pytest.approx(value.max())
        assert last.sum == pytest.approx(value.sum(), abs=1e-9)
    kernel = model.get_layer("hidden").kernel.value  # (4, 8): drawn as 4 rows of 8 pixels
    image = train.Images("hidden/kernel/image")[-1]
    pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)))
    assert (image.width, image.height) == (8, 4) and pixels.shape == (4, 8)
    expected = (kernel - kernel.min()) / (kernel.max() - kernel.min()) * 255
    np.testing.assert_allclose(pixels, expected, atol=0.5 + 1e-9)


@requires_tensorboard
def test_graph_has_every_layer_and_op_with_connections_and_shapes(tmp_path):
    from tensorboard.plugins.graph import keras_util
    model = op_model()
    x, y = data()
    model.fit(x, y, batch_size=20, epochs=1, callbacks=[callbacks.TensorBoard(tmp_path)], verbose=0)
    train = read(tmp_path / "train")
    nodes = {node.name: node for node in train.Graph().node}
    assert {name: (node.op, list(node.input)) for name, node in nodes.items()} == {
        "features": ("InputLayer", []),
        "hidden": ("Dense", ["features"]),
        "get_item": ("GetItem", ["features"]),
        "add": ("Add", ["hidden", "get_item"]),
        "head/inner_in": ("InputLayer", ["add"]),
        "head/head_dense": ("Dense", ["head/inner_in"]),
    }
    shapes = {name: [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]
              for name, node in nodes.items()}
    assert shapes["get_item"] == [[-1, 1]] and shapes["head/head_dense"] == [[-1, 3]]
    # The Keras conceptual graph: the JSON config, which TensorBoard's Graphs tab converts itself.
    (event,) = train.Tensors("keras")
    config = json.loads(event.tensor_proto.string_val[0])
    conceptual = {node.name for node in keras_util.keras_model_to_graph_def(config).node}
    assert {"outer/hidden", "outer/add", "outer/head/head_dense"} <= conceptual


@requires_tensorboard
def test_graph_of_a_sequential_model_and_of_shared_layer_calls(tmp_path):
    model = kgraph.Sequential([kgraph.Input(shape=(4,), name="x"), layers.Dense(5, name="first"),
                               layers.Dense(3, name="second")])
    model.compile(optimizer="sgd", loss="mse")
    x, y = data()
    model.fit(x, y, epochs=1, callbacks=[callbacks.TensorBoard(tmp_path / "seq")], verbose=0)
    nodes = {node.name: list(node.input) for node in read(tmp_path / "seq" / "train").Graph().node}
    assert nodes == {"x": [], "first": ["x"], "second": ["first"]}

    inputs = kgraph.Input(shape=(4,), name="x")
    shared = layers.Dense(4, name="shared")
    outputs = shared(shared(inputs))
    model = kgraph.Model(inputs, outputs)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x, epochs=1, callbacks=[callbacks.TensorBoard(tmp_path / "shared")], verbose=0)
    nodes = {node.name: list(node.input) for node in read(tmp_path / "shared" / "train").Graph().node}
    assert nodes == {"x": [], "shared/call_0": ["x"], "shared/call_1": ["shared/call_0"]}


@requires_tensorboard
def test_embeddings_as_tsv_tables_named_in_the_projector_config(tmp_path):
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
    inputs = kgraph.Input(shape=(5,), dtype="int32")
    words = layers.Embedding(20, 4, name="words")(inputs)
    tags = layers.Embedding(7, 2, name="tags")(inputs)
    pooled = layers.GlobalAveragePooling1D()(layers.Concatenate()([words, tags]))
    model = kgraph.Model(inputs, layers.Dense(1)(pooled))
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    board = callbacks.TensorBoard(tmp_path, embeddings_freq=1, embeddings_metadata={"words": "words.tsv"})
    model.fit(rng.integers(0, 7, (16, 5)), rng.random((16, 1)), epochs=2, callbacks=[board], verbose=0)
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(), ProjectorConfig())
    found = {e.tensor_name: e for e in config.embeddings}
    assert sorted(found) == ["tags/embeddings", "words/embeddings"]
    assert found["words/embeddings"].metadata_path == "words.tsv" and not found["tags/embeddings"].metadata_path
    for name in ("words", "tags"):
        table = model.get_layer(name).embeddings.value
        entry = found[f"{name}/embeddings"]
        assert list(entry.tensor_shape) == list(table.shape)
        # Written with 9 significant digits: float32 values come back exactly.
        np.testing.assert_array_equal(np.loadtxt(tmp_path / entry.tensor_path, ndmin=2).astype(np.float32), table)
    with pytest.raises(ValueError, match="Unrecognized `Embedding` layer names.*'nouns'"):
        model.fit(np.zeros((2, 5)), np.zeros((2, 1)), verbose=0,
                  callbacks=[callbacks.TensorBoard(tmp_path, embeddings_freq=1, embeddings_metadata={"nouns": "n"})])


@requires_tensorboard
def test_invalid_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="update_freq"):
        callbacks.TensorBoard(tmp_path, update_freq="sometimes")
    with pytest.raises(ValueError, match="histogram_freq"):
        callbacks.TensorBoard(tmp_path, histogram_freq=-1)
    with pytest.raises(ValueError, match="embeddings_freq"):
        callbacks.TensorBoard(tmp_path, embeddings_freq=0.5)
    with pytest.raises(ValueError, match="profile_batch=2"):
        callbacks.TensorBoard(tmp_path, profile_batch=2)


def test_without_the_extra_the_error_names_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    monkeypatch.setitem(sys.modules, "tensorboardX.event_file_writer", None)
    with pytest.raises(ImportError, match=r'pip install "kgraph-engine\[tensorboard\]"'):
        callbacks.TensorBoard(tmp_path)
