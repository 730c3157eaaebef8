"""Convolution layers: values against direct NumPy references (and torch when installed), gradients, Keras layout."""
import concurrent.futures
import importlib
import itertools
import math

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers, ops
from tests.gradcheck import check_gradients, check_variable_gradients


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


def same_pads(n, k, s, d):
    """TensorFlow's rule, restated: total pad so that out = ceil(n / s), the odd cell at the end."""
    total = max((math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n, 0)
    return total // 2, total - total // 2


def reference_conv(x, kernel, strides, pads, dilation):
    """Direct convolution: one dot product per output cell and group (grouping read from the kernel shape)."""
    r = kernel.ndim - 2
    groups = x.shape[-1] // kernel.shape[-2]
    cin, filters = kernel.shape[-2], kernel.shape[-1]
    fg = filters // groups
    xp = np.pad(x, [(0, 0)] + list(pads) + [(0, 0)])
    extents = [(k - 1) * d + 1 for k, d in zip(kernel.shape[:r], dilation)]
    out_sizes = [(p - e) // s + 1 for p, e, s in zip(xp.shape[1:-1], extents, strides)]
    out = np.zeros((x.shape[0],) + tuple(out_sizes) + (filters,))
    for pos in itertools.product(*(range(o) for o in out_sizes)):
        window = xp[(slice(None),) + tuple(slice(p * s, p * s + e, d) for p, s, e, d in
                                           zip(pos, strides, extents, dilation))]
        for g in range(groups):
            patch = window[..., g * cin:(g + 1) * cin]
            out[(slice(None),) + pos + (slice(g * fg, (g + 1) * fg),)] = np.tensordot(
                patch, kernel[..., g * fg:(g + 1) * fg], axes=r + 1)
    return out


def reference_conv_transpose(x, kernel, strides, dilation, crops):
    """Scatter every input cell times the kernel into the full output, then crop/extend as Keras does."""
    n, h, w, _ = x.shape
    kh, kw, filters, _ = kernel.shape
    full = [(h - 1) * strides[0] + (kh - 1) * dilation[0] + 1, (w - 1) * strides[1] + (kw - 1) * dilation[1] + 1]
    buf = np.zeros((n, full[0] + 8, full[1] + 8, filters))
    for i, j in itertools.product(range(h), range(w)):
        contrib = np.einsum("nc,abfc->nabf", x[:, i, j], kernel)
        for a, b in itertools.product(range(kh), range(kw)):
            buf[:, i * strides[0] + a * dilation[0], j * strides[1] + b * dilation[1]] += contrib[:, a, b]
    (c0, e0), (c1, e1) = crops
    return buf[:, c0:full[0] + e0, c1:full[1] + e1]


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("size,kernel,strides,dilation,groups,padding", [
    ((9, 8), (3, 3), (2, 2), (1, 1), 1, "same"),
    ((8, 7), (4, 2), (3, 2), (1, 1), 1, "same"),
    ((10, 10), (3, 3), (1, 1), (2, 3), 1, "same"),
    ((7, 9), (3, 2), (1, 1), (2, 1), 2, "valid"),
    ((6, 6), (1, 1), (2, 2), (1, 1), 4, "valid"),
    ((5, 7), (5, 3), (1, 1), (1, 1), 1, "same"),
])
def test_conv2d_matches_direct_reference(size, kernel, strides, dilation, groups, padding):
    x = RNG.standard_normal((2,) + size + (4,)).astype("float32")
    layer = layers.Conv2D(8, kernel, strides=strides, padding=padding, dilation_rate=dilation, groups=groups)
    out = layer(x)
    k, b = layer.get_weights()
    assert k.shape == kernel + (4 // groups, 8)
    pads = [same_pads(n, kk, s, d) if padding == "same" else (0, 0)
            for n, kk, s, d in zip(size, kernel, strides, dilation)]
    expected = reference_conv(x.astype("float64"), k, strides, pads, dilation) + b
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert tuple(out.shape[1:]) == layer.compute_output_shape((None,) + size + (4,))[1:]


def test_same_padding_with_stride_puts_the_odd_cell_at_the_end():
    # Length 6, kernel 2, stride 2 needs no padding; kernel 3 needs 1 cell: TensorFlow puts it after.
    x = np.arange(6, dtype="float32").reshape(1, 6, 1)
    layer = layers.Conv1D(1, 3, strides=2, padding="same", use_bias=False)
    layer.build((None, 6, 1))
    layer.set_weights([np.array([1.0, 10.0, 100.0], dtype="float32").reshape(3, 1, 1)])
    np.testing.assert_allclose(layer(x)[0, :, 0], [0 + 10 + 200, 2 + 30 + 400, 4 + 50 + 0])


@pytest.mark.parametrize("padding,strides,dilation,groups", [
    ("valid", 1, 1, 1), ("same", 3, 1, 1), ("causal", 1, 2, 1), ("same", 1, 3, 2), ("causal", 2, 1, 2)])
def test_conv1d_matches_direct_reference(padding, strides, dilation, groups):
    x = RNG.standard_normal((3, 11, 4)).astype("float32")
    layer = layers.Conv1D(6, 3, strides=strides, padding=padding, dilation_rate=dilation, groups=groups,
                          activation="tanh")
    out = layer(x)
    k, b = layer.get_weights()
    if padding == "causal":
        pads = [(2 * dilation, 0)]
    elif padding == "same":
        pads = [same_pads(11, 3, strides, dilation)]
    else:
        pads = [(0, 0)]
    expected = np.tanh(reference_conv(x.astype("float64"), k, (strides,), pads, (dilation,)) + b)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    assert out.shape[1:] == layer.compute_output_shape((None, 11, 4))[1:]


@pytest.mark.parametrize("kernel,strides,padding,output_padding,dilation,expected_size", [
    (3, 2, "valid", None, 1, 11), (3, 2, "same", None, 1, 10), (4, 2, "same", None, 1, 10),
    (2, 3, "valid", None, 1, 15), (3, 3, "same", 1, 1, 14), (3, 2, "valid", 1, 1, 12), (3, 1, "same", None, 2, 5),
    (1, 2, "same", None, 1, 10),
])
def test_conv2d_transpose_matches_scatter_reference(kernel, strides, padding, output_padding, dilation,
                                                    expected_size):
    x = RNG.standard_normal((2, 5, 5, 3)).astype("float32")
    layer = layers.Conv2DTranspose(4, kernel, strides=strides, padding=padding, output_padding=output_padding,
                                   dilation_rate=dilation)
    out = layer(x)
    k, b = layer.get_weights()
    assert k.shape == (kernel, kernel, 4, 3)
    assert out.shape == (2, expected_size, expected_size, 4)
    assert layer.compute_output_shape((None, 5, 5, 3)) == (None, expected_size, expected_size, 4)
    expected = reference_conv_transpose(x.astype("float64"), k, (strides,) * 2, (dilation,) * 2, layer.crops()) + b
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_depthwise_conv2d_convolves_each_channel_with_its_own_filters():
    x = RNG.standard_normal((2, 7, 6, 3)).astype("float32")
    layer = layers.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)
    out = layer(x)
    kernel, bias = layer.get_weights()
    assert kernel.shape == (3, 3, 3, 2) and bias.shape == (6,)
    pads = [same_pads(7, 3, 2, 1), same_pads(6, 3, 2, 1)]
    for c in range(3):
        for m in range(2):
            expected = reference_conv(x[..., c:c + 1].astype("float64"), kernel[:, :, c:c + 1, m:m + 1], (2, 2),
                                      pads, (1, 1))[..., 0] + bias[c * 2 + m]
            np.testing.assert_allclose(out[..., c * 2 + m], expected, rtol=1e-4, atol=1e-5)


def test_separable_conv2d_is_depthwise_then_pointwise_with_keras_weight_order():
    x = RNG.standard_normal((2, 6, 6, 3)).astype("float32")
    layer = layers.SeparableConv2D(5, 3, depth_multiplier=2, padding="same", activation="relu")
    out = layer(x)
    assert [w.name for w in layer.weights] == ["depthwise_kernel", "pointwise_kernel", "bias"]
    depthwise, pointwise, bias = layer.get_weights()
    assert depthwise.shape == (3, 3, 3, 2) and pointwise.shape == (1, 1, 6, 5) and bias.shape == (5,)
    inner = ops.depthwise_conv(x.astype("float64"), depthwise, padding="same")
    expected = np.maximum(inner @ pointwise[0, 0] + bias, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_set_weights_with_keras_shaped_arrays():
    layer = layers.Conv2D(2, (2, 3), name="c")
    layer.build((None, 4, 5, 3))
    assert [w.path for w in layer.weights] == ["c/kernel", "c/bias"]
    kernel = np.zeros((2, 3, 3, 2), dtype="float32")
    kernel[1, 2, 0, 0] = 1.0  # filter 0 reads channel 0 at window offset (1, 2)
    kernel[0, 0, 2, 1] = -2.0  # filter 1 reads channel 2 at offset (0, 0)
    layer.set_weights([kernel, np.array([0.5, 0.0], dtype="float32")])
    x = RNG.standard_normal((1, 4, 5, 3)).astype("float32")
    out = layer(x)
    np.testing.assert_allclose(out[0, :, :, 0], x[0, 1:, 2:, 0] + 0.5, rtol=1e-6)
    np.testing.assert_allclose(out[0, :, :, 1], -2 * x[0, :3, :3, 2], rtol=1e-6)
    with pytest.raises(ValueError, match=r"weight shape \(2, 3, 3, 2\) is not compatible"):
        layer.set_weights([np.zeros((2, 2, 3, 3)), np.zeros(2)])


@pytest.mark.parametrize("make,shape", [
    (lambda: layers.Conv2D(3, (2, 3), strides=(2, 1), padding="same", groups=1), (2, 5, 4, 2)),
    (lambda: layers.Conv2D(4, 2, dilation_rate=2, groups=2, padding="same"), (1, 5, 5, 4)),
    (lambda: layers.Conv1D(2, 3, padding="causal", dilation_rate=2), (2, 7, 2)),
    (lambda: layers.Conv1D(2, 2, strides=3, padding="same"), (2, 8, 3)),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, padding="same"), (1, 3, 4, 2)),
    (lambda: layers.Conv2DTranspose(2, 2, strides=3, output_padding=1, dilation_rate=1), (1, 3, 3, 2)),
    (lambda: layers.DepthwiseConv2D(2, depth_multiplier=2, padding="same", strides=2), (1, 5, 4, 2)),
    (lambda: layers.SeparableConv2D(3, 2, depth_multiplier=2, dilation_rate=2), (1, 5, 5, 2)),
])
def test_conv_gradients_match_finite_differences(float64, make, shape):
    layer = make()
    x = np.random.default_rng(1).standard_normal(shape)
    layer(x)
    check_gradients(lambda xs: layer(xs[0]), [x])
    check_variable_gradients(lambda: layer(x), layer.trainable_weights)


def test_conv_regularizer_and_training_reduce_the_loss():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 8, 8, 1)).astype("float32")
    y = (x[:, 2:6, 2:6, 0].mean(axis=(1, 2)) > 0).astype("int64")
    inp = kgraph.Input((8, 8, 1))
    conv = layers.Conv2D(4, 3, activation="relu", kernel_regularizer="l2")
    h = layers.GlobalAveragePooling2D()(conv(inp))
    model = kgraph.Model(inp, layers.Dense(2, activation="softmax")(h))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    history = model.fit(x, y, epochs=15, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert len(model.losses) == 1


def test_symbolic_shapes_and_config_round_trip():
    x = kgraph.Input((None, 10, 3))
    assert layers.Conv2D(4, 3, strides=2, padding="same")(x).shape == (None, None, 5, 4)
    assert layers.Conv1D(4, 3, padding="causal")(kgraph.Input((None, 2))).shape == (None, None, 4)
    for layer in (layers.Conv2D(4, 3, strides=2, padding="same", groups=1, activation="relu"),
                  layers.Conv1D(2, 5, padding="causal", dilation_rate=2),
                  layers.Conv2DTranspose(3, 3, strides=2, output_padding=1),
                  layers.DepthwiseConv2D(3, depth_multiplier=3), layers.SeparableConv2D(4, 3, strides=2)):
        clone = type(layer).from_config(layer.get_config())
        assert clone.get_config() == layer.get_config()


@pytest.mark.parametrize("make,message", [
    (lambda: layers.Conv2D(0, 3), "Expected a strictly positive integer"),
    (lambda: layers.Conv2D(6, 3, groups=4), "evenly divisible by the number of groups"),
    (lambda: layers.Conv2D(4, 3, strides=2, dilation_rate=2), "not supported in conjunction"),
    (lambda: layers.Conv2D(4, 3, padding="causal"), "must be one of"),
    (lambda: layers.Conv2D(4, (3, 3, 3)), "tuple of 2 positive ints"),
    (lambda: layers.Conv2D(4, 3, data_format="channels_first"), "channels_last"),
    (lambda: layers.Conv2D(4, 3, lora_rank=2), "does not support `lora_rank`"),
    (lambda: layers.Conv2DTranspose(4, 3, strides=2, output_padding=2), "greater than output padding"),
])
def test_bad_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_name_the_layer():
    layer = layers.Conv2D(4, 3, groups=2, name="convy")
    with pytest.raises(ValueError, match="convy.*expected ndim=4, found ndim=3"):
        layer(np.zeros((1, 5, 5), dtype="float32"))
    with pytest.raises(ValueError, match="evenly divisible.*3 channels"):
        layer(np.zeros((1, 5, 5, 3), dtype="float32"))
    layer(np.zeros((1, 5, 5, 4), dtype="float32"))
    with pytest.raises(ValueError, match="convy.*expected axis -1 of input shape to have value 4"):
        layer(np.zeros((1, 5, 5, 2), dtype="float32"))
    with pytest.raises(ValueError, match="'small'.*output size would be negative"):
        layers.Conv2D(1, 5, name="small")(kgraph.Input((3, 3, 1)))
    with pytest.raises(ValueError, match="output would be empty"):
        ops.conv(np.zeros((1, 2, 2, 1)), np.zeros((3, 3, 1, 1)))


def test_conv_ops_match_torch():
    torch = pytest.importorskip("torch")
    f = torch.nn.functional
    x = RNG.standard_normal((2, 9, 8, 4))
    kernel = RNG.standard_normal((3, 3, 2, 6))
    pads = [same_pads(9, 3, 2, 1), same_pads(8, 3, 2, 1)]
    xt = torch.tensor(x, requires_grad=True)
    kt = torch.tensor(kernel, requires_grad=True)
    padded = f.pad(xt.permute(0, 3, 1, 2), (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    expected = f.conv2d(padded, kt.permute(3, 2, 0, 1), stride=2, groups=2).permute(0, 2, 3, 1)
    cotangent = RNG.standard_normal(tuple(expected.shape))
    (expected * torch.tensor(cotangent)).sum().backward()
    with kgraph.GradientTape() as tape:
        tape.watch([x, kernel])
        out = ops.conv(x, kernel, strides=2, padding="same")
    dx, dk = tape.gradient(out, [x, kernel], output_gradients=cotangent)
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dk, kt.grad.numpy(), rtol=1e-10, atol=1e-10)
    transposed = ops.conv_transpose(x, RNG.standard_normal((3, 3, 5, 4)), strides=2, padding="valid")
    assert transposed.shape == (2, 19, 17, 5)
    weight = RNG.standard_normal((4, 4, 5, 4))
    expected_t = f.conv_transpose2d(torch.tensor(x).permute(0, 3, 1, 2), torch.tensor(weight).permute(3, 2, 0, 1),
                                    stride=2, padding=1).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(ops.conv_transpose(x, weight, strides=2, padding="same"), expected_t,
                               rtol=1e-10, atol=1e-10)


def test_blocked_and_chunked_paths_match_and_have_correct_gradients(float64, monkeypatch):
    conv_module = importlib.import_module("kgraph.ops.conv")
    windows_module = importlib.import_module("kgraph.ops.kernels.windows")
    x = np.random.default_rng(3).standard_normal((5, 6, 5, 4))
    layer = layers.Conv2D(4, 3, padding="same", groups=2, activation="relu")
    whole = layer(x)
    # Tiny limits: several image blocks per op and one image per col2im chunk.
    monkeypatch.setattr(conv_module, "_BLOCK_BYTES", 1)
    monkeypatch.setattr(windows_module, "_CACHE_BYTES", 1)
    np.testing.assert_allclose(layer(x), whole, rtol=1e-12, atol=1e-12)
    check_gradients(lambda xs: layer(xs[0]), [x])
    check_variable_gradients(lambda: layer(x), layer.trainable_weights)


def test_concurrent_calls_from_threads_use_separate_scratch():
    rng = np.random.default_rng(4)
    jobs = [(rng.standard_normal((8, 12, 12, c)).astype("float32"),
             rng.standard_normal((3, 3, c, 8)).astype("float32")) for c in (3, 16, 16, 3)]
    expected = [ops.conv(x, k, padding="same", relu=True) for x, k in jobs]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            results = list(pool.map(lambda job: ops.conv(job[0], job[1], padding="same", relu=True), jobs))
            for got, want in zip(results, expected):
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tile", [4, 5, 6])
@pytest.mark.parametrize("size,padding", [((8, 8), "valid"), ((13, 11), "valid"), ((9, 6), "same"), ((5, 7), "same")])
def test_winograd_path_matches_direct_reference_and_finite_differences(float64, size, padding, tile, monkeypatch):
    winograd = importlib.import_module("kgraph.ops.kernels.winograd")
    monkeypatch.setattr(winograd, "TILES", (tile,))
    # Fixed weights whatever ran before: finite differences must not straddle a relu kink.
    kgraph.utils.set_random_seed(5)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2,) + size + (16,))
    layer = layers.Conv2D(16, 3, padding=padding, activation="relu")
    out = layer(x)
    kernel, bias = layer.get_weights()
    assert winograd.applicable((3, 3), (1, 1), (1, 1), 1, 16, 16, out.shape[1:3], out.dtype)
    pads = [same_pads(n, 3, 1, 1) if padding == "same" else (0, 0) for n in size]
    expected = np.maximum(reference_conv(x, kernel, (1, 1), pads, (1, 1)) + bias, 0)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)
    check_gradients(lambda xs: layer(xs[0]), [x[:1]])
    check_variable_gradients(lambda: layer(x[:1]), layer.trainable_weights)
    # Several image blocks give the same values and gradients as one.
    monkeypatch.setattr(importlib.import_module("kgraph.ops.conv"), "_BLOCK_BYTES", 1)
    np.testing.assert_allclose(layer(x), out, rtol=1e-12, atol=1e-12)
    check_gradients(lambda xs: layer(xs[0]), [x])


@pytest.mark.parametrize("tile", [4, 5, 6])
def test_winograd_transforms_compute_a_correlation_exactly(tile):
    # At (m x n), G (n x 3), Bt (n x n) with sum_j At[i, j] G[j, k] Bt[j, l] = [l == i + k]: the 1-D
    # F(m, 3) identity (the 2-D one is its square), checked in exact float64 arithmetic on small integers.
    winograd = importlib.import_module("kgraph.ops.kernels.winograd")
    bt, g, at = winograd._TRANSFORMS[tile]
    n = tile + 2
    identity = np.einsum("ij,jk,jl->ikl", at, g, bt)
    expected = np.zeros((tile, 3, n))
    for i, k in itertools.product(range(tile), range(3)):
        expected[i, k, i + k] = 1
    np.testing.assert_allclose(identity, expected, atol=1e-12)
    d = np.arange(1.0, n + 1)
    kern = np.array([2.0, -1.0, 3.0])
    np.testing.assert_allclose(at @ ((g @ kern) * (bt @ d)), np.correlate(d, kern, "valid"), rtol=1e-12)


def test_winograd_tile_choice_transforms_the_fewest_cells():
    winograd = importlib.import_module("kgraph.ops.kernels.winograd")
    assert winograd.choose_tile((8, 8)) == 4  # 4 tiles of 6x6 input cells vs 4 of 7x7 or 8x8
    assert winograd.choose_tile((10, 10)) == 5  # 4 x 49 cells vs 9 x 36 or 4 x 64
    assert winograd.choose_tile((12, 12)) == 4  # 9 x 36 cells vs 9 x 49 (F(6x6) is not a default tile)
    assert winograd.choose_tile((12, 12), sizes=(4, 5, 6)) == 6  # 4 x 64 cells
    assert winograd.choose_tile((224, 224)) == 5  # 45^2 x 49 cells vs 56^2 x 36


def _reference_float64(x, kernel):
    out = np.zeros(x.shape[:1] + (x.shape[1] - 2, x.shape[2] - 2, kernel.shape[-1]))
    for i, j in itertools.product(range(3), range(3)):
        out += x[:, i:i + out.shape[1], j:j + out.shape[2]].astype(np.float64) @ kernel[i, j].astype(np.float64)
    return out


@pytest.mark.parametrize("tile,bound", [(4, 3e-6), (5, 1e-5), (6, 2e-5)])
def test_winograd_float32_rounding_within_its_documented_bound(tile, bound, monkeypatch):
    # Against float64 on relu'd inputs and Glorot-scaled kernels (im2col in float32: about 5e-7 of the scale).
    monkeypatch.setattr(importlib.import_module("kgraph.ops.kernels.winograd"), "TILES", (tile,))
    rng = np.random.default_rng(7)
    for channels, side in ((32, 62), (128, 32)):
        x = np.maximum(rng.standard_normal((2, side, side, channels)), 0).astype("float32")
        limit = np.sqrt(3 / (9 * channels))
        kernel = rng.uniform(-limit, limit, (3, 3, channels, channels)).astype("float32")
        expected = _reference_float64(x, kernel)
        error = np.abs(np.asarray(ops.conv(x, kernel)) - expected).max() / np.abs(expected).max()
        assert error < bound, (channels, side, error)


@pytest.mark.parametrize("tile", [4, 5, 6])
def test_winograd_float32_stays_close_to_im2col(tile, monkeypatch):
    monkeypatch.setattr(importlib.import_module("kgraph.ops.kernels.winograd"), "TILES", (tile,))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 13, 13, 32)).astype("float32")
    kernel = rng.standard_normal((3, 3, 32, 64)).astype("float32")
    cotangent = rng.standard_normal((4, 11, 11, 64)).astype("float32")

    def run():
        with kgraph.GradientTape() as tape:
            tape.watch(x)
            tape.watch(kernel)
            out = ops.conv(x, kernel)
        return (out,) + tuple(tape.gradient(out, [x, kernel], output_gradients=cotangent))
    fast = run()
    winograd = importlib.import_module("kgraph.ops.kernels.winograd")
    monkeypatch.setattr(winograd, "MIN_CHANNELS", 10 ** 9)
    plain = run()
    for got, want in zip(fast, plain):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, atol=2e-5 * np.abs(want).max())
