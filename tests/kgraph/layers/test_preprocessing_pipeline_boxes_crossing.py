"""Pipeline, MaxNumBoundingBoxes and HashedCrossing: semantics, errors, saving, export, Keras parity."""
import importlib.util

import numpy as np
import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import backend, layers
from tests.export.parity import assert_parity
from tests.gradcheck import check_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")
RNG = np.random.default_rng(0)
IMAGES = RNG.random((2, 6, 6, 3)).astype("float32")
BOXES = np.arange(24, dtype="float32").reshape(2, 3, 4)
LABELS = np.array([[1, 2, 3], [4, 5, 6]])


def _brightening(make):
    """Rescaling, a Dense on the channels, and a brightness shift fixed at +0.2 (clipped to [0, 1])."""
    return make.Pipeline([make.Rescaling(0.5, offset=0.1), make.Dense(3, name="mix"),
                          make.RandomBrightness((0.2, 0.2), value_range=(0, 1))])


# ----- Pipeline -------------------------------------------------------------------------------------------------------
def test_pipeline_applies_its_layers_in_order_and_trains_its_augmentation_by_default():
    pipeline = _brightening(layers)
    out = pipeline(IMAGES)
    dense = pipeline.layers[1]
    plain = dense(IMAGES * 0.5 + 0.1)
    np.testing.assert_allclose(out, np.clip(plain + 0.2, 0, 1), rtol=1e-6)
    np.testing.assert_allclose(pipeline(IMAGES, training=False), plain, rtol=1e-6)
    assert pipeline.weights == dense.weights and len(pipeline.layers) == 3


def test_pipeline_carries_masks_between_its_layers():
    ids = np.array([[3, 1, 0, 0], [2, 4, 1, 0]])
    pipeline = layers.Pipeline([layers.Embedding(5, 3, mask_zero=True), layers.GRU(2)])
    embedding, gru = pipeline.layers
    np.testing.assert_allclose(pipeline(ids), gru(embedding(ids), mask=ids != 0), rtol=1e-6)
    np.testing.assert_allclose(pipeline(ids), gru(embedding(ids)), rtol=1e-6)  # the eager mask travels along
    assert not np.allclose(pipeline(ids), gru(np.asarray(embedding(ids))))
    inputs = kgraph.Input((4,), dtype="int32")
    model = kgraph.Model(inputs, pipeline(inputs))
    np.testing.assert_allclose(model.predict(ids, verbose=0), pipeline(ids), rtol=1e-6)


def test_pipeline_config_save_load_and_export(tmp_path):
    x = kgraph.Input((6, 6, 3), name="image")
    pipeline = layers.Pipeline([layers.Rescaling(2.0), layers.Conv2D(2, 3), layers.RandomFlip(seed=1)], name="pre")
    model = kgraph.Model(x, layers.Dense(2)(pipeline(x)))
    config = pipeline.get_config()
    assert set(config) == {"layers", "name"} and [d["class_name"] for d in config["layers"]] == \
        ["Rescaling", "Conv2D", "RandomFlip"]
    clone = layers.Pipeline.from_config(config)
    assert clone.get_config() == config and len(clone.weights) == 2
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(IMAGES, verbose=0), model.predict(IMAGES, verbose=0))
    assert_parity(model)  # exported as its layers, the flip an identity at inference


def test_pipeline_gradients_and_errors():
    previous = backend.floatx()
    backend.set_floatx("float64")
    try:
        pipeline = layers.Pipeline([layers.Dense(3, activation="tanh"), layers.Dense(2)])
        check_gradients(lambda xs: pipeline(xs[0]), [RNG.standard_normal((2, 4))])
    finally:
        backend.set_floatx(previous)
    with pytest.raises(ValueError, match="layers"):
        layers.Pipeline(layers.Dense(2))
    with pytest.raises(ValueError, match="layers"):
        layers.Pipeline.from_config({"name": "p"})


@needs_keras
def test_pipeline_matches_keras_and_their_serialized_forms_cross():
    import keras
    ours, theirs = _brightening(layers), _brightening(keras.layers)
    ours(IMAGES)
    theirs(IMAGES)
    theirs.set_weights(ours.get_weights())
    for training in (None, True, False):
        kwargs = {} if training is None else {"training": training}
        np.testing.assert_allclose(ours(IMAGES, **kwargs), keras.ops.convert_to_numpy(theirs(IMAGES, **kwargs)),
                                   rtol=1e-6, atol=1e-6)
    our_data, their_data = layers.serialize(ours), keras.layers.serialize(theirs)
    assert set(our_data["config"]) == set(their_data["config"]) == {"layers", "name"}
    assert [d["class_name"] for d in our_data["config"]["layers"]] == \
        [d["class_name"] for d in their_data["config"]["layers"]]
    rebuilt = keras.layers.deserialize(our_data)
    rebuilt(IMAGES)
    rebuilt.set_weights(ours.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(rebuilt(IMAGES)), ours(IMAGES), rtol=1e-6, atol=1e-6)
    assert [type(layer).__name__ for layer in layers.deserialize(their_data).layers] == \
        ["Rescaling", "Dense", "RandomBrightness"]


# ----- MaxNumBoundingBoxes --------------------------------------------------------------------------------------------
def _boxes_data(images=IMAGES, boxes=BOXES, labels=LABELS):
    return {"images": images, "bounding_boxes": {"boxes": boxes, "labels": labels}}


@pytest.mark.parametrize("max_number", [2, 5])
def test_boxes_are_cut_or_filled_to_max_number(max_number):
    layer = layers.MaxNumBoundingBoxes(max_number, fill_value=-7, bounding_box_format="xyxy")
    out = layer({**_boxes_data(), "labels": np.array([0, 1])})
    boxes, labels = out["bounding_boxes"]["boxes"], out["bounding_boxes"]["labels"]
    assert boxes.shape == (2, max_number, 4) and boxes.dtype == np.float32 and labels.shape == (2, max_number)
    kept = min(max_number, 3)
    np.testing.assert_array_equal(boxes[:, :kept], BOXES[:, :kept])
    np.testing.assert_array_equal(labels[:, :kept], LABELS[:, :kept])
    assert np.all(boxes[:, kept:] == -7) and np.all(labels[:, kept:] == -7)
    assert out["images"] is IMAGES and list(out["labels"]) == [0, 1]
    single = layer(_boxes_data(IMAGES[0], BOXES[0], LABELS[0]))["bounding_boxes"]
    np.testing.assert_array_equal(single["boxes"], boxes[0])
    np.testing.assert_array_equal(single["labels"], labels[0])
    assert layer(IMAGES) is IMAGES


@pytest.mark.parametrize("kwargs,data,match", [
    ({"max_number": 0}, None, "max_number"), ({"max_number": 2.5}, None, "max_number"),
    ({"max_number": 2, "fill_value": "x"}, None, "fill_value"),
    ({"max_number": 2, "data_format": "nhwc"}, None, "data_format"),
    ({"max_number": 2}, _boxes_data(), "bounding_box_format"),
    ({"max_number": 2, "bounding_box_format": "xyxy"}, {"images": IMAGES, "bounding_boxes": {"boxes": BOXES}},
     "'boxes' and 'labels'"),
    ({"max_number": 2, "bounding_box_format": "xyxy"}, _boxes_data(IMAGES[0, 0]), "rank 3")])
def test_bounding_box_errors_name_the_problem(kwargs, data, match):
    with pytest.raises(ValueError, match=match):
        layers.MaxNumBoundingBoxes(**kwargs)(data)


def test_bounding_box_model_saves_and_exports(tmp_path):
    image, boxes = kgraph.Input((6, 6, 3), name="images"), kgraph.Input((3, 4), name="boxes")
    labels = kgraph.Input((3,), dtype="int32", name="labels")
    layer = layers.MaxNumBoundingBoxes(5, bounding_box_format="xyxy")
    out = layer({"images": image, "bounding_boxes": {"boxes": boxes, "labels": labels}})
    assert out["bounding_boxes"]["boxes"].shape == (None, 5, 4) and out["bounding_boxes"]["labels"].dtype == "int32"
    model = kgraph.Model([image, boxes, labels], [layers.Conv2D(2, 3)(out["images"]), out["bounding_boxes"]["boxes"],
                                                  out["bounding_boxes"]["labels"]])
    data = [IMAGES, BOXES, LABELS.astype("int32")]
    predicted = model.predict(data, verbose=0)
    np.testing.assert_array_equal(predicted[2], [[1, 2, 3, -1, -1], [4, 5, 6, -1, -1]])
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    for a, b in zip(loaded.predict(data, verbose=0), predicted):
        np.testing.assert_array_equal(a, b)
    assert loaded.layers[3].get_config() == layer.get_config()
    assert_parity(model, sampler=lambda name, shape, dtype, rng: rng.integers(0, 9, shape).astype(dtype))


@needs_keras
@pytest.mark.parametrize("max_number,single", [(2, False), (5, False), (4, True)])
def test_bounding_boxes_match_keras(max_number, single):
    import keras
    data = _boxes_data(IMAGES[0], BOXES[0], LABELS[0]) if single else _boxes_data()
    ours = layers.MaxNumBoundingBoxes(max_number, fill_value=-3, bounding_box_format="xyxy")
    theirs = keras.layers.MaxNumBoundingBoxes(max_number, fill_value=-3, bounding_box_format="xyxy")
    expected = theirs({"images": data["images"], "bounding_boxes": dict(data["bounding_boxes"])})
    actual = ours(data)
    for key in ("boxes", "labels"):
        np.testing.assert_array_equal(actual["bounding_boxes"][key],
                                      keras.ops.convert_to_numpy(expected["bounding_boxes"][key]))
    np.testing.assert_array_equal(actual["images"], keras.ops.convert_to_numpy(expected["images"]))
    # Keras leaves fill_value out of its config (so a reloaded Keras layer forgets it); kgraph keeps it.
    ours_config, keras_config = ours.get_config(), theirs.get_config()
    assert {k: v for k, v in ours_config.items() if k not in ("name", "dtype", "fill_value")} == \
        {k: v for k, v in keras_config.items() if k not in ("name", "dtype")}


# ----- HashedCrossing -------------------------------------------------------------------------------------------------
LETTERS = np.array(["A", "B", "A", "B", "A"])
NUMBERS = np.array([101, 101, 101, 102, 102])


def test_string_crosses_give_keras_and_tensorflow_documented_bins():
    pytest.importorskip("farmhash")
    # Keras's HashedCrossing examples and tests, and TensorFlow's sparse_cross_hashed tests.
    np.testing.assert_array_equal(layers.HashedCrossing(5)((LETTERS, NUMBERS)), [1, 4, 1, 1, 3])
    np.testing.assert_array_equal(layers.HashedCrossing(10)((LETTERS, NUMBERS)), [1, 4, 1, 6, 3])
    np.testing.assert_array_equal(layers.HashedCrossing(10)(("A", 101)), 1)
    one_hot = layers.HashedCrossing(5, output_mode="one_hot")((list(LETTERS), list(NUMBERS)))
    np.testing.assert_array_equal(one_hot, np.eye(5, dtype="float32")[[1, 4, 1, 1, 3]])
    assert one_hot.dtype == np.float32
    features = tuple(np.array([f"batch1-FC{i}-F1".encode()], dtype=object) for i in (1, 2, 3))
    np.testing.assert_array_equal(layers.HashedCrossing(100)(features), [83])
    columns = layers.HashedCrossing(5)((LETTERS[:, None], NUMBERS[:, None]))
    assert columns.shape == (5, 1) and columns.dtype == np.int64 and list(columns[:, 0]) == [1, 4, 1, 1, 3]


def test_integer_crosses_depend_on_values_order_and_shape_only():
    a, b = np.array([1, 2, -3, 2]), np.array([4, 5, 9, 5])
    bins = layers.HashedCrossing(1000)((a, b))
    assert bins.dtype == np.int64 and np.all((bins >= 0) & (bins < 1000)) and bins[1] == bins[3]
    assert len(set(bins.tolist())) == 3 and not np.array_equal(bins, layers.HashedCrossing(1000)((b, a)))
    np.testing.assert_array_equal(layers.HashedCrossing(1000)((a.astype("int32"), b.astype("uint8"))), bins)
    np.testing.assert_array_equal(layers.HashedCrossing(1000)((a[:, None], b[:, None]))[:, 0], bins)
    assert layers.HashedCrossing(1000)((a[0], b[0])) == bins[0]
    three = layers.HashedCrossing(1000)((a, b, a))
    assert three.shape == (4,) and not np.array_equal(three, bins)
    one_hot = layers.HashedCrossing(1000, output_mode="one_hot", dtype="float64")((a[:, None], b[:, None]))
    assert one_hot.shape == (4, 1000) and one_hot.dtype == np.float64
    np.testing.assert_array_equal(one_hot.argmax(-1), bins)
    assert layers.HashedCrossing(7, output_mode="one_hot")((a[0], b[0])).shape == (7,)
    assert layers.HashedCrossing(7, dtype="int32")((a, b)).dtype == np.int32


@pytest.mark.parametrize("kwargs,inputs,match", [
    ({"num_bins": 0}, None, "num_bins"), ({"num_bins": 3, "output_mode": "multi_hot"}, None, "output_mode"),
    ({"num_bins": 3, "sparse": True}, None, "sparse"), ({"num_bins": 3}, np.array([1, 2]), "list or tuple"),
    ({"num_bins": 3}, (np.array([1, 2]),), "at least two"),
    ({"num_bins": 3}, (np.ones((2, 2), "int64"), np.ones((2, 2), "int64")), "shape"),
    ({"num_bins": 3}, (np.array([1, 2]), np.array([1, 2, 3])), "equal shape"),
    ({"num_bins": 3}, (np.array([1.0]), np.array([1.0])), "integer or string")])
def test_hashed_crossing_errors_name_the_problem(kwargs, inputs, match):
    with pytest.raises(ValueError, match=match):
        layers.HashedCrossing(**kwargs)(inputs)


def test_hashed_crossing_config_model_saving_and_export_refusal(tmp_path):
    layer = layers.HashedCrossing(16, name="cross")
    assert layer.get_config() == {"num_bins": 16, "output_mode": "int", "sparse": False, "name": "cross",
                                  "dtype": "int64"}
    assert layers.HashedCrossing.from_config(layer.get_config()).get_config() == layer.get_config()
    first, second = kgraph.Input((1,), dtype="int64", name="a"), kgraph.Input((1,), dtype="int64", name="b")
    crossed = layer((first, second))
    assert crossed.shape == (None, 1) and crossed.dtype == "int64"
    model = kgraph.Model([first, second], layers.Embedding(16, 2)(crossed))
    a, b = np.array([[3], [7], [3]]), np.array([[1], [1], [2]])
    predicted = model.predict([a, b], verbose=0)
    np.testing.assert_array_equal(predicted[:, 0], model.layers[3].embeddings.numpy()[layer((a, b))[:, 0]])
    model.save(tmp_path / "m.pkl")
    np.testing.assert_array_equal(kgraph.load_model(tmp_path / "m.pkl").predict([a, b], verbose=0), predicted)
    with pytest.raises(ExportError, match="HashedCrossing"):
        to_onnx(model)
