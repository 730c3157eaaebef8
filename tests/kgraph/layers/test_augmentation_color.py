"""The random color layers: Keras parity at fixed factors and at given draws, what each does, seeds, configs,
gradients, save/load, single images, channels_first and argument errors."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

NAMES = ["RandomHue", "RandomSaturation", "RandomColorJitter", "RandomColorDegeneration", "RandomGrayscale",
         "RandomSharpness", "RandomInvert"]
IGNORED = ("name", "dtype", "trainable")
# Pixel values up to 255 through HSV in float32: a few float32 ulps of 255 (the measured worst is 1.5e-4).
ATOL = 1e-3


def _images(shape=(2, 6, 7, 3), seed=0, low=0.0, high=255.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def _config(layer):
    return {k: v for k, v in layer.get_config().items() if k not in IGNORED}


def _keras(keras, value):
    return keras.ops.convert_to_numpy(value)


# Layers whose output is deterministic in training: every draw is pinned by the factor.
FIXED = [
    ("RandomSaturation", {"factor": (0.3, 0.3)}), ("RandomSaturation", {"factor": (0.9, 0.9), "value_range": (0, 1)}),
    ("RandomColorDegeneration", {"factor": (0.4, 0.4)}),
    ("RandomColorDegeneration", {"factor": (-0.6, -0.6), "value_range": (255, 0)}),
    ("RandomSharpness", {"factor": (0.2, 0.2)}), ("RandomSharpness", {"factor": (0.9, 0.9), "value_range": (0, 200)}),
    ("RandomInvert", {"factor": (1.0, 1.0)}), ("RandomInvert", {"factor": (0.0, 0.0), "value_range": (0, 1)}),
    ("RandomGrayscale", {"factor": 1.0}), ("RandomGrayscale", {"factor": 0.0}),
    ("RandomColorJitter", {"brightness_factor": (0.1, 0.1), "contrast_factor": (-0.3, 0.3),
                           "saturation_factor": (0.7, 0.7)}),
    ("RandomColorJitter", {"value_range": (0, 255), "contrast_factor": (-0.5, 0.5)}),
]


@needs_keras
@pytest.mark.parametrize("name, kwargs", FIXED)
def test_fixed_factors_match_keras_in_training(name, kwargs):
    import keras
    x = _images()
    theirs = getattr(keras.layers, name)(**kwargs)
    ours = getattr(L, name)(**kwargs)
    np.testing.assert_allclose(ours(x, training=True), _keras(keras, theirs(x, training=True)), atol=ATOL)
    assert _config(ours) == {k: v for k, v in theirs.get_config().items() if k not in IGNORED}


@needs_keras
@pytest.mark.parametrize("name, kwargs", [f for f in FIXED if f[0] != "RandomColorJitter"])
def test_fixed_factors_match_keras_on_channels_first_and_single_images(name, kwargs):
    import keras
    x = np.moveaxis(_images(), -1, 1)
    theirs = getattr(keras.layers, name)(data_format="channels_first", **kwargs)
    ours = getattr(L, name)(data_format="channels_first", **kwargs)
    out = ours(x, training=True)
    assert out.shape == x.shape
    np.testing.assert_allclose(out, _keras(keras, theirs(x, training=True)), atol=ATOL)
    np.testing.assert_allclose(ours(x[0], training=True), _keras(keras, theirs(x[0], training=True)), atol=ATOL)


def _drawn(name, batch, rng):
    """Per-image parameters in our ``transform``'s form and in Keras's ``transform_images`` form."""
    if name == "RandomHue":
        shift = rng.uniform(-0.5, 0.5, size=batch)
        return shift, {"factor": shift}
    if name == "RandomSaturation":
        factor = rng.uniform(0, 1, size=batch)
        scale = factor / (1 - factor + 1e-7)
        return scale, {"factor": scale}
    if name == "RandomColorDegeneration":
        weight = rng.uniform(-1, 1, size=batch)
        return weight, {"factor": weight.reshape(-1, 1, 1, 1)}
    if name == "RandomSharpness":
        factor = rng.uniform(0, 1, size=batch)
        return factor * 2, {"factor": factor}
    chosen = np.arange(batch) % 2 == 0
    return chosen, (chosen.reshape(-1, 1, 1, 1) if name == "RandomGrayscale" else {"apply_inversion": chosen})


@needs_keras
@pytest.mark.parametrize("name", [n for n in NAMES if n != "RandomColorJitter"])
def test_transforms_match_keras_for_different_draws_per_image(name):
    import keras
    x = _images((4, 5, 6, 3), seed=1)
    ours, theirs = _drawn(name, 4, np.random.default_rng(2))
    kwargs = {} if name in ("RandomGrayscale", "RandomInvert") else {"factor": 0.5}
    layer = getattr(keras.layers, name)(**kwargs)
    as_tensor = (lambda v: keras.ops.convert_to_tensor(np.asarray(v, np.float32) if v.dtype != bool else v))
    theirs = {k: as_tensor(v) for k, v in theirs.items()} if isinstance(theirs, dict) else as_tensor(theirs)
    expected = _keras(keras, layer.transform_images(keras.ops.convert_to_tensor(x), theirs, training=True))
    np.testing.assert_allclose(getattr(L, name)(**kwargs).transform(x, ours), expected, atol=ATOL)


def _keras_hue_candidates(keras, images, shift):
    """Keras's hue rotation of every image by +shift and by -shift."""
    layer = keras.layers.RandomHue(0.5)
    return [_keras(keras, layer.transform_images(keras.ops.convert_to_tensor(images),
                                                 {"factor": keras.ops.convert_to_tensor(np.full(len(images), s))},
                                                 training=True)) for s in (shift, -shift)]


def _assert_each_image_is_one_of(out, candidates):
    signs = []
    for i, image in enumerate(out):
        matches = [np.allclose(image, c[i], atol=ATOL) for c in candidates]
        assert any(matches), f"image {i} matches neither hue direction"
        signs.append(matches.index(True))
    return signs


@needs_keras
def test_hue_matches_keras_in_either_direction_and_draws_both():
    import keras
    x = _images((8, 4, 5, 3), seed=3)
    out = L.RandomHue((0.3, 0.3), seed=1)(x, training=True)
    signs = _assert_each_image_is_one_of(out, _keras_hue_candidates(keras, x, np.float32(0.15)))
    assert set(signs) == {0, 1}
    ours, theirs = L.RandomHue(0.4, value_range=[0, 1]), keras.layers.RandomHue(0.4, value_range=[0, 1])
    assert _config(ours) == {k: v for k, v in theirs.get_config().items() if k not in IGNORED}


@needs_keras
def test_color_jitter_with_hue_matches_keras_in_either_direction():
    import keras
    x = _images((6, 4, 5, 3), seed=4)
    kwargs = {"brightness_factor": (-0.1, -0.1), "contrast_factor": (-0.2, 0.2), "saturation_factor": (0.6, 0.6)}
    before_hue = _keras(keras, keras.layers.RandomColorJitter(**kwargs)(x, training=True))
    out = L.RandomColorJitter(hue_factor=(0.2, 0.2), seed=5, **kwargs)(x, training=True)
    _assert_each_image_is_one_of(out, _keras_hue_candidates(keras, before_hue, np.float32(0.1)))


def _make(name, seed=None, **kwargs):
    defaults = {"RandomHue": {"factor": 0.3}, "RandomSaturation": {"factor": (0.2, 0.8)},
                "RandomColorJitter": {"brightness_factor": 0.2, "contrast_factor": 0.3, "saturation_factor": (0.4, 0.6),
                                      "hue_factor": 0.2},
                "RandomColorDegeneration": {"factor": 0.5}, "RandomGrayscale": {"factor": 0.5},
                "RandomSharpness": {"factor": 0.5}, "RandomInvert": {"factor": 0.8}}[name]
    return getattr(L, name)(seed=seed, **{**defaults, **kwargs})


@pytest.mark.parametrize("name", NAMES)
def test_identity_at_inference_seeded_in_training_and_config_round_trip(name):
    x = _images((6, 5, 6, 3))
    layer = _make(name, seed=7)
    assert layer(x, training=False) is x and not np.array_equal(layer(x), x)  # training defaults to True
    first, again = _make(name, seed=7)(x, training=True), _make(name, seed=7)(x, training=True)
    np.testing.assert_array_equal(first, again)
    assert first.shape == x.shape and not np.allclose(first, x)
    assert not np.array_equal(_make(name, seed=8)(x, training=True), first)
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    if name != "RandomGrayscale":  # Keras's RandomGrayscale config has no seed
        np.testing.assert_array_equal(clone(x, training=True), first)


def test_each_layer_does_what_it_says():
    x = _images((3, 5, 6, 3))
    gray = x @ np.array([0.2989, 0.5870, 0.1140], np.float32)
    np.testing.assert_array_equal(L.RandomInvert((1.0, 1.0), value_range=(0, 255))(x, training=True), 255 - x)
    turned = L.RandomGrayscale(1.0)(x, training=True)
    np.testing.assert_allclose(turned, np.repeat(gray[..., None], 3, axis=-1), atol=1e-4)
    np.testing.assert_allclose(L.RandomColorDegeneration((1.0, 1.0))(x, training=True), turned, atol=1e-3)
    np.testing.assert_allclose(L.RandomColorDegeneration((0.0, 0.0))(x, training=True), x)
    np.testing.assert_allclose(L.RandomSharpness((0.5, 0.5))(x, training=True), x)
    np.testing.assert_allclose(L.RandomSaturation((0.5, 0.5))(x, training=True), x, atol=ATOL)
    faded = L.RandomSaturation((0.0, 0.0))(x, training=True)
    np.testing.assert_allclose(faded, np.repeat(x.max(axis=-1, keepdims=True), 3, axis=-1), atol=ATOL)
    np.testing.assert_allclose(L.RandomHue((0.0, 0.0))(x, training=True), x, atol=ATOL)
    # A full turn's half either way from a pure red pixel lands on cyan.
    red = np.zeros((1, 2, 2, 3), np.float32)
    red[..., 0] = 1.0
    np.testing.assert_allclose(L.RandomHue((1.0, 1.0), value_range=(0, 1))(red, training=True),
                               1 - red, atol=1e-6)
    smooth = L.RandomSharpness((0.0, 0.0), value_range=(0, 1e4))(np.ones((1, 3, 3, 1), np.float32), training=True)
    np.testing.assert_allclose(smooth[0, :, :, 0], np.array([[8, 10, 8], [10, 13, 10], [8, 10, 8]]) / 13, atol=1e-6)


def test_draws_follow_the_factors():
    x = _images((64, 2, 2, 3))
    inverted = L.RandomInvert(0.5, seed=0)(x, training=True)
    share = np.mean([np.array_equal(o, 255 - i) for o, i in zip(inverted, x)])
    assert 0.1 < share < 0.45  # probability drawn in [0, 0.5]: a quarter on average
    gray = L.RandomGrayscale(0.5, seed=0)(x, training=True)
    share = np.mean([np.allclose(o[..., 0], o[..., 2]) for o in gray])
    assert 0.3 < share < 0.7
    shifts = L.RandomHue((0.1, 0.3), seed=0).sample(1000)
    assert np.all((np.abs(shifts) >= 0.05) & (np.abs(shifts) <= 0.15)) and 0.4 < np.mean(shifts > 0) < 0.6


def test_single_images_and_channels_first_follow_the_batch():
    x = _images((1, 5, 6, 3))
    for name in NAMES:
        batch = _make(name, seed=3)(x, training=True)
        np.testing.assert_allclose(_make(name, seed=3)(x[0], training=True), batch[0], atol=1e-4)
        first = _make(name, seed=3, data_format="channels_first")(np.moveaxis(x, -1, 1), training=True)
        np.testing.assert_allclose(np.moveaxis(first, 1, -1), batch, atol=1e-4)


def test_color_jitter_draws_every_step_from_its_own_seed():
    x = _images((4, 5, 6, 3))
    layer = _make("RandomColorJitter", seed=2)
    assert [type(step).__name__ for step in layer.steps] == ["RandomBrightness", "RandomContrast",
                                                              "RandomSaturation", "RandomHue"]
    assert all(step.rng is layer.rng for step in layer.steps)
    only_contrast = L.RandomColorJitter(contrast_factor=0.5, seed=4)
    np.testing.assert_array_equal(only_contrast(x, training=True), L.RandomContrast(0.5, seed=4)(x, training=True))
    assert L.RandomColorJitter()(x, training=True) is x


def test_integer_images_are_augmented_as_floats():
    x = _images((2, 4, 4, 3)).astype(np.uint8)
    out = L.RandomInvert((1.0, 1.0))(x, training=True)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, 255 - x.astype(np.float32))


@pytest.mark.parametrize("make, x", [
    (lambda: L.RandomHue(0.4, value_range=(0, 1), seed=1, dtype="float64"), (0.05, 0.95)),
    (lambda: L.RandomSaturation((0.2, 0.45), value_range=(0, 1), seed=1, dtype="float64"), (0.05, 0.95)),
    (lambda: L.RandomColorDegeneration(0.6, value_range=(-10, 10), seed=1, dtype="float64"), (-2, 2)),
    (lambda: L.RandomGrayscale(0.5, seed=1, dtype="float64"), (-2, 2)),
    (lambda: L.RandomSharpness(0.8, value_range=(-10, 10), seed=1, dtype="float64"), (-2, 2)),
    (lambda: L.RandomInvert(0.9, value_range=(0, 1), seed=1, dtype="float64"), (-2, 2)),
    (lambda: L.RandomColorJitter((0, 1), 0.05, 0.2, (0.4, 0.6), 0.2, seed=1, dtype="float64"), (0.2, 0.8)),
])
def test_gradients_match_finite_differences(make, x):
    from tests.gradcheck import check_gradients
    x = np.random.default_rng(1).uniform(*x, size=(3, 3, 4, 3))
    # A fresh layer per call: the same seed gives the same random transform every time.
    check_gradients(lambda xs: make()(xs[0], training=True), [x])


def test_model_with_every_color_layer_saves_and_loads(tmp_path):
    inputs = kgraph.Input((5, 6, 3))
    h = inputs
    for name in NAMES:
        h = _make(name, seed=NAMES.index(name))(h)
    model = kgraph.Model(inputs, L.Dense(2)(h))
    x = _images((2, 5, 6, 3))
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    for ours, theirs in zip(model.layers[1:-1], loaded.layers[1:-1]):
        assert type(ours).__name__ == type(theirs).__name__ and ours.get_config() == theirs.get_config()
        if not isinstance(ours, L.RandomGrayscale):  # saved without its seed, as Keras's config has none
            np.testing.assert_array_equal(theirs(x, training=True), ours(x, training=True))


@pytest.mark.parametrize("make, match", [
    (lambda: L.RandomHue(1.5), "`factor` argument should be a number"),
    (lambda: L.RandomHue((0.2, 0.3, 0.4)), "Received: factor=\\(0.2, 0.3, 0.4\\)"),
    (lambda: L.RandomSaturation("high"), "Received: factor=high"),
    (lambda: L.RandomSharpness(-0.2), "Received: factor=-0.2"),
    (lambda: L.RandomInvert((1.5, 2.0)), "Received: factor=\\(1.5, 2.0\\)"),
    (lambda: L.RandomColorDegeneration(0.2, value_range=(0, 1, 2)), "Received: value_range=\\(0, 1, 2\\)"),
    (lambda: L.RandomHue(0.2, value_range=255), "Received: value_range=255"),
    (lambda: L.RandomGrayscale(1.5), "Received: factor=1.5"),
    (lambda: L.RandomGrayscale((0.2, 0.4)), "Received: factor=\\(0.2, 0.4\\)"),
    (lambda: L.RandomColorJitter(hue_factor=2.0), "Received: factor=2.0"),
    (lambda: L.RandomColorJitter(brightness_factor=0.1, value_range=(0,)), "Received: value_range=\\(0,\\)"),
    (lambda: L.RandomInvert(data_format="nhwc"), "Received: data_format=nhwc"),
])
def test_bad_arguments_raise_clear_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="expected rank 3 \\(single image\\) or rank 4"):
        L.RandomHue(0.2)(_images((5, 6)), training=True)
    with pytest.raises(ValueError, match="expected 3 \\(RGB\\) or 1 \\(Grayscale\\)"):
        L.RandomGrayscale(1.0)(_images((1, 4, 4, 4)), training=True)
    one = _images((1, 4, 4, 1))
    np.testing.assert_array_equal(L.RandomColorDegeneration((1.0, 1.0))(one, training=True), one)
