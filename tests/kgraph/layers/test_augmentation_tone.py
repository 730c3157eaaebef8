"""The tone-curve layers: Keras parity on deterministic settings and at given draws, what each does, which act at
inference, configs, gradients, training through them, save/load, export, single images, channels_first and
argument errors."""
import importlib.util
import math

import numpy as np
import pytest

import kgraph
from kgraph import layers as L
from kgraph.backend.autodiff import GradientTape
from tests.export.parity import assert_parity
from tests.gradcheck import check_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

IGNORED = ("name", "dtype", "trainable")
# float32 on the [0, 255] scale. Keras's NumPy backend gives the same bits; its torch backend rounds the
# auto-contrast stretch a float32 ulp of 255 differently (measured worst: 3.1e-5; 0 for the other layers).
ATOL = 1e-4
CLAHE = L.ContrastLimitedAdaptiveHistogramEqualization


def _images(shape=(2, 8, 8, 3), seed=0, low=0.0, high=255.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def _levels(shape=(2, 8, 8, 3), seed=0, count=4):
    """Images of a few grey levels (k * 64 + 3.5), so that tile histograms have tall bins to clip."""
    return (np.random.default_rng(seed).integers(0, count, size=shape) * 64 + 3.5).astype(np.float32)


def _config(config):
    return {k: v for k, v in config.items() if k not in IGNORED}


# (layer, kwargs, images, training): settings whose output Keras's torch backend computes deterministically. Its
# CLAHE counts histograms in integers (its one_hot keeps int64), which truncates a fractional clip limit, and pads
# by replicating the edge rather than mirroring it: the cases below keep the limit whole and the padding at most
# one pixel, where both agree with Keras's other backends (tested against a reference further down).
DETERMINISTIC = [
    ("AutoContrast", {}, lambda: _images(), False),
    ("AutoContrast", {"value_range": (1, 0)}, lambda: _images(high=1.0), False),
    ("ContrastLimitedAdaptiveHistogramEqualization", {"tile_grid_size": (2, 2), "clip_limit": 16.0},
     lambda: _levels(), False),
    ("ContrastLimitedAdaptiveHistogramEqualization", {"tile_grid_size": (4, 2), "clip_limit": 0.0},
     lambda: _images(), False),
    ("ContrastLimitedAdaptiveHistogramEqualization", {"tile_grid_size": (2, 2), "clip_limit": 0.0,
                                                      "value_range": (0, 1)}, lambda: _images((2, 7, 9, 2), high=1), False),
    ("ContrastLimitedAdaptiveHistogramEqualization", {"tile_grid_size": (2, 2)}, lambda: _levels((1, 16, 16, 1)),
     False),
    ("Equalization", {}, lambda: _images(), True),
    ("Equalization", {"bins": 16, "value_range": (0, 1)}, lambda: _images(high=1.0), True),
    ("RandomPosterization", {"factor": (1, 1)}, lambda: _images(), True),
    ("RandomPosterization", {"factor": (3, 3), "value_range": (0, 1)}, lambda: _images(high=1.0), True),
    ("RandomPosterization", {"factor": 1}, lambda: _images(), True),
    ("Solarization", {}, lambda: _images(), True),
    ("Solarization", {"value_range": (0, 1)}, lambda: _images(high=1.0), True),
]


@needs_keras
@pytest.mark.parametrize("name, kwargs, make, training", DETERMINISTIC)
def test_deterministic_settings_match_keras(name, kwargs, make, training):
    import keras
    x = make()
    ours, theirs = getattr(L, name)(**kwargs), getattr(keras.layers, name)(**kwargs)
    np.testing.assert_allclose(ours(x, training=training), keras.ops.convert_to_numpy(theirs(x, training=training)),
                               atol=ATOL)
    assert _config(ours.get_config()) == _config(theirs.get_config())


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("Equalization", {"bins": 64}), ("ContrastLimitedAdaptiveHistogramEqualization", {"tile_grid_size": (2, 4)}),
    ("RandomPosterization", {"factor": (2, 2)}), ("Solarization", {})])
def test_channels_first_and_single_images_match_keras(name, kwargs):
    import keras
    x = np.moveaxis(_images((2, 8, 8, 3)), -1, 1)
    if name == "ContrastLimitedAdaptiveHistogramEqualization":
        kwargs = dict(kwargs, clip_limit=0.0)
    ours = getattr(L, name)(data_format="channels_first", **kwargs)
    theirs = getattr(keras.layers, name)(data_format="channels_first", **kwargs)
    for images in (x, x[0]):
        out = ours(images, training=True)
        assert out.shape == images.shape
        np.testing.assert_allclose(out, keras.ops.convert_to_numpy(theirs(images, training=True)), atol=ATOL)


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandomPosterization", {"factor": (1, 8), "value_range": (-1, 1)}),
    ("Solarization", {"addition_factor": (0.1, 0.4), "threshold_factor": 0.6, "value_range": (0, 1)})])
def test_random_draws_apply_as_in_keras(name, kwargs):
    import keras
    low, high = kwargs["value_range"]
    x = _images((4, 5, 6, 3), low=low, high=high)
    ours, theirs = getattr(L, name)(seed=3, **kwargs), getattr(keras.layers, name)(seed=3, **kwargs)
    params = ours.sample(4)
    expected = theirs.transform_images(keras.ops.convert_to_tensor(x),
                                       {k: keras.ops.convert_to_tensor(v) for k, v in params.items()})
    np.testing.assert_allclose(ours.transform(x, params), keras.ops.convert_to_numpy(expected), atol=ATOL)
    assert _config(ours.get_config()) == _config(theirs.get_config())


def test_posterization_keeps_the_drawn_top_bits_per_image():
    x = _images((64, 2, 2, 1))
    params = L.RandomPosterization(4, seed=0).sample(64)
    assert set(8 - params["shift_factor"]) == {1, 2, 3}  # a number f draws bits in [1, f)
    out = L.RandomPosterization((3, 3))(x, training=True)
    np.testing.assert_array_equal(out, np.floor(x) // 32 * 32)
    first, again = (L.RandomPosterization((1, 8), seed=5)(x, training=True) for _ in range(2))
    np.testing.assert_array_equal(first, again)


def test_solarization_inverts_values_from_the_threshold_up():
    x = np.array([[[[10.0], [100.0], [200.0], [250.0]]]], np.float32)
    layer = L.Solarization(seed=0)
    params = {"additions": np.full((1, 1, 1, 1), 20.0), "thresholds": np.full((1, 1, 1, 1), 120.0)}
    # x + 20 = 30, 120, 220, 255 (clipped): below 120 kept, from 120 up inverted.
    np.testing.assert_allclose(layer.transform(x, params), [[[[30.0], [135.0], [35.0], [0.0]]]])
    np.testing.assert_allclose(L.Solarization()(x, training=True), 255.0 - x)
    ints = L.Solarization()(np.array([[[[3], [250]]]], np.uint8), training=True)
    assert ints.dtype == np.uint8 and ints.ravel().tolist() == [252, 5]


def test_auto_contrast_stretches_each_channel_and_leaves_constant_ones():
    x = _images(low=50.0, high=100.0)
    x[1, ..., 2] = 7.0
    out = np.asarray(L.AutoContrast()(x))
    np.testing.assert_allclose(out[0].min(axis=(0, 1)), 0.0, atol=1e-4)
    np.testing.assert_allclose(out[0].max(axis=(0, 1)), 255.0, atol=1e-4)
    np.testing.assert_array_equal(out[1, ..., 2], 7.0)
    first = np.moveaxis(np.asarray(L.AutoContrast(data_format="channels_first")(np.moveaxis(x, -1, 1))), 1, -1)
    np.testing.assert_allclose(first, out)
    np.testing.assert_allclose(L.AutoContrast()(x[0]), out[0])


def test_equalization_flattens_the_histogram_over_the_batch_and_keeps_one_bin_channels():
    x = _images(low=100.0, high=130.0)
    x[..., 1] = 42.0
    out = np.asarray(L.Equalization()(x, training=True))
    assert out[..., 0].min() == 0.0 and out[..., 0].max() == 255.0
    assert np.all(np.diff(out[..., 0].ravel()[np.argsort(x[..., 0].ravel(), kind="stable")]) >= 0)  # monotone
    np.testing.assert_array_equal(out[..., 1], 42.0)
    whole = out[..., 0]
    alone = np.asarray(L.Equalization()(x[:1], training=True))[..., 0]
    assert not np.allclose(whole[:1], alone)  # one histogram for the whole batch, as Keras counts it


def _reference_clahe(image, clip_limit, grid):
    """CLAHE of one 2-D image in [0, 255], pixel by pixel in float64: mirrored padding, per-tile clipped histogram
    curves, bilinear blend between tile centres."""
    height, width = image.shape
    tile_h, tile_w = math.ceil(height / grid[0]), math.ceil(width / grid[1])
    padded = np.pad(image, ((0, tile_h * grid[0] - height), (0, tile_w * grid[1] - width)), mode="symmetric")
    levels = np.clip(padded.astype(np.int64), 0, 255)
    curves = np.zeros(grid + (256,))
    for r in range(grid[0]):
        for c in range(grid[1]):
            hist = np.bincount(levels[r * tile_h:(r + 1) * tile_h, c * tile_w:(c + 1) * tile_w].ravel(),
                               minlength=256).astype(np.float64)
            if clip_limit > 0:
                limit = clip_limit * tile_h * tile_w / 256
                hist = np.minimum(hist, limit) + np.maximum(hist - limit, 0).sum() / 256
            cdf = np.cumsum(hist)
            curves[r, c] = np.clip((cdf - cdf[0]) * 255 / ((tile_h * tile_w - cdf[0]) or 1), 0, 255)
    out = np.zeros((height, width))
    for i in range(height):
        for j in range(width):
            fy, fx = (i - tile_h / 2) / tile_h, (j - tile_w / 2) / tile_w
            y0, x0 = math.floor(fy), math.floor(fx)
            wy, wx = fy - y0, fx - x0
            ys = [min(max(y, 0), grid[0] - 1) for y in (y0, y0 + 1)]
            xs = [min(max(x, 0), grid[1] - 1) for x in (x0, x0 + 1)]
            v = levels[i, j]
            top = curves[ys[0], xs[0], v] * (1 - wx) + curves[ys[0], xs[1], v] * wx
            bottom = curves[ys[1], xs[0], v] * (1 - wx) + curves[ys[1], xs[1], v] * wx
            out[i, j] = top * (1 - wy) + bottom * wy
    return out


@pytest.mark.parametrize("shape, grid, clip_limit", [((9, 7), (2, 2), 3.0), ((7, 10), (3, 4), 2.5),
                                                      ((8, 8), (2, 2), 0.0)])
def test_clahe_matches_a_pixel_by_pixel_reference(shape, grid, clip_limit):
    # Fractional clip limits and padding wider than a pixel: what Keras's torch backend computes differently.
    image = _levels((1,) + shape + (1,), seed=1, count=3) + _images((1,) + shape + (1,), high=20.0)
    out = np.asarray(CLAHE(clip_limit=clip_limit, tile_grid_size=grid)(image))
    # float32 against float64 on the [0, 255] scale.
    np.testing.assert_allclose(out[0, ..., 0], _reference_clahe(image[0, ..., 0], clip_limit, grid), atol=1e-3)


def test_which_layers_act_at_inference():
    x = _images()
    for layer in (L.RandomPosterization(2), L.Solarization(), L.Equalization()):
        np.testing.assert_array_equal(layer(x, training=False), x)
        assert not np.allclose(layer(x, training=True), x)
        assert not np.allclose(layer(x), x)  # training defaults to True, as in Keras
    for layer in (L.AutoContrast(), CLAHE(tile_grid_size=(2, 2))):
        assert not np.allclose(layer(x), x)
        np.testing.assert_array_equal(layer(x, training=False), layer(x, training=True))


def test_auto_contrast_and_solarization_gradients_match_finite_differences():
    x = _images((2, 3, 3, 2), seed=1, low=20.0, high=230.0).astype(np.float64)

    def contrast(xs):
        return L.AutoContrast(value_range=(0, 300), dtype="float64")(xs[0])

    def solarize(xs):
        return L.Solarization(addition_factor=0.1, threshold_factor=(0.2, 0.9), value_range=(0, 255), seed=4,
                              dtype="float64")(xs[0], training=True)

    check_gradients(contrast, [x])
    grads = check_gradients(solarize, [x])
    assert np.any(np.asarray(grads[0]) > 0) and np.any(np.asarray(grads[0]) < 0)  # both sides of the threshold


@pytest.mark.parametrize("make", [lambda: L.RandomPosterization((2, 6), seed=1, dtype="float64"),
                                  lambda: L.Equalization(bins=8, dtype="float64"),
                                  lambda: CLAHE(tile_grid_size=(2, 2), dtype="float64")])
def test_histogram_layers_pass_zero_gradient(make):
    # Values half-way between integers: a finite-difference step never crosses a level, so the numbers are 0.
    x = np.floor(_images((1, 4, 4, 2), seed=2)).astype(np.float64) + 0.5
    x[..., 1] = 100.5  # one bin: Equalization passes this channel through unchanged, with a gradient of 1
    grads = check_gradients(lambda xs: make()(xs[0], training=True), [x])
    with GradientTape() as tape:
        tape.watch(x)
        out = make()(x, training=True)
    grad = np.asarray(tape.gradient(out, x, unconnected_gradients="zero"))
    expected = np.zeros_like(x)
    if isinstance(make(), L.Equalization):
        expected[..., 1] = 1.0
    np.testing.assert_array_equal(grad, expected)
    assert grads[0] is None or np.array_equal(np.asarray(grads[0]) != 0, expected != 0)


def _tone_model():
    inp = kgraph.Input((8, 8, 3), name="image")
    h = L.RandomPosterization((4, 6), seed=0)(inp)
    h = L.Solarization(threshold_factor=0.9, seed=1)(h)
    h = L.Equalization()(h)
    # The exact input goes into CLAHE: a layer that quantizes values, after float arithmetic that onnxruntime may
    # round differently (a convolution), could put a pixel in the next level.
    h = L.AutoContrast()(CLAHE(tile_grid_size=(2, 2))(h))
    h = L.Conv2D(3, 1)(h)
    return kgraph.Model(inp, L.Dense(1)(L.GlobalAveragePooling2D()(h)))


def _fit(model, x, y):
    model.compile(optimizer="adam", loss="mse")
    dense_before = model.layers[-1].get_weights()[0].copy()
    history = model.fit(x, y, epochs=2, batch_size=3, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert not np.allclose(model.layers[-1].get_weights()[0], dense_before)


def test_training_through_the_tone_layers_and_save_load(tmp_path):
    kgraph.utils.set_random_seed(0)
    x, y = _images((6, 8, 8, 3)), np.random.default_rng(1).normal(size=(6, 1)).astype(np.float32)
    inp = kgraph.Input((8, 8, 3))
    behind = kgraph.Model(inp, L.Dense(1)(L.Flatten()(CLAHE(tile_grid_size=(2, 2))(L.Conv2D(2, 1)(inp)))))
    with pytest.warns(UserWarning, match="Gradients do not exist"):  # no gradient reaches the Conv2D through CLAHE
        _fit(behind, x, y)
    model = _tone_model()
    _fit(model, x, y)
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert [layer.get_config() for layer in loaded.layers] == [layer.get_config() for layer in model.layers]


def test_export_matches_predict_with_auto_contrast_and_clahe_active():
    kgraph.utils.set_random_seed(0)
    model = _tone_model()
    x = _images((3, 8, 8, 3))
    assert not np.allclose(model.predict(x, verbose=0), _tone_model_without_curves(model).predict(x, verbose=0))
    proto = assert_parity(model, sampler=lambda name, shape, dtype, rng: rng.uniform(0, 255, shape).astype(dtype))
    assert {"CumSum", "GatherElements", "ReduceMin", "ReduceMax"} <= {node.op_type for node in proto.graph.node}


def _tone_model_without_curves(model):
    """``model``'s Conv2D, pooling and Dense alone (the training-only layers are identities at inference)."""
    inp = kgraph.Input((8, 8, 3))
    conv, pool, dense = (next(layer for layer in model.layers if isinstance(layer, cls))
                         for cls in (L.Conv2D, L.GlobalAveragePooling2D, L.Dense))
    return kgraph.Model(inp, dense(pool(conv(inp))))


def test_export_of_channels_first_single_layers_with_padding():
    inp = kgraph.Input((2, 7, 9), name="image")
    h = CLAHE(value_range=(-1, 1), clip_limit=2.5, tile_grid_size=(3, 2), data_format="channels_first")(inp)
    model = kgraph.Model(inp, L.AutoContrast(value_range=(-1, 1), data_format="channels_first")(h))
    assert_parity(model, sampler=lambda name, shape, dtype, rng: rng.uniform(-1, 1, shape).astype(dtype))


@pytest.mark.parametrize("make, match", [
    (lambda: L.RandomPosterization(9), "factor"), (lambda: L.RandomPosterization((0, 0.5)), "factor"),
    (lambda: L.RandomPosterization(2, value_range=(0, 1, 2)), "value_range"),
    (lambda: L.Solarization(addition_factor=1.5), "addition_factor"),
    (lambda: L.Solarization(threshold_factor=(0.1, 0.2, 0.3)), "threshold_factor"),
    (lambda: L.Solarization(value_range=5), "value_range"),
    (lambda: L.AutoContrast(value_range=("a", 1)), "value_range"),
    (lambda: L.Equalization(bins=0), "bins"), (lambda: L.Equalization(value_range=[1]), "value_range"),
    (lambda: CLAHE(tile_grid_size=(0, 2)), "tile_grid_size"), (lambda: CLAHE(clip_limit="4"), "clip_limit"),
    (lambda: CLAHE(value_range=None), "value_range"), (lambda: L.AutoContrast(data_format="nhwc"), "data_format"),
])
def test_bad_arguments_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_ranks_are_refused():
    with pytest.raises(ValueError, match="rank"):
        L.AutoContrast()(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="rank"):
        CLAHE()(np.zeros((1, 2, 8, 8, 3), np.float32))
