"""Sparse crossentropy of probabilities (one recorded op) against the chain of ops it replaces."""
import numpy as np
import pytest

from kgraph import losses, ops
from kgraph.backend.autodiff import GradientTape
from kgraph.losses import functions
from tests.gradcheck import check_gradients


def _chain(labels, y_pred, axis):
    log_prob = functions._log_probabilities(y_pred, False, axis)
    picked = ops.take_along_axis(log_prob, np.expand_dims(labels, axis), axis=axis)
    return ops.negative(ops.squeeze(picked, axis))


def _value_and_gradient(loss_fn, labels, y_pred, axis):
    weights = np.arange(1, labels.size + 1, dtype=y_pred.dtype).reshape(labels.shape)
    with GradientTape() as tape:
        tape.watch(y_pred)
        loss = loss_fn(labels, y_pred, axis)
        total = ops.sum(loss * weights)
    return np.asarray(loss), tape.gradient(total, y_pred)


@pytest.mark.parametrize("compiled_loops", [False, True])
@pytest.mark.parametrize("shape,axis", [((6, 5), -1), ((6, 5), 1), ((3, 4, 5), 1), ((2, 3, 4), -1), ((64, 10), -1)])
def test_same_values_and_gradients_as_the_ops_chain(shape, axis, compiled_loops, monkeypatch):
    """The op against the chain of ops, with its (batch, classes) case's compiled loops where numba is installed
    (loaded here) and without them."""
    from kgraph.ops.kernels import compiled
    if compiled_loops:
        if compiled.kernels(1 << 30) is None:
            pytest.skip("numba is not installed")
    else:
        monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "0")
    rng = np.random.default_rng(0)
    y_pred = rng.random(shape).astype(np.float32) + 0.05
    labels_shape = list(shape)
    del labels_shape[axis]
    labels = rng.integers(0, shape[axis], size=labels_shape)
    # Some picked probabilities at and beyond the clip bounds: their gradient is cut as ops.clip cuts it.
    flat_pred = np.moveaxis(y_pred, axis, -1).reshape(-1, shape[axis])
    flat_labels = labels.reshape(-1)
    flat_pred[0] = 0.0
    flat_pred[0, flat_labels[0]] = 1.0
    flat_pred[1, flat_labels[1]] = 0.0
    flat_pred[2, (flat_labels[2] + 1) % shape[axis]] = np.nan  # a NaN in the row's sum: NaNs through, as the chain
    y_pred = np.moveaxis(flat_pred.reshape(np.moveaxis(y_pred, axis, -1).shape), -1, axis).copy()
    fused = _value_and_gradient(lambda t, p, a: losses.sparse_categorical_crossentropy(t, p, axis=a),
                                labels, y_pred, axis)
    chain = _value_and_gradient(_chain, labels, y_pred, axis)
    # The same float32 operations in the same order: equal, not just close.
    np.testing.assert_array_equal(fused[0], chain[0])
    np.testing.assert_array_equal(fused[1], chain[1])
    assert fused[1].dtype == np.float32


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    y_pred = rng.random((4, 3)) + 0.1
    labels = np.array([0, 2, 1, 2])
    check_gradients(lambda xs: losses.sparse_categorical_crossentropy(labels, xs[0]), [y_pred])


def test_compiled_loops_take_odd_cotangents_the_numpy_way(monkeypatch):
    """A cotangent of another dtype than the probabilities' goes through NumPy's operations, as without numba."""
    from kgraph.ops.kernels import compiled
    if compiled.kernels(1 << 30) is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(2)
    y_pred = rng.random((40, 7)).astype(np.float32) + 0.01
    labels = rng.integers(0, 7, size=40)
    g = rng.random(40)  # float64
    fn = functions._picked_crossentropy._kgraph_primitive.fn
    loss, vjp = fn(y_pred, labels, axis=-1, eps=1e-7)
    got = vjp(g)[0]
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "0")
    expected_loss, expected_vjp = fn(y_pred, labels, axis=-1, eps=1e-7)
    np.testing.assert_array_equal(loss, expected_loss, strict=True)
    np.testing.assert_array_equal(got, expected_vjp(g)[0], strict=True)
