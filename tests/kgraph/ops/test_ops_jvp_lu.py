"""``lu_factor`` and ``jvp``: Keras parity (values, pivots, dtypes, gradients), finite differences, symbolic use."""
import importlib.util
import os

import numpy as np
import pytest

import kgraph
from kgraph import ops
from kgraph.backend.autodiff import GradientTape
from tests.gradcheck import check_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

RNG = np.random.default_rng(11)
SHAPES = [(4, 4), (2, 3, 5, 5), (3, 5), (5, 3), (2, 4, 2)]


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras
    return keras


def _unpack(lu, pivots):
    """``(rows, L, U)`` with ``x[rows] = L @ U`` for one matrix, from LAPACK's row swaps."""
    m, n = lu.shape
    k = min(m, n)
    rows = np.arange(m)
    for i, p in enumerate(pivots):
        rows[[i, p]] = rows[[p, i]]
    return rows, np.tril(lu[:, :k], -1) + np.eye(m, k), np.triu(lu[:k])


# ---------------------------------------------------------------- lu_factor

@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_reconstructs_each_matrix_with_partial_pivoting(shape):
    x = RNG.standard_normal(shape)
    lu, pivots = ops.lu_factor(x)
    assert lu.shape == shape and pivots.shape == shape[:-2] + (min(shape[-2:]),) and pivots.dtype == np.int32
    for index in np.ndindex(*shape[:-2]):
        rows, low, up = _unpack(lu[index], pivots[index])
        np.testing.assert_allclose(low @ up, x[index][rows], atol=1e-12)
        assert np.all(np.abs(low) <= 1 + 1e-12)  # partial pivoting: no multiplier above 1


def test_lu_factor_of_singular_and_integer_matrices():
    lu, pivots = ops.lu_factor(np.zeros((3, 3)))
    np.testing.assert_array_equal(lu, 0)
    np.testing.assert_array_equal(pivots, [0, 1, 2])
    x = np.array([[1, 2], [2, 4]])
    lu, pivots = ops.lu_factor(x)
    assert lu.dtype == np.float32
    np.testing.assert_array_equal(lu, [[2, 4], [0.5, 0]])
    np.testing.assert_array_equal(pivots, [1, 1])
    stack = np.array([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]]])
    with GradientTape() as tape:
        tape.watch(stack)
        loss = ops.sum(ops.lu_factor(stack)[0])
    grad = tape.gradient(loss, stack)
    assert np.isnan(grad[0]).all() and np.isfinite(grad[1]).all()  # only the singular matrix has no gradient
    with pytest.raises(ValueError, match="rank 2 or more.*x.shape=\\(3,\\)"):
        ops.lu_factor(np.ones(3))


@needs_keras
@pytest.mark.parametrize("shape", SHAPES + [(6, 6)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_lu_factor_matches_keras(keras, shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    if dtype == "complex64":
        x = x + 1j * RNG.standard_normal(shape).astype("float32")
    lu, pivots = ops.lu_factor(x)
    k_lu, k_pivots = (keras.ops.convert_to_numpy(v) for v in keras.ops.lu_factor(x))
    assert (lu.dtype, pivots.dtype) == (k_lu.dtype, k_pivots.dtype)
    np.testing.assert_array_equal(pivots, k_pivots)
    # measured: real matrices equal to the bit, complex64 within 7e-7 (LAPACK's complex products round apart)
    np.testing.assert_allclose(lu, k_lu, rtol=1e-6, atol=2e-6)


@needs_keras
@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_gradient_matches_keras_torch_backend(keras, shape):
    if keras.backend.backend() != "torch":
        pytest.skip("the gradient is compared with torch's autograd")
    import torch
    x, w = RNG.standard_normal(shape), RNG.standard_normal(shape)
    source = torch.tensor(x, requires_grad=True)
    (keras.ops.lu_factor(source)[0] * torch.tensor(w)).sum().backward()
    with GradientTape() as tape:
        tape.watch(x)
        loss = ops.sum(ops.lu_factor(x)[0] * w)
    np.testing.assert_allclose(tape.gradient(loss, x), source.grad.numpy(), rtol=1e-9, atol=1e-12)  # float64


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_gradient_matches_finite_differences(shape):
    check_gradients(lambda xs: ops.lu_factor(xs[0])[0], [RNG.standard_normal(shape)], rtol=1e-5, atol=1e-7)


def test_lu_factor_in_a_model_saves_and_loads(tmp_path):
    x = kgraph.Input((3, 3))
    lu, pivots = ops.lu_factor(x)
    assert (lu.shape, lu.dtype, pivots.shape, pivots.dtype) == ((None, 3, 3), "float32", (None, 3), "int32")
    model = kgraph.Model(x, [lu, pivots])
    data = RNG.standard_normal((2, 3, 3)).astype("float32")
    got = model.predict(data, verbose=0)
    for a, e in zip(got, ops.lu_factor(data)):
        np.testing.assert_array_equal(a, e)
    model.save(tmp_path / "m.pkl")
    for a, e in zip(kgraph.load_model(tmp_path / "m.pkl").predict(data, verbose=0), got):
        np.testing.assert_array_equal(a, e)


# ---------------------------------------------------------------- jvp

X, TX = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
W, TW = RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2))


def _finite_difference(fun, primals, tangents, eps=1e-6):
    plus = fun(*[p + eps * t for p, t in zip(primals, tangents)])
    minus = fun(*[p - eps * t for p, t in zip(primals, tangents)])
    return (plus - minus) / (2 * eps)


FUNCTIONS = {
    "elementwise": (lambda a: ops.sin(a) * a, (X,), (TX,)),
    "matmul": (lambda a, b: ops.matmul(ops.tanh(a), b), (X, W), (TX, TW)),
    "operators_and_indexing": (lambda a, b: (a[:, :2] * a[:, 1:3]) @ b[:2], (X, W), (TX, TW)),
    "reduction_to_a_scalar": (lambda a: ops.sum(a * a) / ops.max(a), (X,), (TX,)),
    "lu_factor": (lambda a: ops.lu_factor(a[:, :3])[0], (X,), (TX,)),
    "through_complex": (lambda a: ops.view_as_real(ops.polar(ops.exp(a), a)), (X,), (TX,)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_jvp_matches_finite_differences(name):
    fun, primals, tangents = FUNCTIONS[name]
    out, tangent_out = ops.jvp(fun, primals, tangents)
    np.testing.assert_allclose(out, fun(*primals), rtol=1e-12)
    # central differences of smooth functions in float64: error about eps^2 + rounding / eps
    np.testing.assert_allclose(tangent_out, _finite_difference(fun, primals, tangents), rtol=1e-6, atol=1e-7)
    assert type(out) is np.ndarray and type(tangent_out) is np.ndarray and tangent_out.dtype == out.dtype


def test_jvp_of_a_complex_output_and_input():
    r, t = np.array([1.5, 0.5]), np.array([0.3, -2.0])
    dr, dt = np.array([0.2, -1.0]), np.array([0.7, 0.1])
    z, dz = ops.jvp(ops.polar, (r, t), (dr, dt))
    np.testing.assert_allclose(dz, np.exp(1j * t) * (dr + 1j * r * dt), rtol=1e-12)
    w, dw = ops.jvp(lambda c: ops.exp(c) * c, (z,), (dz,))  # holomorphic: f'(z) dz
    np.testing.assert_allclose(dw, np.exp(z) * (z + 1) * dz, rtol=1e-12)
    angle, d_angle = ops.jvp(ops.angle, (z,), (dz,))
    np.testing.assert_allclose(d_angle, dt, rtol=1e-12)


def test_jvp_structures_aux_and_unconnected_outputs():
    fun = lambda a, b: ({"prod": ops.matmul(a, b), "square": ops.square(a)}, ops.argmax(a, axis=1))  # noqa: E731
    (out, tangents, aux) = ops.jvp(fun, [X, W], [TX, TW], has_aux=True)
    assert set(out) == {"prod", "square"} and isinstance(tangents, dict)
    np.testing.assert_allclose(tangents["prod"], TX @ W + X @ TW, rtol=1e-12)
    np.testing.assert_allclose(tangents["square"], 2 * X * TX, rtol=1e-12)
    np.testing.assert_array_equal(aux, np.argmax(X, axis=1))
    _, (d_const, d_index) = ops.jvp(lambda a: (ops.ones_like(a) * 2.0, ops.argmax(a)), (X,), (TX,))
    np.testing.assert_array_equal(d_const, 0)
    assert d_index == 0 and d_index.dtype == ops.argmax(X).dtype
    nested, d_nested = ops.jvp(lambda pair: pair[0] * pair[1], ((X, X),), ((TX, X),))
    np.testing.assert_allclose(d_nested, TX * X + X * X, rtol=1e-12)
    same, d_same = ops.jvp(lambda a, b: a * b, (X, X), (TX, np.zeros_like(X)))  # one array passed twice
    np.testing.assert_allclose(d_same, TX * X, rtol=1e-12)


@needs_keras
def test_jvp_matches_keras(keras):
    k = keras.ops
    x, t = X.astype("float32"), TX.astype("float32")
    w, tw = W.astype("float32"), TW.astype("float32")
    cases = [
        (ops.sin, k.sin, (x,), (t,), False),
        (lambda a, b: ops.matmul(a, b), lambda a, b: k.matmul(a, b), (x, w), (t, tw), False),
        (lambda a, b: (ops.tanh(a) * b[0, 0], {"s": ops.sum(a * a)}),
         lambda a, b: (k.tanh(a) * b[0, 0], {"s": k.sum(a * a)}), (x, w), (t, tw), False),
        (lambda a: (ops.exp(a), ops.max(a)), lambda a: (k.exp(a), k.max(a)), (x,), (t,), True),
        (lambda a: ops.lu_factor(a[:, :3])[0], lambda a: k.lu_factor(a[:, :3])[0], (x,), (t,), False),
        (lambda a: ops.view_as_real(ops.polar(ops.abs(a), a)), lambda a: k.view_as_real(k.polar(k.abs(a), a)),
         (x,), (t,), False),
    ]
    for i, (ours_fn, keras_fn, primals, tangents, has_aux) in enumerate(cases):
        ours = kgraph.tree.flatten(list(ops.jvp(ours_fn, primals, tangents, has_aux=has_aux)))
        theirs = k.jvp(keras_fn, tuple(k.convert_to_tensor(p) for p in primals),
                       tuple(k.convert_to_tensor(p) for p in tangents), has_aux=has_aux)
        theirs = [k.convert_to_numpy(v) for v in kgraph.tree.flatten(list(theirs))]
        assert len(ours) == len(theirs)
        for a, e in zip(ours, theirs):
            assert a.dtype == e.dtype, i
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=2e-6, err_msg=f"case {i}")  # float32 rounding


def test_jvp_in_a_model():
    x, t = kgraph.Input((3,)), kgraph.Input((3,))
    out, tangent = ops.jvp(lambda a: ops.sin(a) * a, (x,), (t,))
    assert tangent.shape == (None, 3) and tangent.dtype == "float32"
    data, direction = RNG.standard_normal((2, 3)).astype("float32"), RNG.standard_normal((2, 3)).astype("float32")
    got = kgraph.Model([x, t], [out, tangent]).predict([data, direction], verbose=0)
    np.testing.assert_allclose(got[1], (np.cos(data) * data + np.sin(data)) * direction, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call, message", [
    (lambda: ops.jvp(ops.sin, X, TX), "tuple or list.*type\\(primals\\)=ndarray"),
    (lambda: ops.jvp(ops.sin, (X,), TX), "type\\(tangents\\)=ndarray"),
    (lambda: ops.jvp(ops.sin, (X,), (TX, TX)), "1 primal arrays, 2 tangent arrays"),
    (lambda: ops.jvp(ops.sin, (X,), (TX[:1],)), "shape \\(3, 4\\), tangent of shape \\(1, 4\\)"),
    (lambda: ops.jvp(ops.sin, (np.arange(3),), (np.arange(3),)), "float or complex.*int"),
    (lambda: ops.jvp(ops.sin, (X,), (TX,), has_aux=True), "pair \\(output, aux\\)"),
])
def test_jvp_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
