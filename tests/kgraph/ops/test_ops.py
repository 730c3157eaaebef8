"""Forward values against NumPy and gradients against finite differences for every op."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import kgraph
from kgraph import ops
from kgraph.backend.autodiff import GradientTape
from tests.gradcheck import check_gradients

_erf = np.vectorize(math.erf)


def _inputs(specs, seed=0, dtype=np.float64):
    """Random inputs from specs: a shape (standard normal) or ("pos", shape) (in [0.5, 2])."""
    rng = np.random.default_rng(seed)
    xs = []
    for spec in specs:
        if isinstance(spec, tuple) and spec and spec[0] == "pos":
            xs.append(rng.uniform(0.5, 2.0, spec[1]).astype(dtype))
        else:
            xs.append(rng.standard_normal(spec).astype(dtype))
    return xs


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_MASK = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
_IDX = np.array([[2, 0], [2, 1]])

# (id, op applied to the inputs, NumPy reference, input specs)
CASES = [
    # elementwise arithmetic, with broadcasting
    ("add", ops.add, np.add, [(3, 4), (4,)]),
    ("add_column", ops.add, np.add, [(3, 1), (1, 4)]),
    ("add_scalar", lambda a: ops.add(a, 2.0), lambda a: a + 2.0, [(3,)]),
    ("subtract", ops.subtract, np.subtract, [(2, 3), (2, 1)]),
    ("rsubtract_scalar", lambda a: ops.subtract(1.0, a), lambda a: 1.0 - a, [(3,)]),
    ("multiply", ops.multiply, np.multiply, [(3, 1), (1, 4)]),
    ("divide", ops.divide, np.divide, [(3, 4), ("pos", (4,))]),
    ("negative", ops.negative, np.negative, [(2, 3)]),
    ("power", ops.power, np.power, [("pos", (3, 4)), (3, 4)]),
    ("power_int", lambda a: ops.power(a, 3), lambda a: a**3, [(5,)]),
    ("square", ops.square, np.square, [(2, 3)]),
    ("sqrt", ops.sqrt, np.sqrt, [("pos", (2, 3))]),
    ("rsqrt", ops.rsqrt, lambda a: 1 / np.sqrt(a), [("pos", (2, 3))]),
    ("reciprocal", ops.reciprocal, np.reciprocal, [("pos", (2, 3))]),
    ("exp", ops.exp, np.exp, [(2, 3)]),
    ("expm1", ops.expm1, np.expm1, [(2, 3)]),
    ("log", ops.log, np.log, [("pos", (2, 3))]),
    ("log1p", ops.log1p, np.log1p, [("pos", (2, 3))]),
    ("abs", ops.abs, np.abs, [(2, 3)]),
    ("tanh", ops.tanh, np.tanh, [(2, 3)]),
    ("sin", ops.sin, np.sin, [(2, 3)]),
    ("cos", ops.cos, np.cos, [(2, 3)]),
    ("erf", ops.erf, _erf, [(2, 3)]),
    ("maximum", ops.maximum, np.maximum, [(3, 4), (4,)]),
    ("minimum", ops.minimum, np.minimum, [(3, 4), (3, 1)]),
    ("where", lambda a, b: ops.where(_MASK, a, b), lambda a, b: np.where(_MASK, a, b), [(3, 4), (4,)]),
    ("clip", lambda a: ops.clip(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), [(4, 5)]),
    ("clip_tensor_bounds", lambda a, lo: ops.clip(a, lo, 0.7), lambda a, lo: np.clip(a, lo, 0.7), [(4, 5), (5,)]),
    # linear algebra
    ("matmul", ops.matmul, np.matmul, [(3, 4), (4, 5)]),
    ("matmul_batch_2d", ops.matmul, np.matmul, [(2, 3, 4), (4, 5)]),
    ("matmul_2d_batch", ops.matmul, np.matmul, [(3, 4), (2, 4, 5)]),
    ("matmul_broadcast", ops.matmul, np.matmul, [(2, 1, 3, 4), (5, 4, 2)]),
    ("matmul_vec_mat", ops.matmul, np.matmul, [(4,), (2, 4, 5)]),
    ("matmul_mat_vec", ops.matmul, np.matmul, [(2, 3, 4), (4,)]),
    ("matmul_vec_vec", ops.matmul, np.matmul, [(4,), (4,)]),
    ("einsum_matmul", lambda a, b: ops.einsum("ij,jk->ik", a, b), lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("einsum_batch", lambda a, b: ops.einsum("bij,bjk->bik", a, b), np.matmul, [(2, 3, 4), (2, 4, 2)]),
    ("einsum_implicit", lambda a, b: ops.einsum("ij,jk", a, b), lambda a, b: a @ b, [(3, 4), (4, 2)]),
    ("einsum_ellipsis", lambda a, b: ops.einsum("...ij,...jk->...ik", a, b), np.matmul, [(2, 3, 4), (2, 4, 2)]),
    ("einsum_outer", lambda a, b: ops.einsum("i,j->ij", a, b), np.outer, [(3,), (4,)]),
    ("einsum_transpose_sum", lambda a: ops.einsum("ijk->kj", a), lambda a: a.sum(0).T, [(2, 3, 4)]),
    ("einsum_own_sums", lambda a, b: ops.einsum("ij,k->i", a, b), lambda a, b: a.sum(1) * b.sum(), [(3, 4), (5,)]),
    ("einsum_diag", lambda a: ops.einsum("ii->i", a), np.diag, [(4, 4)]),
    ("einsum_trace", lambda a: ops.einsum("ii", a), np.trace, [(4, 4)]),
    ("einsum_three", lambda a, b, c: ops.einsum("ij,jk,kl->il", a, b, c), lambda a, b, c: a @ b @ c,
     [(2, 3), (3, 4), (4, 2)]),
    ("einsum_fan_in", lambda a: ops.einsum("ij,ij->i", a, a), lambda a: (a * a).sum(1), [(3, 4)]),
    # reductions
    ("sum", ops.sum, np.sum, [(3, 4)]),
    ("sum_axis", lambda a: ops.sum(a, axis=1), lambda a: a.sum(1), [(3, 4)]),
    ("sum_axes_keepdims", lambda a: ops.sum(a, axis=(0, 2), keepdims=True),
     lambda a: a.sum((0, 2), keepdims=True), [(2, 3, 4)]),
    ("sum_axis_list", lambda a: ops.sum(a, axis=[0, 1]), lambda a: a.sum((0, 1)), [(2, 3, 2)]),
    ("mean", ops.mean, np.mean, [(3, 4)]),
    ("mean_axis", lambda a: ops.mean(a, axis=-1, keepdims=True), lambda a: a.mean(-1, keepdims=True), [(3, 4)]),
    ("max", ops.max, np.max, [(3, 4)]),
    ("max_axis", lambda a: ops.max(a, axis=0), lambda a: a.max(0), [(3, 4)]),
    ("min_axis", lambda a: ops.min(a, axis=1, keepdims=True), lambda a: a.min(1, keepdims=True), [(3, 4)]),
    ("var", lambda a: ops.var(a, axis=1), lambda a: a.var(1), [(3, 4)]),
    ("var_all", ops.var, np.var, [(3, 4)]),
    ("std", lambda a: ops.std(a, axis=0, keepdims=True), lambda a: a.std(0, keepdims=True), [(3, 4)]),
    ("prod", lambda a: ops.prod(a, axis=1), lambda a: a.prod(1), [(3, 4)]),
    ("prod_all", ops.prod, np.prod, [(2, 3)]),
    ("prod_axes", lambda a: ops.prod(a, axis=(0, 2), keepdims=True), lambda a: a.prod((0, 2), keepdims=True),
     [(2, 3, 2)]),
    ("logsumexp", lambda a: ops.logsumexp(a, axis=1), lambda a: np.log(np.exp(a).sum(1)), [(3, 4)]),
    ("logsumexp_all", ops.logsumexp, lambda a: np.log(np.exp(a).sum()), [(3, 4)]),
    ("cumsum", lambda a: ops.cumsum(a, axis=1), lambda a: np.cumsum(a, 1), [(3, 4)]),
    ("cumsum_flat", ops.cumsum, np.cumsum, [(3, 4)]),
    # shape
    ("reshape", lambda a: ops.reshape(a, (4, -1)), lambda a: a.reshape(4, -1), [(2, 3, 2)]),
    ("ravel", ops.ravel, np.ravel, [(2, 3)]),
    ("transpose", ops.transpose, np.transpose, [(2, 3, 4)]),
    ("transpose_axes", lambda a: ops.transpose(a, (1, 2, 0)), lambda a: a.transpose(1, 2, 0), [(2, 3, 4)]),
    ("expand_dims", lambda a: ops.expand_dims(a, 1), lambda a: a[:, None], [(2, 3)]),
    ("squeeze", lambda a: ops.squeeze(a, axis=1), lambda a: a[:, 0], [(2, 1, 3)]),
    ("swapaxes", lambda a: ops.swapaxes(a, 0, 2), lambda a: a.swapaxes(0, 2), [(2, 3, 4)]),
    ("moveaxis", lambda a: ops.moveaxis(a, 0, -1), lambda a: np.moveaxis(a, 0, -1), [(2, 3, 4)]),
    ("broadcast_to", lambda a: ops.broadcast_to(a, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)), [(3, 1)]),
    ("flip", lambda a: ops.flip(a, axis=1), lambda a: a[:, ::-1], [(2, 3)]),
    ("roll", lambda a: ops.roll(a, 2, axis=1), lambda a: np.roll(a, 2, 1), [(2, 5)]),
    ("concatenate", lambda a, b: ops.concatenate([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1),
     [(2, 3), (2, 2)]),
    ("concatenate_flat", lambda a, b: ops.concatenate([a, b], axis=None),
     lambda a, b: np.concatenate([a, b], None), [(2, 3), (4,)]),
    ("stack", lambda a, b: ops.stack([a, b]), lambda a, b: np.stack([a, b]), [(2, 3), (2, 3)]),
    ("stack_last", lambda a, b: ops.stack((a, b), axis=-1), lambda a, b: np.stack([a, b], -1), [(2, 3), (2, 3)]),
    ("split", lambda a: ops.concatenate([ops.multiply(p, i + 1) for i, p in enumerate(ops.split(a, 3, axis=1))], axis=0),
     lambda a: np.concatenate([p * (i + 1) for i, p in enumerate(np.split(a, 3, 1))], 0), [(2, 6)]),
    ("split_partly_used", lambda a: ops.split(a, [1, 3])[1], lambda a: a[1:3], [(5, 2)]),
    ("unstack", lambda a: ops.multiply(ops.unstack(a, axis=1)[0], ops.unstack(a, axis=1)[2]),
     lambda a: a[:, 0] * a[:, 2], [(2, 3)]),
    ("take", lambda a: ops.take(a, np.array([2, 0, 2, -1]), axis=0), lambda a: a[[2, 0, 2, -1]], [(3, 2)]),
    ("take_axis1", lambda a: ops.take(a, _IDX, axis=1), lambda a: np.take(a, _IDX, 1), [(2, 3, 2)]),
    ("take_flat", lambda a: ops.take(a, _IDX), lambda a: np.take(a, _IDX), [(2, 3)]),
    ("take_along_axis", lambda a: ops.take_along_axis(a, np.array([[0, 2, 2], [1, 1, 0]]), axis=1),
     lambda a: np.take_along_axis(a, np.array([[0, 2, 2], [1, 1, 0]]), 1), [(2, 3)]),
    ("take_along_axis_bcast", lambda a: ops.take_along_axis(a, np.array([[2], [0]]), axis=1),
     lambda a: np.take_along_axis(a, np.array([[2], [0]]), 1), [(2, 3)]),
    ("take_along_axis_flat", lambda a: ops.take_along_axis(a, np.array([5, 0, 5])),
     lambda a: np.take_along_axis(a, np.array([5, 0, 5]), None), [(2, 3)]),
    ("getitem_slice", lambda a: ops.getitem(a, (slice(None), slice(1, None, 2))), lambda a: a[:, 1::2], [(2, 5)]),
    ("getitem_int", lambda a: ops.getitem(a, 1), lambda a: a[1], [(3, 2)]),
    ("getitem_scalar", lambda a: ops.getitem(a, (1, -1)), lambda a: a[1, -1], [(3, 2)]),
    ("getitem_newaxis_ellipsis", lambda a: ops.getitem(a, (None, Ellipsis, 0)), lambda a: a[None, ..., 0],
     [(2, 3, 2)]),
    ("getitem_reverse", lambda a: ops.getitem(a, slice(None, None, -1)), lambda a: a[::-1], [(4,)]),
    ("getitem_advanced", lambda a: ops.getitem(a, [0, 2, 0]), lambda a: a[[0, 2, 0]], [(3, 2)]),
    ("getitem_mixed", lambda a: ops.getitem(a, (np.array([1, 1, 0]), slice(0, 2))), lambda a: a[[1, 1, 0], 0:2],
     [(3, 3)]),
    ("getitem_mask", lambda a: ops.getitem(a, _MASK), lambda a: a[_MASK], [(3, 4)]),
    ("tile", lambda a: ops.tile(a, (2, 3)), lambda a: np.tile(a, (2, 3)), [(2, 3)]),
    ("tile_promote", lambda a: ops.tile(a, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2)), [(3,)]),
    ("repeat", lambda a: ops.repeat(a, 2, axis=1), lambda a: np.repeat(a, 2, 1), [(2, 3)]),
    ("repeat_counts", lambda a: ops.repeat(a, [1, 0, 3], axis=0), lambda a: np.repeat(a, [1, 0, 3], 0), [(3, 2)]),
    ("repeat_flat", lambda a: ops.repeat(a, 2), lambda a: np.repeat(a, 2), [(2, 2)]),
    ("pad_constant", lambda a: ops.pad(a, ((1, 0), (2, 1)), constant_values=3.0),
     lambda a: np.pad(a, ((1, 0), (2, 1)), constant_values=3.0), [(2, 3)]),
    ("pad_int", lambda a: ops.pad(a, 1), lambda a: np.pad(a, 1), [(2, 3)]),
    ("pad_edge", lambda a: ops.pad(a, ((1, 2), (0, 2)), mode="edge"),
     lambda a: np.pad(a, ((1, 2), (0, 2)), mode="edge"), [(2, 3)]),
    ("pad_reflect", lambda a: ops.pad(a, (2, 1), mode="reflect"), lambda a: np.pad(a, (2, 1), mode="reflect"),
     [(3, 4)]),
    ("pad_symmetric", lambda a: ops.pad(a, 2, mode="symmetric"), lambda a: np.pad(a, 2, mode="symmetric"),
     [(3, 4)]),
    ("pad_wrap", lambda a: ops.pad(a, ((0, 0), (3, 1)), mode="wrap"),
     lambda a: np.pad(a, ((0, 0), (3, 1)), mode="wrap"), [(2, 3)]),
    # nn
    ("relu", ops.relu, lambda a: np.maximum(a, 0), [(3, 4)]),
    ("relu6", lambda a: ops.relu6(ops.multiply(a, 5)), lambda a: np.clip(a * 5, 0, 6), [(3, 4)]),
    ("sigmoid", ops.sigmoid, _sigmoid, [(3, 4)]),
    ("softplus", ops.softplus, lambda a: np.log1p(np.exp(a)), [(3, 4)]),
    ("log_sigmoid", ops.log_sigmoid, lambda a: np.log(_sigmoid(a)), [(3, 4)]),
    ("softsign", ops.softsign, lambda a: a / (1 + np.abs(a)), [(3, 4)]),
    ("silu", ops.silu, lambda a: a * _sigmoid(a), [(3, 4)]),
    ("leaky_relu", ops.leaky_relu, lambda a: np.where(a >= 0, a, 0.2 * a), [(3, 4)]),
    ("leaky_relu_slope", lambda a: ops.leaky_relu(a, negative_slope=0.01), lambda a: np.where(a >= 0, a, 0.01 * a),
     [(3, 4)]),
    ("elu", lambda a: ops.elu(a, alpha=1.5), lambda a: np.where(a > 0, a, 1.5 * (np.exp(a) - 1)), [(3, 4)]),
    ("selu", ops.selu, lambda a: 1.0507009873554805 * np.where(a > 0, a, 1.6732632423543772 * (np.exp(a) - 1)),
     [(3, 4)]),
    ("gelu_tanh", ops.gelu,
     lambda a: 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a**3))), [(3, 4)]),
    ("gelu_exact", lambda a: ops.gelu(a, approximate=False), lambda a: 0.5 * a * (1 + _erf(a / np.sqrt(2))),
     [(3, 4)]),
    ("hard_sigmoid", lambda a: ops.hard_sigmoid(ops.multiply(a, 4)), lambda a: np.clip(a * 4 + 3, 0, 6) / 6, [(3, 4)]),
    ("hard_silu", lambda a: ops.hard_silu(ops.multiply(a, 4)), lambda a: a * 4 * np.clip(a * 4 + 3, 0, 6) / 6, [(3, 4)]),
    ("softmax", ops.softmax, _softmax, [(3, 4)]),
    ("softmax_axis0", lambda a: ops.softmax(a, axis=0), lambda a: _softmax(a, 0), [(3, 4)]),
    ("softmax_axes", lambda a: ops.softmax(a, axis=(1, 2)), lambda a: _softmax(a, (1, 2)), [(2, 2, 3)]),
    ("log_softmax", ops.log_softmax, lambda a: np.log(_softmax(a)), [(3, 4)]),
    ("moments", lambda a: ops.add(*ops.moments(a, axes=(0,))),
     lambda a: a.mean(0) + a.var(0), [(4, 3)]),
    ("moments_keepdims", lambda a: ops.multiply(*ops.moments(a, axes=-1, keepdims=True)),
     lambda a: a.mean(-1, keepdims=True) * a.var(-1, keepdims=True), [(2, 5)]),
    ("moments_mean_only", lambda a: ops.moments(a, axes=(0, 1))[0], lambda a: a.mean((0, 1)), [(2, 3)]),
    ("dense", ops.dense, lambda x, k, b: x @ k + b, [(4, 3), (3, 2), (2,)]),
    ("dense_3d", ops.dense, lambda x, k, b: x @ k + b, [(2, 3, 3), (3, 2), (2,)]),
    ("dense_1d", ops.dense, lambda x, k, b: x @ k + b, [(3,), (3, 2), (2,)]),
    ("dense_no_bias", ops.dense, np.matmul, [(4, 3), (3, 2)]),
]

_IDS = [c[0] for c in CASES]


@pytest.mark.parametrize("name,op,ref,specs", CASES, ids=_IDS)
def test_forward_matches_numpy(name, op, ref, specs):
    xs = _inputs(specs)
    out = op(*xs)
    assert type(out) is np.ndarray
    assert all(out is not x for x in xs)
    np.testing.assert_allclose(out, ref(*xs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,op,ref,specs", CASES, ids=_IDS)
def test_gradient_matches_finite_differences(name, op, ref, specs):
    check_gradients(lambda xs: op(*xs), _inputs(specs, seed=1))


@pytest.mark.parametrize("name,op,ref,specs", CASES, ids=_IDS)
def test_float32_stays_float32(name, op, ref, specs):
    xs = _inputs(specs, seed=2, dtype=np.float32)
    with GradientTape() as tape:
        tape.watch(xs)
        out = op(*xs)
    assert out.dtype == np.float32
    grads = tape.gradient(out, xs, unconnected_gradients="zero")
    for x, g in zip(xs, grads):
        assert g.dtype == np.float32 and g.shape == x.shape


@pytest.mark.parametrize("name,op,ref,specs", CASES, ids=_IDS)
def test_vjps_compute_in_float32(name, op, ref, specs):
    # The tape casts cotangents back to the input dtype; a VJP that upcasts to
    # float64 would be correct but slow, so check the VJPs themselves.
    xs = _inputs(specs, seed=2, dtype=np.float32)
    with GradientTape() as tape:
        tape.watch(xs)
        op(*xs)
    for out, inputs, vjp, _, _ in tape._records:
        g = tuple(np.ones_like(o) for o in out) if type(out) is tuple else np.ones_like(out)
        cts = vjp(g)
        for a, ct in zip(inputs, cts if isinstance(cts, (tuple, list)) else (cts,)):
            ct = ct() if callable(ct) else ct
            if ct is not None and isinstance(a, np.ndarray) and a.dtype == np.float32:
                assert np.asarray(ct).dtype == np.float32


@pytest.mark.parametrize(
    "reduce", [ops.sum, ops.mean, ops.max, ops.min, ops.var, ops.std, ops.prod, ops.logsumexp]
)
def test_reductions_return_0d_arrays(reduce):
    out = reduce(np.arange(1.0, 4.0))
    assert type(out) is np.ndarray and out.shape == ()


def test_elementwise_ops_of_0d_arrays_return_arrays():
    x = np.array(0.5)
    for op in (ops.exp, ops.sigmoid, ops.tanh, lambda a: ops.add(a, a)):
        assert type(op(x)) is np.ndarray


def test_ops_never_return_their_input():
    x = np.ones((2, 3))
    assert ops.reshape(x, (2, 3)) is not x
    assert ops.cast(x, "float64") is not x
    assert ops.transpose(ops.transpose(x)) is not x
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.squeeze(x)
    assert y is not x
    np.testing.assert_array_equal(tape.gradient(y, x), np.ones((2, 3)))


def test_max_ties_split_the_gradient_evenly():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.max(x, axis=1)
    np.testing.assert_allclose(tape.gradient(y, x), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    a, b = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    with GradientTape() as tape:
        tape.watch([a, b])
        y = ops.maximum(a, b)
    ga, gb = tape.gradient(y, [a, b])
    np.testing.assert_allclose(ga, [0.5, 1.0])
    np.testing.assert_allclose(gb, [0.5, 0.0])


def test_prod_gradient_with_zeros():
    check_gradients(lambda xs: ops.prod(xs[0], axis=1), [np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 4.0]])])


def test_take_accumulates_repeated_indices():
    table = np.zeros((4, 2))
    with GradientTape() as tape:
        tape.watch(table)
        rows = ops.take(table, np.array([[1, 1], [3, 1]]), axis=0)
    np.testing.assert_array_equal(tape.gradient(rows, table), [[0, 0], [3, 3], [0, 0], [1, 1]])


def test_sigmoid_softplus_and_softmax_are_stable_for_large_inputs():
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = ops.sigmoid(x)
        sp = ops.softplus(x)
        ls = ops.log_sigmoid(x)
        sm = ops.softmax(x)
        lsm = ops.log_softmax(x)
        with GradientTape() as tape:
            tape.watch(x)
            y = ops.log_softmax(x)
        g = tape.gradient(y, x)
    np.testing.assert_allclose(s, [0, 9.357623e-14, 0.5, 1, 1], rtol=1e-6)
    np.testing.assert_allclose(sp, [0, 9.357623e-14, np.log(2), 30, 1000], rtol=1e-6)
    np.testing.assert_allclose(ls, [-1000, -30, -np.log(2), -9.357623e-14, 0], rtol=1e-6)
    np.testing.assert_allclose(sm, [0, 0, 0, 0, 1])
    np.testing.assert_allclose(lsm, [-2000, -1030, -1000, -970, 0], rtol=1e-6)
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_erf_low_precision_is_accurate(dtype):
    x = np.linspace(-5, 5, 2001).astype(dtype)
    out = ops.erf(x)
    assert out.dtype == dtype
    tol = 3e-7 if dtype == np.float32 else 1e-3
    np.testing.assert_allclose(out, _erf(x.astype(np.float64)), rtol=tol, atol=tol)
    tiny = np.array([1e-6, -3e-4], dtype=np.float32)
    np.testing.assert_allclose(ops.erf(tiny), _erf(tiny.astype(np.float64)), rtol=1e-6)


def test_python_scalar_constants_keep_float32():
    x = np.ones(3, dtype=np.float32)
    for y in (ops.multiply(x, 2.5), ops.divide(1.0, x), ops.power(x, 2.0), ops.clip(x, 0.0, 0.5),
              ops.where(x > 0, x, 0.0), ops.gelu(x), ops.gelu(x, approximate=False), ops.elu(x),
              ops.selu(x), ops.leaky_relu(x), ops.hard_silu(x), ops.maximum(x, 0.1), ops.sum(x)):
        assert y.dtype == np.float32


def test_cast():
    x = np.array([1.7, -2.2])
    assert ops.cast(x, "int32").dtype == np.int32
    assert ops.cast(x, "float32").dtype == np.float32
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.cast(x, "float32")
    g = tape.gradient(y, x)
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [1.0, 1.0])


def test_convert_to_tensor_and_numpy():
    assert ops.convert_to_tensor(1.5).dtype == np.float32
    assert ops.convert_to_tensor([1.0, 2.0]).dtype == np.float32
    assert ops.convert_to_tensor([1, 2]).dtype == np.int32
    assert ops.convert_to_tensor(np.zeros(2)).dtype == np.float64
    assert ops.convert_to_tensor(3, dtype="float64").dtype == np.float64
    assert isinstance(ops.convert_to_numpy([1, 2]), np.ndarray)


def test_ops_without_gradient():
    x = np.array([-1.5, 0.0, 2.5])
    np.testing.assert_array_equal(ops.sign(x), [-1, 0, 1])
    np.testing.assert_array_equal(ops.argmax(np.array([[1, 5, 2], [7, 0, 1]]), axis=1), [1, 0])
    np.testing.assert_array_equal(ops.argmin(np.array([3, 1, 2])), 1)
    # Keras returns int32 indices, also for a symbolic call.
    assert ops.argmax(x).dtype == ops.argmin(x, keepdims=True).dtype == np.int32
    assert ops.argmax(kgraph.Input((3,)), axis=-1).dtype == "int32"
    np.testing.assert_array_equal(ops.greater(x, 0), [False, False, True])
    np.testing.assert_array_equal(ops.equal(x, 0.0), [False, True, False])
    np.testing.assert_array_equal(ops.floor(x), [-2, 0, 2])
    with GradientTape() as tape:
        tape.watch(x)
        y = ops.sign(x)
    assert tape.gradient(y, x) is None


def test_one_hot():
    out = ops.one_hot(np.array([0, 2, -1, 5]), 3)
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    assert out.dtype == np.float32
    assert ops.one_hot(np.array([[1, 0]]), 2, axis=0).shape == (2, 1, 2)


def test_where_with_condition_only_returns_indices():
    rows, cols = ops.where(np.array([[True, False], [False, True]]))
    np.testing.assert_array_equal(rows, [0, 1])
    np.testing.assert_array_equal(cols, [0, 1])


def test_creation_ops_default_to_floatx():
    assert ops.zeros((2,)).dtype == np.float32
    assert ops.ones((2,), dtype="int32").dtype == np.int32
    assert ops.full((2,), 3.0).dtype == np.float32
    assert ops.zeros_like(np.zeros(2, np.int64)).dtype == np.int64
    assert ops.eye(3).dtype == np.float32
    assert ops.arange(4).dtype == np.int32
    assert ops.arange(0.0, 1.0, 0.5).dtype == np.float32


def test_shape_helpers():
    assert ops.shape(np.zeros((2, 3))) == (2, 3)
    assert ops.ndim(np.zeros((2, 3))) == 2


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: ops.reshape(np.zeros((2, 3)), (4, 2)), "x.shape=(2, 3)"),
        (lambda: ops.dense(np.zeros((2, 3)), np.zeros((4, 2))), "kernel.shape=(4, 2)"),
        (lambda: ops.pad(np.zeros(2), 1, mode="mean"), "mode='mean'"),
        (lambda: ops.pad(np.zeros(2), 1, mode="edge", constant_values=1), "mode='edge'"),
        (lambda: ops.concatenate([np.zeros((2, 3)), np.zeros((3, 2))]), "shapes=[(2, 3), (3, 2)]"),
        (lambda: ops.stack([np.zeros(2), np.zeros(3)]), "shapes=[(2,), (3,)]"),
        (lambda: ops.broadcast_to(np.zeros(3), (2, 2)), "x.shape=(3,)"),
        (lambda: ops.einsum("ij,jk->ik", np.zeros((2, 3))), "subscripts='ij,jk->ik'"),
        (lambda: ops.unstack(np.zeros((2, 3)), num=3), "num=3"),
        (lambda: ops.where(np.ones(2, bool), np.zeros(2)), "neither"),
        (lambda: ops.sum(np.zeros((2, 3)), axis=2), "axis"),
    ],
)
def test_bad_input_raises_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        call()


@settings(max_examples=30, deadline=None)
@given(
    shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    op=st.sampled_from([ops.add, ops.subtract, ops.multiply, ops.maximum, ops.minimum]),
)
def test_binary_ops_broadcast_any_shapes(shapes, op):
    a, b = _inputs(shapes.input_shapes, seed=3)
    np.testing.assert_allclose(op(a, b), getattr(np, op.__name__)(a, b))
    check_gradients(lambda xs: op(*xs), [a, b])


def test_large_einsum_matches_matmul_gradients():
    a, b = _inputs([(4, 2, 32, 16), (4, 2, 24, 16)], seed=4)
    with GradientTape(persistent=True) as tape:
        tape.watch([a, b])
        e = ops.einsum("bhqd,bhkd->bhqk", a, b)
        m = ops.matmul(a, ops.swapaxes(b, -1, -2))
    np.testing.assert_allclose(e, m, rtol=1e-10)
    c = np.random.default_rng(5).standard_normal(e.shape)
    for ge, gm in zip(tape.gradient(e, [a, b], output_gradients=c), tape.gradient(m, [a, b], output_gradients=c)):
        np.testing.assert_allclose(ge, gm, rtol=1e-10, atol=1e-12)
