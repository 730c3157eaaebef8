"""The reductions a training step runs (sum, mean, softmax's max and sums, the crossentropy's label checks) call
the ufuncs' ``reduce`` directly, without NumPy's Python wrappers: the same values, dtypes and types as NumPy's
``np.sum`` / ``np.mean`` / ``np.max``, bit for bit, and the same gradients."""
import numpy as np
import pytest

from kgraph import losses, ops
from kgraph.backend.autodiff import GradientTape
from kgraph.ops import reductions

RNG = np.random.default_rng(7)
DTYPES = [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint8, np.bool_]
SHAPES = [(), (7,), (3, 5), (4, 1, 6), (2, 3, 4, 5), (1000, 3), (3, 1000)]


def _axes(ndim):
    if ndim == 0:
        return [None]
    return [None, -1, *range(ndim)] + ([(0, ndim - 1)] if ndim > 1 else [])


def _cases():
    for dtype in DTYPES:
        for shape in SHAPES:
            for axis in _axes(len(shape)):
                yield dtype, shape, axis


def _same(a, b):
    assert type(a) is type(b)
    assert a.dtype == b.dtype and np.shape(a) == np.shape(b)
    np.testing.assert_array_equal(a, b, strict=True)


@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_and_mean_equal_numpys_bit_for_bit(keepdims):
    count = 0
    for dtype, shape, axis in _cases():
        x = (RNG.standard_normal(shape) * 100).astype(dtype)
        _same(ops.sum(x, axis=axis, keepdims=keepdims), np.asarray(np.sum(x, axis=axis, keepdims=keepdims)))
        _same(ops.mean(x, axis=axis, keepdims=keepdims), np.asarray(np.mean(x, axis=axis, keepdims=keepdims)))
        count += 1
    assert count > 200


def test_mean_of_an_empty_axis_warns_as_numpys():
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        out = ops.mean(np.zeros((0, 3), np.float32), axis=0)
    assert np.isnan(out).all() and out.dtype == np.float32


@pytest.mark.parametrize("shape,axis", [((5,), None), ((4, 3), 1), ((4, 3), None), ((64, 100), None),
                                         ((2, 4096), 0), ((3, 2000), None)])
@pytest.mark.parametrize("reduce", [ops.sum, ops.mean])
def test_reduction_gradients_equal_the_broadcast_cotangent(reduce, shape, axis):
    """Small inputs get their cotangent written out, large ones a broadcast view: the same values either way."""
    x = RNG.standard_normal(shape).astype(np.float32)
    g = RNG.standard_normal(np.shape(np.sum(x, axis=axis))).astype(np.float32)
    with GradientTape() as tape:
        tape.watch(x)
        y = reduce(x, axis=axis)
    (d_x,) = tape.gradient(y, [x], output_gradients=g)
    kept = np.sum(x, axis=axis, keepdims=True).shape
    scale = 1 if reduce is ops.sum else x.size // int(np.prod(kept))
    expected = np.broadcast_to(g.reshape(kept) if reduce is ops.sum else g.reshape(kept) / scale, shape)
    _same(np.asarray(d_x), np.asarray(expected))


@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_and_its_gradient_equal_the_numpy_formula(axis, dtype):
    x = RNG.standard_normal((6, 5)).astype(dtype) * 4
    g = RNG.standard_normal((6, 5)).astype(dtype)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    expected = e / np.sum(e, axis=axis, keepdims=True)
    with GradientTape() as tape:
        tape.watch(x)
        out = ops.softmax(x, axis=axis)
    (d_x,) = tape.gradient(out, [x], output_gradients=g)
    _same(np.asarray(out), expected)
    _same(np.asarray(d_x), expected * (g - np.sum(g * expected, axis=axis, keepdims=True)))


def test_crossentropy_still_names_labels_out_of_range():
    probabilities = np.full((3, 4), 0.25, np.float32)
    with pytest.raises(ValueError, match=r"labels in \[0, 4\).*from 0 to 4"):
        losses.sparse_categorical_crossentropy(np.array([0, 4, 1]), probabilities)
    with pytest.raises(ValueError, match=r"from -1 to 2"):
        losses.sparse_categorical_crossentropy(np.array([2, -1, 1]), probabilities)
    out = losses.sparse_categorical_crossentropy(np.array([0, 3, 1]), probabilities)
    np.testing.assert_allclose(out, -np.log(0.25), rtol=1e-6)


def test_spread_threshold_sits_between_the_tested_sizes():
    assert 3 * 5 < reductions._SPREAD_WRITTEN < 2 * 4096
