"""Convolution + max pooling as one op, and Functional models running Conv -> MaxPooling pairs through it."""
import importlib

import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from tests.gradcheck import check_gradients

conv_pool_module = importlib.import_module("kgraph.ops.conv_pool")

# (input shape, kernel shape, strides, padding, dilation, pool size, relu); the Winograd path is taken by the
# 3x3 stride-1 cases with >= 16 channels and filters and pools dividing 4.
CASES = [
    ((2, 28, 28, 1), (3, 3, 1, 8), 1, "valid", 1, 2, True),
    ((3, 13, 13, 16), (3, 3, 16, 16), 1, "valid", 1, 2, True),
    ((2, 13, 13, 16), (3, 3, 16, 16), 1, "same", 1, 2, False),
    ((2, 12, 11, 16), (3, 3, 16, 20), 1, "valid", 1, (2, 4), True),
    ((2, 15, 14, 3), (3, 2, 3, 5), 2, "same", 1, 3, True),
    ((2, 15, 14, 4), (3, 3, 2, 6), 1, "valid", 2, 2, True),
    ((2, 20, 5), (3, 5, 7), 1, "valid", 1, 2, True),
    ((2, 21, 5), (4, 5, 7), 2, "same", 1, 3, False),
]


def pair(x, kernel, bias, strides, padding, dilation, pool, relu):
    """The two ops the fused one stands for."""
    conv = ops.conv(x, kernel, strides, padding, dilation_rate=dilation, bias=bias, relu=relu)
    return ops.max_pool(conv, pool, pool, "valid")


def fused(x, kernel, bias, strides, padding, dilation, pool, relu):
    return ops.conv_max_pool(x, kernel, strides, padding, dilation_rate=dilation, bias=bias, relu=relu,
                             pool_size=pool)


def values_and_gradients(fn, arrays, cotangent_seed=7):
    with kgraph.GradientTape() as tape:
        for a in arrays:
            if a is not None:
                tape.watch(a)
        out = fn(*arrays)
    cotangent = np.random.default_rng(cotangent_seed).standard_normal(out.shape).astype(out.dtype)
    sources = [a for a in arrays if a is not None]
    return out, tape.gradient(out, sources, output_gradients=cotangent)


def case_arrays(case, dtype, with_bias, seed=0):
    x_shape, k_shape = case[:2]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    kernel = (rng.standard_normal(k_shape) * 0.3).astype(dtype)
    bias = (rng.standard_normal(k_shape[-1]) * 0.1).astype(dtype) if with_bias else None
    return x, kernel, bias


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_fused_op_matches_conv_then_max_pool(case, with_bias):
    x, kernel, bias = case_arrays(case, "float64", with_bias)
    args = case[2:]
    got, got_grads = values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias])
    want, want_grads = values_and_gradients(lambda *a: pair(*a, *args), [x, kernel, bias])
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("tile", [4, 5, 6])
@pytest.mark.parametrize("pool", [2, 3])
def test_every_winograd_tile_with_and_without_windows_inside_tiles(tile, pool, monkeypatch):
    # Windows inside tiles (pool divides the tile) pool the tiles directly; others pool image-layout slabs.
    monkeypatch.setattr(importlib.import_module("kgraph.ops.kernels.winograd"), "TILES", (tile,))
    case = ((2, 15, 14, 16), (3, 3, 16, 16), 1, "valid", 1, pool, True)
    x, kernel, bias = case_arrays(case, "float64", True)
    got, got_grads = values_and_gradients(lambda *a: fused(*a, *case[2:]), [x, kernel, bias])
    want, want_grads = values_and_gradients(lambda *a: pair(*a, *case[2:]), [x, kernel, bias])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("case", [CASES[0], CASES[1], CASES[4], CASES[6]])
def test_fused_op_float32_stays_close(case):
    x, kernel, bias = case_arrays(case, "float32", True)
    args = case[2:]
    got = values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias])
    want = values_and_gradients(lambda *a: pair(*a, *args), [x, kernel, bias])
    for g, w in zip([got[0]] + list(got[1]), [want[0]] + list(want[1])):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, atol=2e-5 * np.abs(w).max())


@pytest.mark.parametrize("case", [CASES[1], CASES[3], CASES[4], CASES[7]])
def test_fused_op_gradients_match_finite_differences(case):
    x, kernel, bias = case_arrays(case, "float64", True)
    args = case[2:]
    check_gradients(lambda a: fused(a[0], a[1], a[2], *args), [x[:1], kernel, bias])


@pytest.mark.parametrize("case", [CASES[0], CASES[1]])
@pytest.mark.parametrize("keep_bytes", [1 << 40, 1])
def test_several_image_blocks_give_the_same_values_and_gradients(case, keep_bytes, monkeypatch):
    # Kept for the VJP or rebuilt there block by block: the same values and gradients as one block.
    x, kernel, bias = case_arrays(case, "float64", True)
    args = case[2:]
    monkeypatch.setattr(conv_pool_module, "_BLOCK_BYTES", 1 << 40)
    one = values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias])
    monkeypatch.setattr(conv_pool_module, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(conv_pool_module, "_KEEP_BYTES", keep_bytes)
    blocks = values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias])
    for g, w in zip([blocks[0]] + list(blocks[1]), [one[0]] + list(one[1])):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("channels", [1, 16])
def test_ties_go_to_the_first_maximum_in_row_major_order(channels):
    # A constant input makes every cell of a window equal: max_pool's rule sends each window's gradient to
    # its first cell, and so must the fused op (im2col and Winograd paths).
    x = np.ones((2, 14, 14, channels))
    kernel = np.full((3, 3, channels, 16), 0.25)
    bias = np.zeros(16)
    got = values_and_gradients(lambda *a: fused(*a, 1, "valid", 1, 2, False), [x, kernel, bias])
    want = values_and_gradients(lambda *a: pair(*a, 1, "valid", 1, 2, False), [x, kernel, bias])
    for g, w in zip([got[0]] + list(got[1]), [want[0]] + list(want[1])):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_pool_larger_than_the_convolution_output_is_an_error():
    with pytest.raises(ValueError, match="smaller than the pooling window"):
        ops.conv_max_pool(np.ones((1, 4, 4, 1)), np.ones((3, 3, 1, 2)), pool_size=3)


def small_cnn(activation="relu", pool_strides=None):
    inputs = kgraph.Input(shape=(12, 12, 2))
    h = layers.Conv2D(16, 3, activation=activation, name="conv_a")(inputs)
    h = layers.MaxPooling2D(2, strides=pool_strides, name="pool_a")(h)
    h = layers.Conv2D(16, 3, activation="relu", padding="same", name="conv_b")(h)
    h = layers.MaxPooling2D(2, name="pool_b")(h)
    outputs = layers.Dense(3)(layers.Flatten()(h))
    return kgraph.Model(inputs, outputs)


def layer_by_layer(model, x):
    """The model's layers called one by one in eager mode (never fused)."""
    h = x
    for layer in model.layers[1:]:
        h = layer(h)
    return h


def fused_pairs(model):
    return sorted(node.outbound_layer.name for node in model._fusions.values())


def test_functional_model_fuses_conv_pool_pairs_with_the_same_outputs_and_gradients():
    kgraph.utils.set_random_seed(0)
    model = small_cnn()
    assert fused_pairs(model) == ["pool_a", "pool_b"]
    x = np.random.default_rng(1).standard_normal((5, 12, 12, 2)).astype("float32")
    np.testing.assert_allclose(model(x), layer_by_layer(model, x), rtol=1e-5, atol=1e-6)

    def gradients(fn):
        with kgraph.GradientTape() as tape:
            loss = ops.sum(ops.square(fn(x)))
        return tape.gradient(loss, model.trainable_weights)
    for got, want in zip(gradients(model), gradients(lambda a: layer_by_layer(model, a))):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_pairs_that_cannot_fuse_run_as_two_layers():
    # Overlapping pooling windows, or an activation that is not relu or linear: no fusion, same results.
    for model in (small_cnn(pool_strides=1), small_cnn(activation="tanh")):
        assert fused_pairs(model) == ["pool_b"]
        x = np.random.default_rng(2).standard_normal((2, 12, 12, 2)).astype("float32")
        np.testing.assert_allclose(model(x), layer_by_layer(model, x), rtol=1e-5, atol=1e-6)


def test_a_convolution_output_read_elsewhere_is_not_fused():
    inputs = kgraph.Input(shape=(10, 10, 1))
    conv = layers.Conv2D(4, 3, activation="relu")(inputs)
    pooled = layers.MaxPooling2D(2)(conv)
    model = kgraph.Model(inputs, [pooled, conv])
    assert model._fusions == {}
    inner = layers.Conv2D(4, 3)(inputs)
    both = layers.Concatenate()([layers.Flatten()(layers.MaxPooling2D(2)(inner)),
                                 layers.Flatten()(layers.AveragePooling2D(2)(inner))])
    assert kgraph.Model(inputs, both)._fusions == {}
    x = np.random.default_rng(3).standard_normal((2, 10, 10, 1)).astype("float32")
    got_pooled, got_conv = model(x)
    np.testing.assert_allclose(got_conv, model.layers[1](x), rtol=1e-6)
    np.testing.assert_allclose(got_pooled, model.layers[2](got_conv), rtol=1e-6)


def test_fused_model_trains_saves_and_exports_like_any_other(tmp_path):
    kgraph.utils.set_random_seed(0)
    model = small_cnn()
    model.compile(optimizer="adam", loss="mse")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((32, 12, 12, 2)).astype("float32")
    y = rng.standard_normal((32, 3)).astype("float32")
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    path = tmp_path / "model.pkl"
    model.save(path)
    loaded = kgraph.models.load_model(path)
    assert fused_pairs(loaded) == ["pool_a", "pool_b"]
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


@pytest.mark.parametrize("shapes", [((40, 28, 28, 1), (3, 3, 1, 8)), ((130, 13, 13, 16), (3, 3, 16, 24))])
def test_image_blocks_in_two_threads_match_one_thread(shapes, monkeypatch):
    # im2col, and Winograd with enough images for two blocks of 256+ tiles; the first call of a geometry runs
    # split, so each way is forced here. BLAS runs one thread per half: products may round in another order.
    threads = importlib.import_module("kgraph.ops.kernels.threads")
    x, kernel, bias = case_arrays((shapes[0], shapes[1]), "float32", True, seed=3)
    runs = []
    for split in (True, False):
        monkeypatch.setattr(threads.Timing, "choose", lambda self, split=split: split)
        runs.append(values_and_gradients(lambda *a: fused(*a, 1, "valid", 1, 2, True), [x, kernel, bias]))
    (got, got_grads), (want, want_grads) = runs
    halves = conv_pool_module._halves(None, [(0, len(x))], len(x), 1)
    assert (halves is not None) == threads.can_split()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * np.abs(w).max())


def _direct_kernels():
    """The compiled kernels, loaded now (the direct path's pass needs them), or a skip where numba is absent."""
    compiled = importlib.import_module("kgraph.ops.kernels.compiled")
    fused_kernels = compiled.kernels()
    if fused_kernels is None:
        pytest.skip("numba is not installed: the single-channel convolution runs as a window-matrix product")
    return fused_kernels


def _direct_runs(monkeypatch):
    """A list that gets one entry per image block the direct path pools."""
    runs, forward = [], conv_pool_module._Direct.forward_pooled

    def counted(self, *args):
        runs.append(args[1:3])
        return forward(self, *args)
    monkeypatch.setattr(conv_pool_module._Direct, "forward_pooled", counted)
    return runs


@pytest.mark.parametrize("shape,padding", [((3, 28, 28, 1), "valid"), ((2, 17, 15, 1), "valid"),
                                           ((2, 16, 13, 1), "same")])
@pytest.mark.parametrize("with_bias,relu", [(True, True), (False, True), (True, False), (False, False)])
def test_single_channel_3x3_convolution_pooled_in_one_pass(shape, padding, with_bias, relu, monkeypatch):
    # The first layer of a grayscale CNN: convolved and pooled in one compiled pass, the same values and
    # gradients (the input's too) as the two ops, float rounding apart.
    _direct_kernels()
    runs = _direct_runs(monkeypatch)
    case = (shape, (3, 3, 1, 12))
    x, kernel, bias = case_arrays(case, "float64", with_bias, seed=5)
    args = (1, padding, 1, 2, relu)
    got, got_grads = values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias])
    assert runs, "the direct path did not run"
    want, want_grads = values_and_gradients(lambda *a: pair(*a, *args), [x, kernel, bias])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    assert len(got_grads) == len(want_grads) == (3 if with_bias else 2)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-11)


def test_single_channel_pass_float32_and_two_threads_match_the_window_matrix_path(monkeypatch):
    # The digits CNN's first layer at a 64-image batch: the direct pass, whole and in two threads, against the
    # window-matrix product it replaces (float32: within rounding; the winning taps agree).
    _direct_kernels()
    threads = importlib.import_module("kgraph.ops.kernels.threads")
    x, kernel, bias = case_arrays(((64, 28, 28, 1), (3, 3, 1, 32)), "float32", True, seed=11)
    args = (1, "valid", 1, 2, True)
    results = []
    for split in (True, False):
        runs = _direct_runs(monkeypatch)
        monkeypatch.setattr(threads.Timing, "choose", lambda self, split=split: split)
        results.append(values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias]))
        assert len(runs) == (2 if split and threads.can_split() else 1)
    monkeypatch.setattr(conv_pool_module._Direct, "applicable", staticmethod(lambda *a: False))
    results.append(values_and_gradients(lambda *a: fused(*a, *args), [x, kernel, bias]))
    want, want_grads = results[-1]
    for got, got_grads in results[:-1]:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max())
        for g, w in zip(got_grads, want_grads):
            assert g.dtype == np.float32
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * np.abs(w).max())


def test_single_channel_pass_propagates_nan_as_max_pool():
    # A NaN in an image reaches the pooled cells whose windows read it, as conv then max_pool gives.
    _direct_kernels()
    x, kernel, bias = case_arrays(((1, 10, 10, 1), (3, 3, 1, 4)), "float64", True, seed=2)
    x[0, 4, 5, 0] = np.nan
    got = ops.conv_max_pool(x, kernel, bias=bias, relu=True, pool_size=2)
    want = pair(x, kernel, bias, 1, "valid", 1, 2, True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(np.asarray(want)))
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)


def test_cnn_trains_alike_with_the_single_channel_pass_and_the_window_matrix(monkeypatch):
    # A grayscale CNN's first layer through the direct pass or the window-matrix product: the same trajectory
    # within float32 rounding over four epochs on scikit-learn's shipped 8x8 digits, and it learns.
    _direct_kernels()
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x = (digits.images[:384, :, :, None] / 16.0).astype("float32")
    y = digits.target[:384]
    runs = []
    for direct in (True, False):
        calls = _direct_runs(monkeypatch)
        if not direct:
            monkeypatch.setattr(conv_pool_module._Direct, "applicable", staticmethod(lambda *a: False))
        kgraph.utils.set_random_seed(4)
        model = kgraph.Sequential([kgraph.Input((8, 8, 1)), layers.Conv2D(16, 3, activation="relu"),
                                   layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(10, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        history = model.fit(x, y, epochs=4, batch_size=16, verbose=0, shuffle=False)
        assert bool(calls) == direct
        runs.append((history.history["loss"], model.get_weights()))
    (direct_losses, direct_weights), (matrix_losses, matrix_weights) = runs
    assert direct_losses[-1] < 0.9 * direct_losses[0]
    np.testing.assert_allclose(direct_losses, matrix_losses, rtol=1e-4)
    for a, b in zip(direct_weights, matrix_weights):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("compiled_kernels", ["0", "1"])
@pytest.mark.parametrize("name,call,kernel_shape,channels,out_shape", [
    ("conv", lambda x, k, b: ops.conv(x, k, bias=b, relu=True), (3, 3, 1, 8), 1, (0, 10, 10, 8)),
    ("conv_max_pool", lambda x, k, b: ops.conv_max_pool(x, k, bias=b, relu=True), (3, 3, 1, 8), 1, (0, 5, 5, 8)),
    ("winograd", lambda x, k, b: ops.conv_max_pool(x, k, bias=b), (3, 3, 16, 16), 16, (0, 5, 5, 16)),
    ("depthwise", lambda x, k, b: ops.depthwise_conv(x, k, bias=b), (3, 3, 2, 2), 2, (0, 10, 10, 4)),
    ("conv_transpose", lambda x, k, b: ops.conv_transpose(x, k, 2) + b, (3, 3, 4, 1), 1, (0, 25, 25, 4)),
])
def test_a_batch_of_no_images_gives_an_empty_output_and_zero_gradients(name, call, kernel_shape, channels,
                                                                        out_shape, compiled_kernels, monkeypatch):
    # As Keras's backends: an empty batch convolves to an empty batch (a division by zero before).
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", compiled_kernels)
    x = np.zeros((0, 12, 12, channels), dtype="float32")
    kernel = kgraph.Variable(np.ones(kernel_shape, dtype="float32"))
    bias = kgraph.Variable(np.ones(out_shape[-1], dtype="float32"))
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        y = call(x, kernel, bias)
        loss = ops.sum(y)
    assert y.shape == out_shape
    grads = tape.gradient(loss, [kernel, bias, x])
    for g, like in zip(grads, [kernel, bias, x]):
        assert np.shape(g) == np.shape(like)
        assert not np.any(np.asarray(g))


def test_a_cnn_on_a_batch_of_no_images():
    model = kgraph.Sequential([kgraph.Input((28, 28, 1)), layers.Conv2D(8, 3, activation="relu"),
                               layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(3)])
    assert model(np.zeros((0, 28, 28, 1), dtype="float32")).shape == (0, 3)
