"""RandomShear, RandomPerspective and RandomErasing: references, Keras parity on replayed draws, forms, configs.

A layer's draws are replayed by a twin built with the same seed: its ``sample_*`` method draws what the layer's
first call in training draws, so Keras can be run on exactly those parameters.
"""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L
from kgraph.layers.preprocessing.augmentation.geometric import box_mask

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

# Pixel values up to 255 resampled in float32 (kgraph) and float32 (Keras): 1e-3 absolute is rounding.
ATOL = 1e-3


def _images(shape=(3, 7, 9, 2), seed=0):
    return np.random.default_rng(seed).uniform(0, 255, size=shape).astype(np.float32)


LAYERS = [
    lambda seed: L.RandomShear(0.3, 0.2, seed=seed),
    lambda seed: L.RandomShear((0.4, 0.5), fill_mode="constant", fill_value=5.0, interpolation="nearest", seed=seed),
    lambda seed: L.RandomPerspective(factor=(1, 1), seed=seed),
    lambda seed: L.RandomPerspective(scale=0.5, interpolation="nearest", fill_value=3.0, seed=seed),
    lambda seed: L.RandomErasing(factor=(1, 1), seed=seed),
    lambda seed: L.RandomErasing(factor=(1, 1), fill_value=7.0, scale=(0.2, 0.5), seed=seed),
]


def _replay(twin, shape):
    """What a layer seeded as ``twin`` draws in its first training call on an NHWC batch of ``shape``."""
    if isinstance(twin, L.RandomShear):
        return twin.sample_shear(shape[0])
    if isinstance(twin, L.RandomPerspective):
        return twin.sample_corners(*shape[:3])
    return twin.sample_erasing(shape)


@pytest.mark.parametrize("make", LAYERS)
def test_identity_at_inference_seeded_in_training(make):
    x = _images()
    np.testing.assert_array_equal(make(1)(x, training=False), x)
    np.testing.assert_array_equal(make(1)(x), make(1)(x, training=True))  # training defaults to True
    first = make(1)(x, training=True)
    assert first.shape == x.shape and first.dtype == np.float32
    assert not np.allclose(first, x)
    np.testing.assert_array_equal(make(1)(x, training=True), first)


@pytest.mark.parametrize("make", LAYERS)
def test_single_images_channels_first_and_dicts_follow_the_batch(make):
    x = _images()
    batch = make(2)(x[:1], training=True)
    np.testing.assert_allclose(make(2)(x[0], training=True), batch[0], atol=1e-4)
    config = make(2).get_config() | {"data_format": "channels_first"}
    first = type(make(2)).from_config(config)(np.moveaxis(x, -1, 1), training=True)
    np.testing.assert_allclose(np.moveaxis(first, 1, -1), make(2)(x, training=True), atol=1e-4)
    labels = np.eye(3, dtype=np.float32)
    out = make(2)({"images": x, "labels": labels}, training=True)
    np.testing.assert_array_equal(out["labels"], labels)
    np.testing.assert_array_equal(out["images"], make(2)(x, training=True))


def test_dict_inputs_build_symbolically_and_reject_unknown_keys():
    inputs = {"images": kgraph.Input((6, 6, 3)), "labels": kgraph.Input((4,))}
    out = L.RandomPerspective()(inputs)
    assert tuple(out["images"].shape) == (None, 6, 6, 3) and tuple(out["labels"].shape) == (None, 4)
    with pytest.raises(ValueError, match="bounding_boxes"):
        L.RandomShear(0.2)({"images": _images(), "bounding_boxes": np.zeros((3, 1, 4))}, training=True)
    with pytest.raises(ValueError, match="rank"):
        L.RandomErasing()(np.zeros((2, 3)), training=True)


def test_shear_reads_the_sheared_pixel():
    x = _images((2, 6, 7, 1))
    layer = L.RandomShear(x_factor=(0.5, 0.5), y_factor=(0.25, 0.25), interpolation="nearest", fill_mode="constant",
                          fill_value=-1.0, seed=4)
    shear = L.RandomShear(x_factor=(0.5, 0.5), y_factor=(0.25, 0.25), seed=4).sample_shear(2)
    assert np.allclose(np.abs(shear), [0.5, 0.25])
    out = layer(x, training=True)
    expected = np.full_like(x, -1.0)
    for b in range(2):
        s_x, s_y = shear[b]
        for row in range(6):
            for col in range(7):
                src_r, src_c = np.round(row + s_y * col), np.round(col + s_x * row)  # half to even
                if 0 <= src_r < 6 and 0 <= src_c < 7:
                    expected[b, row, col] = x[b, int(src_r), int(src_c)]
    np.testing.assert_array_equal(out, expected)


def test_shear_draws_both_signs_within_the_ranges():
    shear = L.RandomShear(x_factor=(0.2, 0.3), y_factor=0.1, seed=0).sample_shear(200)
    assert ((np.abs(shear[:, 0]) >= 0.2) & (np.abs(shear[:, 0]) <= 0.3)).all()
    assert (np.abs(shear[:, 1]) <= 0.1).all()
    # One sign for both factors of an image; x's sign shows it.
    assert 50 < (shear[:, 0] < 0).sum() < 150


def test_perspective_applies_with_its_probability_and_keeps_the_top_left_corner():
    x = _images((8, 5, 6, 1))
    apply, start, end = L.RandomPerspective(factor=(0.5, 0.5), seed=5).sample_corners(8, 5, 6)
    assert 0 < apply.sum() < 8
    np.testing.assert_array_equal(end[:, 0], 0.0)
    assert (np.abs(end - start) <= 0.5 * np.abs(start) + 1e-12).all()
    out = L.RandomPerspective(factor=(0.5, 0.5), seed=5)(x, training=True)
    np.testing.assert_array_equal(out[~apply], x[~apply])
    assert not np.allclose(out[apply], x[apply])
    # A zero scale moves no corner: the warp is the identity.
    np.testing.assert_allclose(L.RandomPerspective(factor=(1, 1), scale=0.0)(x, training=True), x, atol=1e-3)


def test_erasing_fills_its_box_and_leaves_the_rest():
    x = _images((4, 6, 8, 3), seed=1)
    box, apply, fill = L.RandomErasing(factor=(1, 1), fill_value=300.0, seed=6).sample_erasing(x.shape)
    out = L.RandomErasing(factor=(1, 1), fill_value=300.0, seed=6)(x, training=True)
    mask = np.broadcast_to(box_mask(box, 6, 8), x.shape)
    assert apply.all() and mask.any()
    np.testing.assert_array_equal(out[mask], 255.0)  # the fill is clipped to value_range
    np.testing.assert_array_equal(out[~mask], x[~mask])
    per_channel = L.RandomErasing(factor=(1, 1), fill_value=[1.0, 2.0, 3.0], seed=6)(x, training=True)
    np.testing.assert_array_equal(per_channel[mask], np.broadcast_to([1.0, 2.0, 3.0], x.shape)[mask])
    noise = L.RandomErasing(factor=(1, 1), value_range=(-1, 1), seed=6)(x, training=True)
    assert (np.abs(noise[mask]) <= 1).all() and len(np.unique(noise[mask])) > 3
    never = L.RandomErasing(factor=(0, 0), seed=6)(x, training=True)
    np.testing.assert_array_equal(never, x)


def test_box_mask_takes_the_pixels_inside_the_half_open_box():
    mask = box_mask((np.array([1.0]), np.array([3.5]), np.array([0.5]), np.array([2.0])), 4, 5)[0, ..., 0]
    expected = np.zeros((4, 5), bool)
    expected[1:2, 1:4] = True
    np.testing.assert_array_equal(mask, expected)


@pytest.mark.parametrize("call, error", [
    (lambda: L.RandomShear(x_factor=1.5), ValueError), (lambda: L.RandomShear(y_factor=-0.1), ValueError),
    (lambda: L.RandomShear(x_factor=(0.1, 0.2, 0.3)), ValueError), (lambda: L.RandomShear(x_factor="a"), ValueError),
    (lambda: L.RandomShear(fill_mode="mirror"), NotImplementedError),
    (lambda: L.RandomShear(interpolation="bicubic"), NotImplementedError),
    (lambda: L.RandomPerspective(factor=1.5), ValueError), (lambda: L.RandomPerspective(scale=2.0), ValueError),
    (lambda: L.RandomPerspective(interpolation="area"), NotImplementedError),
    (lambda: L.RandomErasing(factor=(2, 3)), ValueError), (lambda: L.RandomErasing(scale=(1.5, 2)), ValueError),
    (lambda: L.RandomErasing(fill_value=[1, 2]), ValueError), (lambda: L.RandomErasing(fill_value="x"), ValueError),
])
def test_bad_arguments_raise_naming_them(call, error):
    with pytest.raises(error) as info:
        call()
    assert any(word in str(info.value) for word in ("factor", "scale", "fill_value", "fill_mode", "interpolation"))


def test_factor_parsing_follows_keras():
    assert L.RandomShear(0.3).x_factor == (-0.3, 0.3) and L.RandomShear(y_factor=(0.5, 0.2)).y_factor == (0.2, 0.5)
    assert L.RandomPerspective(0.4).factor == (0, 0.4) and L.RandomErasing(scale=0.3).scale == (0, 0.3)
    # Keras stores 0.3 as (-0.3, 0.3) and then refuses it in from_config; here the stored pair loads.
    assert L.RandomShear.from_config(L.RandomShear(0.3).get_config()).x_factor == (-0.3, 0.3)


@pytest.mark.parametrize("make", [
    lambda: L.RandomShear(0.2, 0.3, seed=3, dtype="float64"),
    lambda: L.RandomShear((0.1, 0.4), fill_mode="constant", fill_value=2.0, seed=3, dtype="float64"),
    lambda: L.RandomPerspective(factor=(1, 1), scale=0.4, seed=3, dtype="float64"),
    lambda: L.RandomErasing(factor=(1, 1), scale=(0.2, 0.4), value_range=(-5, 5), seed=3, dtype="float64"),
])
def test_gradients_match_finite_differences(make):
    from tests.gradcheck import check_gradients
    x = np.random.default_rng(1).normal(size=(2, 4, 5, 2))
    # A fresh layer per call: the same seed gives the same transform every time.
    check_gradients(lambda xs: make()(xs[0], training=True), [x])


def test_model_saves_loads_and_trains(tmp_path):
    inputs = kgraph.Input((6, 6, 2))
    h = L.RandomErasing(value_range=(-3, 3), seed=2)(L.RandomPerspective(seed=1)(L.RandomShear(0.2, 0.1)(inputs)))
    model = kgraph.Model(inputs, L.Dense(1)(L.Flatten()(L.Conv2D(2, 3)(h))))
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).normal(size=(8, 6, 6, 2)).astype(np.float32)
    assert np.isfinite(model.fit(x, x.mean(axis=(1, 2, 3)), epochs=1, batch_size=4, verbose=0).history["loss"]).all()
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    for ours, theirs in zip(model.layers[1:4], loaded.layers[1:4]):
        assert ours.get_config() == theirs.get_config()


def _keras_transform(keras, theirs, params, x):
    """Keras's ``transform_images`` of NHWC-or-NCHW ``x`` under kgraph's drawn ``params``."""
    tensor = keras.ops.convert_to_tensor
    if isinstance(theirs, keras.layers.RandomShear):
        transformation = {"shear_factor": tensor(params.astype(np.float32))}
    elif isinstance(theirs, keras.layers.RandomPerspective):
        apply, start, end = params
        transformation = {"apply_perspective": tensor(apply), "start_points": tensor(start.astype(np.float32)),
                          "end_points": tensor(end.astype(np.float32))}
    else:
        box, apply, fill = params
        if theirs.data_format == "channels_first":
            fill = np.moveaxis(fill, -1, 1)
        masks = theirs._generate_batch_mask(x.shape, tuple(tensor(c.astype(np.float32)) for c in box))
        transformation = {"apply_erasing": tensor(apply), "batch_masks": masks,
                          "fill_value": tensor(fill.astype(np.float32))}
    return keras.ops.convert_to_numpy(theirs.transform_images(tensor(x), transformation, training=True))


def _public(config):
    return {k: v for k, v in config.items() if k not in ("name", "dtype", "trainable")}


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandomShear", {"x_factor": 0.3, "y_factor": 0.2}),
    ("RandomShear", {"x_factor": (0.4, 0.5), "fill_mode": "constant", "fill_value": 5.0,
                     "interpolation": "nearest"}),
    ("RandomShear", {"y_factor": 0.6, "fill_mode": "wrap"}),
    ("RandomShear", {"x_factor": 0.7, "y_factor": 0.5, "fill_mode": "nearest"}),
    ("RandomPerspective", {"factor": (0.5, 0.5)}),
    ("RandomPerspective", {"factor": (1, 1), "scale": 0.5, "interpolation": "nearest", "fill_value": 3.0}),
    ("RandomErasing", {"factor": (0.5, 0.5), "scale": (0.1, 0.6)}),
    ("RandomErasing", {"factor": (1, 1), "fill_value": 300.0}),
])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_transforms_match_keras_on_the_same_draws(name, kwargs, data_format):
    import keras
    x = _images()
    layer_input = x if data_format == "channels_last" else np.moveaxis(x, -1, 1)
    ours = getattr(L, name)(seed=3, data_format=data_format, **kwargs)(layer_input, training=True)
    params = _replay(getattr(L, name)(seed=3, **kwargs), x.shape)
    theirs = getattr(keras.layers, name)(data_format=data_format, **kwargs)
    np.testing.assert_allclose(ours, _keras_transform(keras, theirs, params, layer_input), atol=ATOL)
    assert _public(getattr(L, name)(data_format=data_format, **kwargs).get_config()) == _public(theirs.get_config())


@needs_keras
def test_deterministic_settings_match_keras_end_to_end():
    import keras
    x = _images()
    for name, kwargs in [("RandomErasing", {"factor": (1, 1), "scale": (1, 1), "fill_value": 7.0}),
                         ("RandomPerspective", {"factor": (0, 0)}), ("RandomShear", {}),
                         ("RandomPerspective", {"factor": (1, 1), "scale": 0.0})]:
        expected = keras.ops.convert_to_numpy(getattr(keras.layers, name)(**kwargs)(x, training=True))
        np.testing.assert_allclose(getattr(L, name)(**kwargs)(x, training=True), expected, atol=ATOL)
        np.testing.assert_allclose(getattr(L, name)(**kwargs)(x[0], training=True), expected[0], atol=ATOL)


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandomShear", {}), ("RandomShear", {"x_factor": (0.1, 0.9), "y_factor": 1, "seed": 4}),
    ("RandomPerspective", {}), ("RandomPerspective", {"factor": 0.3, "scale": 0.2, "fill_value": 1.0}),
    ("RandomErasing", {}), ("RandomErasing", {"factor": (0.2, 0.7), "scale": 0.5, "fill_value": [1, 2, 3],
                                              "value_range": (0, 1), "seed": 9}),
])
def test_configs_equal_keras(name, kwargs):
    import keras
    assert _public(getattr(L, name)(**kwargs).get_config()) == _public(getattr(keras.layers, name)(**kwargs)
                                                                        .get_config())


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandomShear", {"x_factor": 1.5}), ("RandomShear", {"y_factor": -0.2}), ("RandomShear", {"fill_mode": "x"}),
    ("RandomPerspective", {"factor": -0.5}), ("RandomPerspective", {"scale": 1.5}),
    ("RandomErasing", {"factor": (1.5, 2.0)}), ("RandomErasing", {"scale": (-2, -1)}),
])
def test_arguments_keras_refuses_are_refused(name, kwargs):
    import keras
    with pytest.raises(Exception) as theirs:
        getattr(keras.layers, name)(**kwargs)
    with pytest.raises(theirs.type):
        getattr(L, name)(**kwargs)
