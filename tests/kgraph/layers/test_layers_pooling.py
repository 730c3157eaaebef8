"""Pooling layers: values against direct NumPy references (and torch when installed), gradients, errors."""
import importlib
import itertools
import math

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers, ops
from tests.gradcheck import check_gradients


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


def reference_pool(x, pool, strides, padding, reduce):
    """Pool each window of real cells: "same" windows are clipped to the input (TensorFlow's semantics)."""
    spatial = x.shape[1:-1]
    if padding == "same":
        out_sizes = [math.ceil(n / s) for n, s in zip(spatial, strides)]
        befores = [max((o - 1) * s + k - n, 0) // 2 for o, s, k, n in zip(out_sizes, strides, pool, spatial)]
    else:
        out_sizes = [(n - k) // s + 1 for n, k, s in zip(spatial, pool, strides)]
        befores = [0] * len(spatial)
    out = np.zeros((x.shape[0],) + tuple(out_sizes) + (x.shape[-1],))
    for pos in itertools.product(*(range(o) for o in out_sizes)):
        window = tuple(slice(max(p * s - b, 0), min(p * s - b + k, n))
                       for p, s, b, k, n in zip(pos, strides, befores, pool, spatial))
        cells = x[(slice(None),) + window + (slice(None),)]
        out[(slice(None),) + pos] = reduce(cells.reshape(x.shape[0], -1, x.shape[-1]), axis=1)
    return out


RNG = np.random.default_rng(0)
CASES_2D = [((2, 2), None, "valid"), ((3, 3), (2, 2), "same"), ((2, 3), None, "same"), ((3, 2), (1, 1), "valid"),
            ((3, 3), (1, 2), "same"), ((2, 2), (3, 3), "valid")]


@pytest.mark.parametrize("pool,strides,padding", CASES_2D)
def test_pooling_2d_matches_reference(pool, strides, padding):
    x = RNG.standard_normal((2, 7, 8, 3)).astype("float32")
    for cls, reduce in ((layers.MaxPooling2D, np.max), (layers.AveragePooling2D, np.mean)):
        layer = cls(pool, strides=strides, padding=padding)
        out = layer(x)
        expected = reference_pool(x, pool, strides or pool, padding, reduce)
        np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)
        assert out.shape[1:] == layer.compute_output_shape((None, 7, 8, 3))[1:]


@pytest.mark.parametrize("pool,strides,padding", [(2, None, "valid"), (3, 2, "same"), (2, 1, "same"), (4, 3, "valid")])
def test_pooling_1d_matches_reference(pool, strides, padding):
    x = RNG.standard_normal((3, 11, 2)).astype("float32")
    for cls, reduce in ((layers.MaxPooling1D, np.max), (layers.AveragePooling1D, np.mean)):
        out = cls(pool, strides=strides, padding=padding)(x)
        np.testing.assert_allclose(out, reference_pool(x, (pool,), (strides or pool,), padding, reduce),
                                   rtol=1e-6, atol=1e-6)


def test_same_average_divides_by_real_cells_only():
    x = np.ones((1, 3, 3, 1), dtype="float32")
    np.testing.assert_allclose(layers.AveragePooling2D(2, strides=1, padding="same")(x), np.ones((1, 3, 3, 1)))
    x = np.arange(5, dtype="float32").reshape(1, 5, 1)
    # Windows [0 1] [2 3] [4 | pad]: the last averages its one real cell.
    np.testing.assert_allclose(layers.AveragePooling1D(2, padding="same")(x)[0, :, 0], [0.5, 2.5, 4.0])


def test_same_max_pooling_never_picks_the_padding():
    x = -np.ones((1, 3, 3, 1), dtype="float32")
    np.testing.assert_allclose(layers.MaxPooling2D(2, strides=2, padding="same")(x), -np.ones((1, 2, 2, 1)))


@pytest.mark.parametrize("pool,strides,padding", CASES_2D)
def test_pooling_gradients_match_finite_differences(float64, pool, strides, padding):
    # A permutation of spaced values: no ties within eps, so max pooling is differentiable.
    x = RNG.permutation(2 * 5 * 6 * 2).reshape(2, 5, 6, 2) * 0.1
    check_gradients(lambda xs: ops.max_pool(xs[0], pool, strides, padding), [x], atol=1e-6)
    check_gradients(lambda xs: ops.average_pool(xs[0], pool, strides, padding), [x], atol=1e-6)


def test_max_pooling_routes_tied_gradients_to_the_first_maximum():
    x = np.array([[1.0, 3.0], [3.0, 2.0]]).reshape(1, 2, 2, 1)
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        out = ops.max_pool(x, 2)
    np.testing.assert_array_equal(tape.gradient(out, x).reshape(2, 2), [[0.0, 1.0], [0.0, 0.0]])
    x = np.array([[5.0, 5.0, 5.0]]).reshape(1, 3, 1)
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        out = ops.max_pool(x, 2, strides=1)
    # Overlapping windows both pick their first maximum: cells 0 and 1.
    np.testing.assert_array_equal(tape.gradient(out, x).ravel(), [1.0, 1.0, 0.0])


@pytest.mark.parametrize("keepdims", [False, True])
def test_global_pooling(float64, keepdims):
    x = RNG.permutation(2 * 4 * 5 * 3).reshape(2, 4, 5, 3) * 0.1
    cases = [(layers.GlobalAveragePooling2D, np.mean, x, (1, 2)), (layers.GlobalMaxPooling2D, np.max, x, (1, 2)),
             (layers.GlobalAveragePooling1D, np.mean, x[:, 0], (1,)),
             (layers.GlobalMaxPooling1D, np.max, x[:, 0], (1,))]
    for cls, reduce, data, axes in cases:
        layer = cls(keepdims=keepdims)
        out = layer(data)
        np.testing.assert_allclose(out, reduce(data, axis=axes, keepdims=keepdims))
        assert out.shape[1:] == layer.compute_output_shape((None,) + data.shape[1:])[1:]
        check_gradients(lambda xs, layer=layer: layer(xs[0]), [data])


def test_symbolic_shapes_and_config_round_trip():
    x = kgraph.Input((None, 9, 4))
    assert layers.MaxPooling2D(3, strides=2, padding="same")(x).shape == (None, None, 5, 4)
    assert layers.AveragePooling2D()(x).shape == (None, None, 4, 4)
    assert layers.GlobalMaxPooling2D(keepdims=True)(x).shape == (None, 1, 1, 4)
    for layer in (layers.MaxPooling2D(3, strides=2, padding="same"), layers.AveragePooling1D(4),
                  layers.GlobalAveragePooling2D(keepdims=True)):
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
    assert layers.MaxPooling2D(3).strides == (3, 3)


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="must be one of"):
        layers.MaxPooling2D(padding="causal")
    with pytest.raises(ValueError, match="pool_size"):
        layers.AveragePooling2D((2, 0))
    with pytest.raises(ValueError, match="channels_last"):
        layers.GlobalAveragePooling2D(data_format="channels_first")
    with pytest.raises(ValueError, match="pooly.*expected ndim=4, found ndim=3"):
        layers.MaxPooling2D(name="pooly")(np.zeros((1, 4, 4), dtype="float32"))
    with pytest.raises(ValueError, match="'big'.*output size would be negative"):
        layers.MaxPooling2D(5, name="big")(kgraph.Input((3, 3, 1)))
    with pytest.raises(ValueError, match="larger than the input"):
        ops.average_pool(np.zeros((1, 3, 3, 1)), 4)


def test_pooling_matches_torch():
    torch = pytest.importorskip("torch")
    f = torch.nn.functional
    x = RNG.standard_normal((2, 8, 9, 3))
    xt = torch.tensor(x, requires_grad=True)
    expected = f.max_pool2d(xt.permute(0, 3, 1, 2), 3, stride=2).permute(0, 2, 3, 1)
    cotangent = RNG.standard_normal(tuple(expected.shape))
    (expected * torch.tensor(cotangent)).sum().backward()
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        out = ops.max_pool(x, 3, strides=2)
    np.testing.assert_allclose(out, expected.detach().numpy())
    np.testing.assert_allclose(tape.gradient(out, x, output_gradients=cotangent), xt.grad.numpy(), atol=1e-12)
    expected = f.avg_pool2d(torch.tensor(x).permute(0, 3, 1, 2), (2, 3), stride=(1, 2)).permute(0, 2, 3, 1)
    np.testing.assert_allclose(ops.average_pool(x, (2, 3), (1, 2)), expected.numpy(), atol=1e-12)


def test_blocked_max_pooling_gradient_matches(float64, monkeypatch):
    x = RNG.permutation(4 * 6 * 6 * 2).reshape(4, 6, 6, 2) * 0.1
    cotangent = RNG.standard_normal((4, 3, 3, 2))

    def gradient():
        with kgraph.GradientTape() as tape:
            tape.watch(x)
            out = ops.max_pool(x, 2)
        return tape.gradient(out, x, output_gradients=cotangent)
    whole = gradient()
    monkeypatch.setattr(importlib.import_module("kgraph.ops.pooling"), "_BLOCK_BYTES", 1)
    np.testing.assert_array_equal(gradient(), whole)
    check_gradients(lambda xs: ops.max_pool(xs[0], 3, strides=2, padding="same"), [x[:2]])


@pytest.mark.parametrize("pool,strides,padding", [((2, 2), (2, 2), "valid"), ((3, 2), (3, 3), "valid"),
                                                  ((2, 3), (3, 4), "valid"), ((3, 3), (3, 3), "same"),
                                                  ((2, 2), (2, 2), "same")])
def test_non_overlapping_max_pooling_routes_ties_like_a_row_major_scan(float64, pool, strides, padding):
    # Few distinct values: most windows hold several maxima. The reference scans each window in row-major
    # order and keeps the first maximum, as TensorFlow and PyTorch do.
    x = RNG.integers(0, 3, size=(2, 7, 8, 3)).astype("float64")
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        out = ops.max_pool(x, pool, strides, padding)
    cotangent = RNG.standard_normal(out.shape)
    got = tape.gradient(out, x, output_gradients=cotangent)
    pads = [(max((o - 1) * s + k - n, 0) // 2) for o, s, k, n in zip(out.shape[1:3], strides, pool, x.shape[1:3])]
    expected = np.zeros_like(x)
    for b, i, j, c in np.ndindex(out.shape):
        best = None
        for di, dj in np.ndindex(pool):
            r, q = i * strides[0] + di - pads[0], j * strides[1] + dj - pads[1]
            if 0 <= r < x.shape[1] and 0 <= q < x.shape[2] and (best is None or x[b, r, q, c] > x[b][best][c]):
                best = (r, q)
        assert x[b][best][c] == out[b, i, j, c]
        expected[b][best][c] += cotangent[b, i, j, c]
    np.testing.assert_array_equal(got, expected)
