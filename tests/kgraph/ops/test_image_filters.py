"""keras.ops.image gaussian_blur, sobel_edges, elastic_transform, scale_and_translate and the layers
RandomGaussianBlur, RandomElasticTransform: values, gradients, errors, and Keras 3 where it is installed."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L
from kgraph import ops
from kgraph.ops.image_filters import _elastic_warp
from kgraph.random import SeedGenerator
from tests.gradcheck import check_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

RNG = np.random.default_rng(0)
X = RNG.random((2, 7, 6, 3)).astype("float32")
PIXELS = (RNG.random((2, 8, 10, 3)) * 300 - 20).astype("float32")  # some values outside (0, 255): clipping shows


def _channels_first(x):
    return np.moveaxis(x, -1, -3)


def _taps(size, sigma):
    taps = np.exp(-0.5 * ((np.arange(size) - (size - 1) / 2) / sigma) ** 2)
    return taps / taps.sum()


def _reference_blur(image, size_x, size_y, sigma_x, sigma_y):
    """A "same" correlation with zero padding written as a loop over the kernel, on one (H, W) plane."""
    kernel = np.outer(_taps(size_y, sigma_y), _taps(size_x, sigma_x))
    top, left = (size_y - 1) // 2, (size_x - 1) // 2
    padded = np.pad(image, ((top, size_y - 1 - top), (left, size_x - 1 - left)))
    out = np.zeros_like(image, dtype=np.float64)
    for i in range(size_y):
        for j in range(size_x):
            out += kernel[i, j] * padded[i:i + image.shape[0], j:j + image.shape[1]]
    return out


def _reference_sobel(plane):
    """``[dy, dx]`` of one (H, W) plane: 3x3 Sobel correlations, the edge pixels repeated outside."""
    p = np.pad(plane, 1, mode="edge")
    h, w = plane.shape
    window = {(i, j): p[1 + i:1 + i + h, 1 + j:1 + j + w] for i in (-1, 0, 1) for j in (-1, 0, 1)}
    dy = sum(s * (window[(1, j)] - window[(-1, j)]) for j, s in zip((-1, 0, 1), (1, 2, 1)))
    dx = sum(s * (window[(i, 1)] - window[(i, -1)]) for i, s in zip((-1, 0, 1), (1, 2, 1)))
    return np.stack([dy, dx], -1)


# ---------------------------------------------------------------- ops: values

@pytest.mark.parametrize("kernel_size, sigma", [((3, 3), (1.0, 1.0)), ((5, 3), (0.7, 1.4)), ((4, 2), (1.2, 0.5)),
                                                (9, 2.0)])
def test_gaussian_blur_is_a_zero_padded_gaussian_with_x_then_y_pairs(kernel_size, sigma):
    out = ops.image.gaussian_blur(X, kernel_size, sigma)
    (kx, ky), (sx, sy) = np.broadcast_to(kernel_size, 2), np.broadcast_to(sigma, 2)
    expected = np.stack([np.stack([_reference_blur(X[b, ..., c], kx, ky, sx, sy) for c in range(3)], -1)
                         for b in range(2)])
    assert out.shape == X.shape and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, atol=1e-6)  # float32 sums of at most 81 products
    first = ops.image.gaussian_blur(_channels_first(X), kernel_size, sigma, data_format="channels_first")
    np.testing.assert_allclose(first, _channels_first(out), atol=1e-6)
    np.testing.assert_allclose(ops.image.gaussian_blur(X[1], kernel_size, sigma), out[1], atol=1e-6)


def test_sobel_edges_are_central_differences_smoothed_across_with_edges_repeated():
    out = ops.image.sobel_edges(X)
    assert out.shape == X.shape + (2,)
    expected = np.stack([np.stack([_reference_sobel(X[b, ..., c]) for c in range(3)], -2) for b in range(2)])
    np.testing.assert_allclose(out, expected, atol=1e-5)
    np.testing.assert_allclose(ops.image.sobel_edges(_channels_first(X), data_format="channels_first"),
                               np.moveaxis(out, 3, 1), atol=1e-5)
    ramp = np.broadcast_to(np.arange(6.0)[None, :, None, None], (1, 6, 4, 1))  # rises by 1 a row
    dy = np.broadcast_to(np.array([4.0, 8, 8, 8, 8, 4])[:, None], (6, 4))  # the edge rows see half the rise
    np.testing.assert_allclose(ops.image.sobel_edges(ramp)[0, :, :, 0], np.stack([dy, np.zeros((6, 4))], -1))
    assert ops.image.sobel_edges(X.astype("float64")).dtype == np.float64


def test_scale_and_translate_resamples_with_half_pixel_centres():
    image = np.arange(9, dtype="float32").reshape(3, 3)
    scale = np.array([2.0, 2.0], "float32")
    out = ops.image.scale_and_translate(image, (5, 5), scale, -(scale / 2 - 0.5), (0, 1), "linear")
    np.testing.assert_allclose(out, 1.5 * np.arange(5)[:, None] + 0.5 * np.arange(5)[None, :], atol=1e-6)
    same = ops.image.scale_and_translate(X, X.shape, [1.0, 1.0], [0.0, 0.0], (1, 2), "bilinear")
    np.testing.assert_allclose(same, X, atol=1e-6)
    shifted = ops.image.scale_and_translate(X, X.shape, [1.0, 1.0], [0.0, 2.0], (-3, -2), "cubic")
    np.testing.assert_allclose(shifted[:, :, 2:], X[:, :, :-2], atol=1e-6)
    np.testing.assert_array_equal(shifted[:, :, :2], 0)  # outputs mapped outside the input are zero
    assert ops.image.scale_and_translate(X, (9, 9, 9, 9), [0.5], [0.0], (2,), "lanczos3").shape == (2, 7, 9, 3)
    assert ops.image.scale_and_translate(X, X.shape, [], [], (), "linear") is X


def test_scale_and_translate_rounds_and_clips_integer_images():
    image = np.array([[0, 255, 0, 255]], "uint8")
    out = ops.image.scale_and_translate(image, (1, 7), [1.75], [0.0], (1,), "lanczos5", antialias=False)
    assert out.dtype == np.uint8 and out.shape == (1, 7)
    as_float = ops.image.scale_and_translate(image.astype("float32"), (1, 7), [1.75], [0.0], (1,), "lanczos5",
                                             antialias=False)
    assert as_float.min() < 0 or as_float.max() > 255  # lanczos overshoots: the integer result is clipped
    np.testing.assert_array_equal(out, np.clip(np.round(as_float), 0, 255))


def test_elastic_transform_seeds_alpha_dtypes_and_layouts():
    first = ops.image.elastic_transform(X, alpha=2.0, sigma=1.0, seed=3)
    np.testing.assert_array_equal(ops.image.elastic_transform(X, alpha=2.0, sigma=1.0, seed=3), first)
    assert first.shape == X.shape and first.dtype == np.float32 and not np.allclose(first, X, atol=1e-2)
    assert not np.array_equal(ops.image.elastic_transform(X, alpha=2.0, sigma=1.0, seed=4), first)
    generator = SeedGenerator(5)
    assert not np.array_equal(ops.image.elastic_transform(X, seed=generator), ops.image.elastic_transform(
        X, seed=generator))
    np.testing.assert_allclose(ops.image.elastic_transform(X, alpha=0.0, sigma=1.0), X, atol=1e-6)
    np.testing.assert_allclose(ops.image.elastic_transform(_channels_first(X), 2.0, 1.0, seed=3,
                                                           data_format="channels_first"), _channels_first(first),
                               atol=1e-6)
    single = ops.image.elastic_transform(X[0], alpha=2.0, sigma=1.0, seed=3)
    assert single.shape == X[0].shape
    image8 = (X * 255).astype("uint8")
    integers = ops.image.elastic_transform(image8, 2.0, 1.0, seed=3)
    assert integers.dtype == np.uint8
    noise = np.random.default_rng(3).standard_normal((2, 2, 7, 6))  # what seed=3 draws
    np.testing.assert_array_equal(integers, np.round(_elastic_warp(image8.astype("float32"), noise, 2.0, 1.0,
                                                                   "bilinear", "reflect", 0.0, None)))


def test_elastic_warp_reads_the_displaced_positions_with_each_fill_mode():
    image = np.arange(12.0).reshape(1, 3, 4, 1)
    # sigma small enough that the blurred field is the field itself (a one-tap kernel).
    noise = np.zeros((2, 1, 3, 4))
    noise[0, 0, 1, 1], noise[1, 0, 2, 3] = 1.0, 0.5  # pixel (1, 1) reads one column right; (2, 3) half a row down
    warp = _elastic_warp(image, noise / 0.1, 1.0, 0.1, "bilinear", "constant", -1.0, None)[0, ..., 0]
    expected = image[0, ..., 0].copy()
    expected[1, 1], expected[2, 3] = image[0, 1, 2, 0], 0.5 * image[0, 2, 3, 0] + 0.5 * -1.0
    np.testing.assert_allclose(warp, expected)
    for fill_mode, below in (("nearest", 11.0), ("reflect", 11.0), ("mirror", 7.0), ("wrap", 3.0)):
        out = _elastic_warp(image, noise / 0.1 * 2, 1.0, 0.1, "nearest", fill_mode, 0.0, None)[0, 2, 3, 0]
        assert out == below, fill_mode


# ---------------------------------------------------------------- ops: gradients

@pytest.mark.parametrize("name", ["blur", "blur_first", "sobel", "elastic", "elastic_constant", "scale"])
def test_float64_gradients_match_finite_differences(name):
    x = RNG.standard_normal((2, 5, 4, 2))
    fns = {
        "blur": lambda xs: ops.image.gaussian_blur(xs[0], (3, 5), (0.8, 1.3)),
        "blur_first": lambda xs: ops.image.gaussian_blur(xs[0], 4, 0.9, data_format="channels_first"),
        "sobel": lambda xs: ops.image.sobel_edges(xs[0]),
        "elastic": lambda xs: ops.image.elastic_transform(xs[0], 3.0, 1.0, seed=1),
        "elastic_constant": lambda xs: ops.image.elastic_transform(xs[0], 3.0, 0.7, "nearest", "constant", 2.0,
                                                                   seed=2, data_format="channels_first"),
        "scale": lambda xs: ops.image.scale_and_translate(xs[0], (2, 7, 3, 2), ops.add(xs[1], 1.0), xs[2], (1, 2),
                                                          "cubic"),
    }
    inputs = [x] if name != "scale" else [x, np.array([0.31, -0.27]), np.array([0.41, -0.23])]
    check_gradients(fns[name], inputs, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("method", ["linear", "lanczos3"])
def test_scale_and_translate_gradients_in_scale_and_translation(method):
    x = RNG.standard_normal((6, 5))
    check_gradients(lambda xs: ops.image.scale_and_translate(x, (4, 8), xs[0], xs[1], (0, 1), method),
                    [np.array([0.73, 1.61]), np.array([0.37, -0.44])], rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- ops: symbolic calls and errors

def test_symbolic_calls_record_one_node_with_the_eager_output_spec():
    image = kgraph.Input((7, 6, 3))
    for out, shape in ((ops.image.gaussian_blur(image), (None, 7, 6, 3)),
                       (ops.image.sobel_edges(image), (None, 7, 6, 3, 2)),
                       (ops.image.elastic_transform(image, seed=1), (None, 7, 6, 3)),
                       (ops.image.scale_and_translate(image, (None, 4, 9, 3), [0.5, 1.5], [0, 0], (1, 2), "linear"),
                        (None, 4, 9, 3))):
        assert tuple(out.shape) == shape
    model = kgraph.Model(image, ops.image.sobel_edges(ops.image.gaussian_blur(image, (3, 3), (0.5, 0.9))))
    np.testing.assert_allclose(model.predict(X, verbose=0),
                               ops.image.sobel_edges(ops.image.gaussian_blur(X, (3, 3), (0.5, 0.9))), atol=1e-6)


@pytest.mark.parametrize("call, error, message", [
    (lambda: ops.image.gaussian_blur(X, (3, 3, 3)), ValueError, "kernel_size"),
    (lambda: ops.image.gaussian_blur(X, (0, 3)), ValueError, "positive integers"),
    (lambda: ops.image.gaussian_blur(X, 2.5), ValueError, "kernel_size=2.5"),
    (lambda: ops.image.gaussian_blur(X, 3, (1.0, 0.0)), ValueError, "sigma"),
    (lambda: ops.image.gaussian_blur(X[0, 0], 3), ValueError, "rank 3"),
    (lambda: ops.image.gaussian_blur(X, data_format="nhwc"), ValueError, "data_format"),
    (lambda: ops.image.sobel_edges(X[0]), ValueError, "expected rank 4"),
    (lambda: ops.image.elastic_transform(X, interpolation="bicubic"), ValueError, "interpolation=bicubic"),
    (lambda: ops.image.elastic_transform(X, fill_mode="edge"), ValueError, "fill_mode=edge"),
    (lambda: ops.image.elastic_transform(X, sigma=0.0), ValueError, "sigma=0.0"),
    (lambda: ops.image.elastic_transform(X, alpha=np.inf), ValueError, "alpha=inf"),
    (lambda: ops.image.elastic_transform(X, sigma=[1.0, 2.0]), ValueError, "finite number"),
    (lambda: ops.image.elastic_transform(X, seed="one"), ValueError, "seed"),
    (lambda: ops.image.scale_and_translate(X, X.shape, [1, 1], [0, 0], (1, 2), "nearest"), ValueError,
     "method=nearest"),
    (lambda: ops.image.scale_and_translate(X, (7, 6), [1, 1], [0, 0], (1, 2), "linear"), ValueError, "output_shape"),
    (lambda: ops.image.scale_and_translate(X, X.shape, [1, 1], [0, 0], (1, 5), "linear"), ValueError,
     "spatial_dims"),
    (lambda: ops.image.scale_and_translate(X, X.shape, [1, 1], [0, 0], (1, -3), "linear"), ValueError,
     "distinct"),
    (lambda: ops.image.scale_and_translate(X, X.shape, [1, 1, 1], [0, 0], (1, 2), "linear"), ValueError,
     "scale.shape=\\(3,\\)"),
])
def test_bad_arguments_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------- ops: Keras 3

@needs_keras
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("rank", [3, 4])
def test_filters_and_resampling_match_keras(data_format, rank):
    import keras
    x = X if data_format == "channels_last" else _channels_first(X)
    x = x if rank == 4 else x[0]

    def theirs(name, *args, **kwargs):
        return keras.ops.convert_to_numpy(getattr(keras.ops.image, name)(*args, **kwargs))

    # Square kernels: Keras's torch backend reshapes a non-square kernel to the wrong shape (compared below with
    # its NumPy backend). The data format is passed: its eager torch path reads None as channels_first.
    for kernel_size, sigma in (((3, 3), (1.0, 1.0)), ((5, 5), (0.7, 1.3)), ((7, 7), (2.0, 0.5))):
        np.testing.assert_allclose(ops.image.gaussian_blur(x, kernel_size, sigma, data_format),
                                   theirs("gaussian_blur", x, kernel_size, sigma, data_format), atol=1e-6)
    height_axis = x.ndim - 3 if data_format == "channels_last" else x.ndim - 2
    dims = (height_axis, height_axis + 1)
    for method, antialias, scale, translation in (("linear", True, [0.6, 1.5], [0.3, -0.2]),
                                                  ("bicubic", False, [1.7, 0.5], [0.0, 1.0]),
                                                  ("lanczos3", True, [0.4, 0.9], [-0.5, 0.25]),
                                                  ("lanczos5", False, [2.5, 1.2], [0.0, 0.0])):
        shape = list(x.shape)
        shape[dims[0]], shape[dims[1]] = 5, 8
        args = (x, tuple(shape), np.array(scale, "float32"), np.array(translation, "float32"), dims, method,
                antialias)
        np.testing.assert_allclose(ops.image.scale_and_translate(*args), theirs("scale_and_translate", *args),
                                   atol=1e-6)
    if rank == 4:
        # Keras's torch Sobel pads with zeros, its NumPy backend repeats the edges: the inside agrees with both.
        inside = (slice(None), slice(None), slice(1, -1), slice(1, -1)) if data_format == "channels_first" else \
            (slice(None), slice(1, -1), slice(1, -1))
        np.testing.assert_allclose(ops.image.sobel_edges(x, data_format)[inside],
                                   theirs("sobel_edges", x, data_format)[inside], atol=1e-6)


def _keras_numpy_backend_image():
    """Keras's NumPy backend image module, loaded beside the active backend (the attribute its import binds on
    ``keras.src.backend`` is put back, or Keras's own layers would call NumPy-backend modules from then on)."""
    # Keras's NumPy backend borrows jax's fft at import; without jax (not in the comparison extra, a large
    # install for one test) the NumPy-backend comparison is skipped, the torch-backend ones still run.
    pytest.importorskip("jax", reason="Keras's NumPy backend module imports jax")
    import keras.src.backend as backend
    active = backend.numpy
    try:
        from keras.src.backend.numpy import image
    finally:
        backend.numpy = active
    return image


@needs_keras
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_filters_match_keras_numpy_backend_at_the_borders_and_for_uneven_kernels(data_format):
    numpy_backend = _keras_numpy_backend_image()
    x = X if data_format == "channels_last" else _channels_first(X)
    np.testing.assert_allclose(ops.image.sobel_edges(x, data_format),
                               numpy_backend.sobel_edges(x, data_format=data_format), atol=1e-6)
    for kernel_size, sigma in (((3, 5), (0.6, 1.2)), ((4, 4), (1.0, 1.0)), ((2, 7), (0.5, 2.0))):
        np.testing.assert_allclose(ops.image.gaussian_blur(x, kernel_size, sigma, data_format),
                                   numpy_backend.gaussian_blur(x, kernel_size, sigma, data_format=data_format),
                                   atol=1e-6)
    integers = (X * 255).astype("uint8")
    args = (integers, (2, 4, 9, 3), np.array([0.6, 1.5]), np.array([0.3, -0.2]), (1, 2), "cubic")
    np.testing.assert_array_equal(ops.image.scale_and_translate(*args), numpy_backend.scale_and_translate(*args))


@needs_keras
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("interpolation, fill_mode, alpha, sigma", [
    ("bilinear", "reflect", 3.0, 1.0), ("bilinear", "constant", 8.0, 0.4), ("bilinear", "wrap", 5.0, 0.8),
    ("nearest", "mirror", 6.0, 0.6), ("nearest", "nearest", 4.0, 1.5),
])
def test_elastic_transform_matches_keras_on_the_same_noise(data_format, interpolation, fill_mode, alpha, sigma):
    import keras
    import torch
    x = X if data_format == "channels_last" else _channels_first(X)
    # Keras's torch backend draws its two fields from torch's global generator: seed it, draw them again here.
    torch.manual_seed(11)
    expected = keras.ops.convert_to_numpy(keras.ops.image.elastic_transform(
        x, alpha, sigma, interpolation, fill_mode, 0.5, data_format=data_format))
    torch.manual_seed(11)
    noise = np.stack([torch.normal(0.0, 1.0, size=(2, 7, 6)).numpy() for _ in range(2)])
    # float32 positions (Keras) against float64 ones: bilinear weights differ by a few ulps of the displacement.
    np.testing.assert_allclose(_elastic_warp(x, noise, alpha, sigma, interpolation, fill_mode, 0.5, data_format),
                               expected, atol=5e-6)


# ---------------------------------------------------------------- layers

LAYERS = [
    lambda seed: L.RandomGaussianBlur(seed=seed),
    lambda seed: L.RandomGaussianBlur((0.8, 1.0), kernel_size=(3, 5), sigma=(0.3, 0.9), seed=seed),
    lambda seed: L.RandomElasticTransform(seed=seed),
    lambda seed: L.RandomElasticTransform((0.9, 1.0), scale=(0.9, 1.0), interpolation="nearest", fill_mode="constant",
                                          fill_value=100.0, seed=seed),
]


@pytest.mark.parametrize("make", LAYERS)
def test_layers_are_identities_at_inference_and_seeded_in_training(make):
    layer = make(7)
    assert layer(PIXELS, training=False) is PIXELS and not np.array_equal(layer(PIXELS), PIXELS)
    first = make(7)(PIXELS, training=True)
    np.testing.assert_array_equal(make(7)(PIXELS, training=True), first)
    assert first.shape == PIXELS.shape and first.dtype == np.float32
    assert first.min() >= 0 and first.max() <= 255 and not np.allclose(first, np.clip(PIXELS, 0, 255), atol=1)
    assert not np.array_equal(make(8)(PIXELS, training=True), first)
    np.testing.assert_array_equal(type(layer).from_config(layer.get_config())(PIXELS, training=True), first)


@pytest.mark.parametrize("make", LAYERS)
def test_layers_take_single_images_and_channels_first(make):
    batch = make(1)(PIXELS[:1], training=True)
    np.testing.assert_allclose(make(1)(PIXELS[0], training=True), batch[0], atol=1e-4)
    config = make(1).get_config() | {"data_format": "channels_first"}
    first = type(make(1)).from_config(config)(_channels_first(PIXELS[:1]), training=True)
    np.testing.assert_allclose(first, _channels_first(batch), atol=1e-4)
    with pytest.raises(ValueError, match="expected rank 3 \\(single image\\) or rank 4"):
        make(1)(PIXELS[0, 0], training=True)


def test_layers_do_what_they_say():
    blurred = L.RandomGaussianBlur((1.0, 1.0), kernel_size=5, sigma=(0.6, 0.6), value_range=(0, 100))(
        PIXELS, training=True)
    np.testing.assert_allclose(blurred, np.clip(ops.image.gaussian_blur(PIXELS, 5, 0.6 + 1e-6), 0, 100), atol=1e-4)
    never = L.RandomGaussianBlur(0.0, value_range=(0, 100))(PIXELS, training=True)
    np.testing.assert_array_equal(never, np.clip(PIXELS, 0, 100))
    for kwargs in ({"scale": 0.0}, {"factor": (0.0, 0.0), "scale": 0.5}):
        # Nothing can be drawn: the batch passes unchanged, not even clipped, as in Keras.
        np.testing.assert_array_equal(L.RandomElasticTransform(**kwargs)(PIXELS, training=True), PIXELS)
    kept = L.RandomElasticTransform(factor=(0.0, 1e-9), scale=0.5, value_range=(0, 100))(PIXELS, training=True)
    np.testing.assert_array_equal(kept, np.clip(PIXELS, 0, 100))


@pytest.mark.parametrize("make", [
    lambda: L.RandomGaussianBlur((1.0, 1.0), kernel_size=(3, 5), seed=3, value_range=(-50, 50), dtype="float64"),
    lambda: L.RandomElasticTransform((1.0, 1.0), scale=(0.6, 0.6), seed=3, value_range=(-50, 50), dtype="float64"),
    lambda: L.RandomElasticTransform(scale=0.8, fill_mode="constant", fill_value=1.0, seed=4, value_range=(-50, 50),
                                     data_format="channels_first", dtype="float64"),
])
def test_layer_gradients_match_finite_differences(make):
    x = RNG.standard_normal((2, 6, 5, 2))
    # A fresh layer per call: the same seed gives the same random transform every time.
    check_gradients(lambda xs: make()(xs[0], training=True), [x], rtol=1e-4, atol=1e-6)


def test_layers_train_in_a_model_and_round_trip(tmp_path):
    kgraph.utils.set_random_seed(0)
    inputs = kgraph.Input((8, 8, 2))
    h = L.RandomElasticTransform(scale=0.5, value_range=(0, 1))(L.RandomGaussianBlur(value_range=(0, 1))(inputs))
    model = kgraph.Model(inputs, L.Dense(1)(L.Flatten()(L.Conv2D(2, 3)(h))))
    model.compile(optimizer="adam", loss="mse")
    x = RNG.uniform(size=(8, 8, 8, 2)).astype(np.float32)
    assert np.isfinite(model.fit(x, x.mean(axis=(1, 2, 3)), epochs=1, batch_size=4, verbose=0).history["loss"]).all()
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert [layer.get_config() for layer in loaded.layers[1:3]] == [layer.get_config() for layer in model.layers[1:3]]


@pytest.mark.parametrize("call, error, message", [
    (lambda: L.RandomGaussianBlur(kernel_size=4), ValueError, "kernel_size must be an odd number"),
    (lambda: L.RandomGaussianBlur(kernel_size=(3, 3, 3)), ValueError, "kernel_size"),
    (lambda: L.RandomGaussianBlur(kernel_size="3"), ValueError, "kernel_size=3"),
    (lambda: L.RandomGaussianBlur(factor=1.5), ValueError, "factor=1.5"),
    (lambda: L.RandomGaussianBlur(sigma=2.0), ValueError, "sigma=2.0"),
    (lambda: L.RandomElasticTransform(scale=(1.5, 2.0)), ValueError, "scale"),
    (lambda: L.RandomElasticTransform(factor=-0.5), ValueError, "factor=-0.5"),
    (lambda: L.RandomElasticTransform(interpolation="bicubic"), NotImplementedError, "bicubic"),
    (lambda: L.RandomElasticTransform(fill_mode="edge"), NotImplementedError, "edge"),
])
def test_layer_bad_arguments_raise_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def _config(layer):
    return {k: v for k, v in layer.get_config().items() if k not in ("name", "dtype", "trainable")}


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandomGaussianBlur", {"factor": (1.0, 1.0), "sigma": (0.7, 0.7)}),
    ("RandomGaussianBlur", {"factor": (1.0, 1.0), "kernel_size": 5, "sigma": (0.4, 0.4), "value_range": (0, 200)}),
    ("RandomGaussianBlur", {"factor": (1.0, 1.0), "sigma": (0.5, 0.5), "data_format": "channels_first"}),
    ("RandomGaussianBlur", {"factor": 0.0, "value_range": (10, 100)}),
    ("RandomElasticTransform", {"factor": (0.0, 0.0), "scale": 0.4}),
    ("RandomElasticTransform", {"scale": 0.0, "fill_mode": "constant", "interpolation": "nearest"}),
])
def test_layers_match_keras_where_deterministic(name, kwargs):
    import keras
    x = PIXELS if kwargs.get("data_format") != "channels_first" else _channels_first(PIXELS)
    expected = keras.ops.convert_to_numpy(getattr(keras.layers, name)(**kwargs)(x, training=True))
    # Pixel values up to 255 filtered in float32: 1e-4 absolute is rounding.
    np.testing.assert_allclose(getattr(L, name)(**kwargs)(x, training=True), expected, atol=1e-4)
    assert _config(getattr(keras.layers, name)(**kwargs)) == _config(getattr(L, name)(**kwargs))


@needs_keras
@pytest.mark.parametrize("name", ["RandomGaussianBlur", "RandomElasticTransform"])
def test_layer_default_configs_match_keras(name):
    import keras
    assert _config(getattr(keras.layers, name)()) == _config(getattr(L, name)())
    assert _config(getattr(keras.layers, name)(factor=0.3, seed=5)) == _config(getattr(L, name)(factor=0.3, seed=5))
