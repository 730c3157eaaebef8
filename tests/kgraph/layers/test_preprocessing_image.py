"""Resizing, CenterCrop and the random augmentation layers: references, seeds, training-only randomness, configs."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")


def _images(shape=(2, 7, 9, 3), seed=0):
    return np.random.default_rng(seed).uniform(0, 255, size=shape).astype(np.float32)


def _bilinear(image, height, width):
    """Half-pixel-centred bilinear resize of one (H, W, C) image, one output pixel at a time."""
    in_h, in_w = image.shape[:2]
    out = np.zeros((height, width, image.shape[2]))
    for i in range(height):
        for j in range(width):
            r = min(max((i + 0.5) * in_h / height - 0.5, 0), in_h - 1)
            c = min(max((j + 0.5) * in_w / width - 0.5, 0), in_w - 1)
            r0, c0 = int(r), int(c)
            r1, c1 = min(r0 + 1, in_h - 1), min(c0 + 1, in_w - 1)
            top = image[r0, c0] * (1 - (c - c0)) + image[r0, c1] * (c - c0)
            bottom = image[r1, c0] * (1 - (c - c0)) + image[r1, c1] * (c - c0)
            out[i, j] = top * (1 - (r - r0)) + bottom * (r - r0)
    return out


def test_resizing_matches_a_pixelwise_reference_and_keeps_layouts():
    x = _images()
    for height, width in ((4, 5), (12, 4)):
        expected = np.stack([_bilinear(image, height, width) for image in x])
        # float32 arithmetic on values up to 255: 1e-3 absolute is rounding.
        np.testing.assert_allclose(L.Resizing(height, width)(x), expected, atol=1e-3)
    first = L.Resizing(4, 5, data_format="channels_first")(np.moveaxis(x, -1, 1))
    np.testing.assert_allclose(np.moveaxis(first, 1, -1), L.Resizing(4, 5)(x), atol=1e-4)
    np.testing.assert_array_equal(L.Resizing(14, 18, interpolation="nearest")(x), x.repeat(2, 1).repeat(2, 2))
    cropped = L.Resizing(7, 7, crop_to_aspect_ratio=True)(x)
    np.testing.assert_array_equal(cropped, x[:, :, 1:8])
    padded = L.Resizing(9, 9, pad_to_aspect_ratio=True, fill_value=-1.0)(x)
    np.testing.assert_array_equal(padded[:, 1:8], x)
    assert (padded[:, 0] == -1).all() and (padded[:, 8] == -1).all()
    with pytest.raises(ValueError, match="`interpolation`"):
        L.Resizing(2, 2, interpolation="lanczos3")


def test_center_crop_crops_or_resizes_smaller_images():
    x = _images()
    np.testing.assert_array_equal(L.CenterCrop(3, 5)(x), x[:, 2:5, 2:7])
    np.testing.assert_array_equal(L.CenterCrop(3, 5)(x[0]), x[0, 2:5, 2:7])
    grown = L.CenterCrop(14, 9)(x)
    assert grown.shape == (2, 14, 9, 3)
    np.testing.assert_allclose(grown, L.Resizing(14, 9, crop_to_aspect_ratio=True)(x), atol=1e-4)


AUGMENTATIONS = [
    lambda seed: L.RandomFlip(seed=seed), lambda seed: L.RandomRotation(0.2, seed=seed),
    lambda seed: L.RandomZoom(0.3, seed=seed), lambda seed: L.RandomTranslation(0.2, 0.3, seed=seed),
    lambda seed: L.RandomContrast(0.5, seed=seed), lambda seed: L.RandomBrightness(0.2, seed=seed),
    lambda seed: L.RandomRotation(0.2, fill_mode="constant", fill_value=3.0, interpolation="nearest", seed=seed),
    lambda seed: L.RandomZoom((-0.4, -0.2), (0.1, 0.2), fill_mode="wrap", seed=seed),
]


@pytest.mark.parametrize("make", AUGMENTATIONS)
def test_augmentation_is_identity_at_inference_and_seeded_in_training(make):
    x = _images((4, 6, 8, 2))
    layer = make(7)
    assert layer(x, training=False) is x and not np.array_equal(layer(x), x)  # training defaults to True
    first, again = make(7)(x, training=True), make(7)(x, training=True)
    np.testing.assert_array_equal(first, again)
    assert first.shape == x.shape and not np.array_equal(first, x)
    assert not np.array_equal(make(8)(x, training=True), first)
    clone = type(layer).from_config(layer.get_config())
    np.testing.assert_array_equal(clone(x, training=True), first)


def test_augmentation_takes_single_images_and_channels_first():
    x = _images((2, 6, 8, 3))
    batch = L.RandomRotation(0.2, seed=1)(x, training=True)
    first = L.RandomRotation(0.2, seed=1, data_format="channels_first")(np.moveaxis(x, -1, 1), training=True)
    np.testing.assert_array_equal(np.moveaxis(first, 1, -1), batch)
    single = L.RandomRotation(0.2, seed=1)(x[0], training=True)
    np.testing.assert_array_equal(single, batch[0])
    assert L.RandomCrop(4, 4, data_format="channels_first")(np.moveaxis(x, -1, 1), training=True).shape == (2, 3, 4, 4)
    with pytest.raises(ValueError, match="expected rank 3 \\(single image\\) or rank 4"):
        L.RandomFlip()(x[0, 0], training=True)


def test_augmentations_do_what_they_say():
    x = _images((3, 6, 6, 2))
    flipped = L.RandomFlip("horizontal", seed=1)(x, training=True)
    for image, out in zip(x, flipped):
        assert np.array_equal(out, image) or np.array_equal(out, image[:, ::-1])
    turned = L.RandomFlip(seed=1)(x, training=True)
    for image, out in zip(x, turned):
        assert np.array_equal(out, image) or np.array_equal(out, image[::-1, ::-1])
    np.testing.assert_allclose(L.RandomRotation((0.25, 0.25))(x, training=True), np.rot90(x, 1, axes=(1, 2)),
                               atol=1e-3)
    shifted = L.RandomTranslation((0.5, 0.5), 0.0, fill_mode="constant")(x, training=True)
    np.testing.assert_allclose(shifted[:, 3:], x[:, :3], atol=1e-3)
    assert (shifted[:, :3] == 0).all()
    brighter = L.RandomBrightness((0.1, 0.1), value_range=(0, 255))(x, training=True)
    np.testing.assert_allclose(brighter, np.clip(x + 25.5, 0, 255), atol=1e-3)
    contrast = L.RandomContrast(0.0)(x, training=True)
    np.testing.assert_allclose(contrast, x, atol=1e-3)
    crop = L.RandomCrop(4, 5, seed=0)
    out = crop(x, training=True)
    assert any(np.array_equal(out, x[:, i:i + 4, j:j + 5]) for i in range(3) for j in range(2))
    np.testing.assert_allclose(crop(x, training=False), L.Resizing(4, 5, crop_to_aspect_ratio=True)(x), atol=1e-4)


def test_augmentation_trains_in_a_model_and_round_trips(tmp_path):
    kgraph.utils.set_random_seed(0)
    inputs = kgraph.Input((8, 8, 1))
    h = L.RandomFlip("horizontal")(L.RandomBrightness(0.1, value_range=(0, 1))(inputs))
    h = L.RandomRotation(0.05)(L.Conv2D(2, 3, padding="same")(h))
    model = kgraph.Model(inputs, L.Dense(1)(L.Flatten()(L.CenterCrop(4, 4)(L.Resizing(6, 6)(h)))))
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).uniform(size=(16, 8, 8, 1)).astype(np.float32)
    history = model.fit(x, x.mean(axis=(1, 2)), epochs=2, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


@needs_keras
def test_resizing_and_center_crop_match_keras():
    import keras
    x = _images()
    for kwargs in ({"height": 4, "width": 5}, {"height": 12, "width": 5}, {"height": 5, "width": 5,
                   "crop_to_aspect_ratio": True}, {"height": 5, "width": 5, "pad_to_aspect_ratio": True}):
        expected = keras.ops.convert_to_numpy(keras.layers.Resizing(**kwargs)(x))
        np.testing.assert_allclose(L.Resizing(**kwargs)(x), expected, atol=1e-3)
        assert L.Resizing(**kwargs).get_config() | {"name": None} == \
            keras.layers.Resizing(**kwargs).get_config() | {"name": None}
    for size in ((4, 5), (9, 4), (3, 12)):
        expected = keras.ops.convert_to_numpy(keras.layers.CenterCrop(*size)(x))
        np.testing.assert_allclose(L.CenterCrop(*size)(x), expected, atol=1e-3)


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandomRotation", {"factor": (0.1, 0.1)}), ("RandomRotation", {"factor": (0.1, 0.1), "fill_mode": "constant"}),
    ("RandomRotation", {"factor": (-0.05, -0.05), "fill_mode": "nearest", "interpolation": "nearest"}),
    ("RandomZoom", {"height_factor": (0.2, 0.2)}),
    ("RandomZoom", {"height_factor": (-0.3, -0.3), "width_factor": (0.1, 0.1), "fill_mode": "wrap"}),
    ("RandomTranslation", {"height_factor": (0.1, 0.1), "width_factor": (-0.2, -0.2)}),
    ("RandomTranslation", {"height_factor": (0.25, 0.25), "width_factor": (0.3, 0.3), "fill_mode": "constant",
                           "fill_value": 5.0}),
    ("RandomBrightness", {"factor": (0.1, 0.1)}), ("RandomContrast", {"factor": 0.0}),
])
def test_augmentation_geometry_and_fills_match_keras_at_fixed_factors(name, kwargs):
    import keras
    x = _images((2, 8, 10, 3))
    ours = getattr(L, name)(**kwargs)
    expected = keras.ops.convert_to_numpy(getattr(keras.layers, name)(**kwargs)(x, training=True))
    # Pixel values up to 255 interpolated in float32: 1e-3 absolute is rounding.
    np.testing.assert_allclose(ours(x, training=True), expected, atol=1e-3)
    theirs = getattr(keras.layers, name)(**kwargs).get_config()
    assert {k: theirs[k] for k in theirs if k not in ("name", "dtype", "trainable")} == \
        {k: v for k, v in ours.get_config().items() if k not in ("name", "dtype", "trainable")}


@pytest.mark.parametrize("make", [
    lambda: L.Resizing(3, 5, dtype="float64"), lambda: L.Resizing(5, 5, pad_to_aspect_ratio=True, dtype="float64"),
    lambda: L.CenterCrop(5, 3, dtype="float64"), lambda: L.RandomRotation(0.1, seed=3, dtype="float64"),
    lambda: L.RandomZoom(0.2, fill_mode="constant", seed=3, dtype="float64"),
    lambda: L.RandomContrast(0.5, value_range=(-10, 10), seed=3, dtype="float64"),
    lambda: L.RandomFlip(seed=3, dtype="float64"), lambda: L.Normalization(mean=1.0, variance=4.0, dtype="float64"),
])
def test_image_and_normalization_gradients_match_finite_differences(make):
    from tests.gradcheck import check_gradients
    x = np.random.default_rng(1).normal(size=(2, 4, 4, 2))
    # A fresh layer per call: the same seed gives the same random transform every time.
    check_gradients(lambda xs: make()(xs[0], training=True), [x])


def test_training_defaults_to_true_as_in_keras_so_pipelines_augment_and_predict_does_not():
    x = _images((4, 8, 8, 3))
    pipeline = kgraph.Sequential([kgraph.Input((8, 8, 3)), L.RandomRotation(0.3, seed=1), L.RandomFlip(seed=2)])
    assert not np.allclose(pipeline(x), x)  # a direct call augments, as a Keras data pipeline does
    np.testing.assert_array_equal(pipeline(x, training=False), x)
    np.testing.assert_array_equal(pipeline.predict(x, verbose=0), x)
    inp = kgraph.Input((8, 8, 3))
    model = kgraph.Model(inp, L.RandomZoom(0.3, seed=3)(inp))
    assert not np.allclose(model(x), x)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
