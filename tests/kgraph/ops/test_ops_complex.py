"""Complex-number ops: Keras parity of values and dtypes, gradients of real paths, symbolic use, errors."""
import importlib.util
import os

import numpy as np
import pytest

import kgraph
from kgraph import ops
from kgraph.backend.autodiff import GradientTape
from tests.gradcheck import check_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

RNG = np.random.default_rng(7)
Z64 = (RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))).astype("complex64")
Z128 = np.array([1 + 2j, -3 - 1j, 0j, -2 + 0j, 0.5 - 0.25j])
REAL = np.array([[-1.5, 0.0, -0.0, 2.0], [np.nan, -np.inf, 3.0, -0.25]], "float32")
R, T = RNG.uniform(0.5, 2.0, (2, 3)), RNG.uniform(-3.0, 3.0, (2, 3))


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras
    return keras


def _keras_value(keras, out):
    return keras.ops.convert_to_numpy(out), keras.backend.standardize_dtype(out.dtype)


def _assert_same(ours, keras_out, name):
    expected, dtype = keras_out
    assert np.asarray(ours).dtype.name == dtype, name
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6, err_msg=name)  # same float32 formulas


@needs_keras
@pytest.mark.parametrize("name", ["real", "imag", "conj", "conjugate", "angle", "isreal", "view_as_real"])
@pytest.mark.parametrize("value", [Z64, Z128], ids=["complex64", "complex128"])
def test_complex_inputs_match_keras(keras, name, value):
    _assert_same(getattr(ops, name)(value), _keras_value(keras, getattr(keras.ops, name)(value)), name)


@needs_keras
@pytest.mark.parametrize("name", ["real", "conj", "conjugate", "angle", "isreal"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "int64", "uint8", "bool"])
def test_real_inputs_match_keras(keras, name, dtype):
    value = REAL if dtype.startswith("float") else np.array([[-2, 0, 3], [1, 5, -7]])
    value = value.astype(dtype)
    _assert_same(getattr(ops, name)(value), _keras_value(keras, getattr(keras.ops, name)(value)), f"{name} {dtype}")


@needs_keras
@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float64", "float64"), ("float32", "float64"),
                                    ("int32", "float32")])
def test_polar_and_view_as_complex_match_keras(keras, dtypes):
    r, t = R.astype(dtypes[0]), T.astype(dtypes[1])
    _assert_same(ops.polar(r, t), _keras_value(keras, keras.ops.polar(r, t)), f"polar {dtypes}")
    pairs = np.stack([r, t], axis=-1)
    _assert_same(ops.view_as_complex(pairs), _keras_value(keras, keras.ops.view_as_complex(pairs)), "view_as_complex")


def test_values_on_real_inputs_follow_numpy():
    np.testing.assert_array_equal(ops.angle(REAL), np.array([[np.pi, 0, 0, 0], [np.nan, np.pi, 0, np.pi]], "float32"))
    assert ops.angle(np.array([1, -2])).dtype == np.float32 and ops.angle(REAL.astype("float16")).dtype == "float16"
    imag = ops.imag(REAL)
    assert imag.dtype == np.float32 and not np.any(imag)
    assert ops.conj(np.array([True, False])).dtype == bool and ops.isreal(REAL).all()
    np.testing.assert_array_equal(ops.view_as_real(np.array([1, 2])), [[1, 0], [2, 0]])
    np.testing.assert_array_equal(ops.isreal(Z128), [False, False, True, True, False])
    assert ops.real(2.5).dtype == np.float32 and ops.real(1 + 2j).dtype == np.float32  # Python values: floatx


def test_polar_and_the_real_view_invert_each_other():
    z = ops.polar(R, T)
    assert z.dtype == np.complex128 and ops.polar(np.float32(1), np.float16(0)).dtype == np.complex64
    np.testing.assert_allclose(z, R * np.exp(1j * T), rtol=1e-12)
    np.testing.assert_allclose(ops.view_as_complex(ops.view_as_real(Z64)), Z64)
    np.testing.assert_allclose(ops.abs(ops.polar(R, 0.3)), R, rtol=1e-12)  # broadcast angle


def test_namespaces():
    assert ops.numpy.angle is ops.angle and ops.numpy.conj is ops.conj and ops.nn.polar is ops.polar
    for name in ("polar", "view_as_complex", "view_as_real"):
        assert name not in dir(ops.numpy)


# Gradients: cotangents of complex arrays are dL/dx - i dL/dy, so real functions of real inputs through complex
# intermediates (and other ops' holomorphic gradients) differentiate exactly.
GRADIENTS = {
    "real_imag_of_polar": lambda xs: ops.real(ops.polar(xs[0], xs[1])) + 2 * ops.imag(ops.polar(xs[0], xs[1])),
    "view_as_real_of_conj": lambda xs: ops.view_as_real(ops.conj(ops.polar(xs[0], xs[1]))),
    "angle_of_polar": lambda xs: ops.angle(ops.polar(xs[0], ops.tanh(xs[1]))),
    "holomorphic_chain": lambda xs: ops.view_as_real(ops.exp(ops.multiply(ops.polar(xs[0], xs[1]),
                                                                          ops.polar(xs[1], xs[0])))),
    "real_input": lambda xs: (ops.real(xs[0]) * ops.conjugate(xs[1]) + ops.imag(xs[0]) + ops.angle(xs[1] - 5.0)
                              + ops.view_as_real(xs[0])[..., 0]),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_float64_gradients_match_finite_differences(name):
    check_gradients(GRADIENTS[name], [R, T], rtol=1e-5, atol=1e-7)


def test_view_as_complex_gradient_is_the_exact_transpose():
    # complex64 output (as Keras gives) is too coarse for finite differences; the map is linear, so the exact
    # gradient is known: real(z * w) = x0 wr - x1 wi and imag(z * w) = x0 wi + x1 wr.
    pairs = RNG.standard_normal((3, 2))
    w = (RNG.standard_normal(3) + 1j * RNG.standard_normal(3)).astype("complex64")
    for part, expected in ((ops.real, np.stack([w.real, -w.imag], -1)), (ops.imag, np.stack([w.imag, w.real], -1))):
        with GradientTape() as tape:
            tape.watch(pairs)
            loss = ops.sum(part(ops.view_as_complex(pairs) * w))
        grad = tape.gradient(loss, pairs)
        assert grad.dtype == np.float64
        np.testing.assert_allclose(grad, expected, rtol=1e-6)


def test_gradient_of_a_complex_source_is_conjugate_of_the_real_gradient():
    z = Z128.copy()
    with GradientTape() as tape:
        tape.watch(z)
        loss = ops.sum(ops.real(z) * 3.0 + ops.imag(z) * 2.0)
    np.testing.assert_allclose(tape.gradient(loss, z), np.full(z.shape, 3 - 2j))


def test_abs_of_a_complex_number_differentiates_its_modulus():
    z = Z128.copy()
    with GradientTape() as tape:
        tape.watch(z)
        loss = ops.sum(ops.abs(z))
    # d|z|/dx - i d|z|/dy = (x - iy) / |z|, and 0 at 0
    modulus = np.abs(z)
    expected = np.conj(z) / np.where(modulus == 0, 1, modulus)
    np.testing.assert_allclose(tape.gradient(loss, z), expected, rtol=1e-12)
    check_gradients(lambda xs: ops.abs(ops.polar(xs[0], xs[1]) * (1.5 - 0.5j)), [R + 2.0, T], rtol=1e-5, atol=1e-7)


def test_symbolic_calls_build_models():
    z = kgraph.Input((3,), dtype="complex64")
    outs = [ops.real(z), ops.imag(z), ops.conj(z), ops.angle(z), ops.isreal(z), ops.view_as_real(z)]
    assert [(o.shape, o.dtype) for o in outs] == [((None, 3), "float32")] * 2 + [((None, 3), "complex64")] + [
        ((None, 3), "float32"), ((None, 3), "bool"), ((None, 3, 2), "float32")]
    assert outs[2]._keras_history.layer.op_name == "conjugate"
    model = kgraph.Model(z, outs)
    got = model.predict(Z64, verbose=0)
    for a, e in zip(got, [Z64.real, Z64.imag, Z64.conj(), np.angle(Z64), np.isreal(Z64), ops.view_as_real(Z64)]):
        np.testing.assert_allclose(a, e, rtol=1e-6)
    r, t = kgraph.Input((3,)), kgraph.Input((3, 2))
    polar, complex_ = ops.polar(r, 1.0), ops.view_as_complex(t)
    assert polar.dtype == "complex64" and complex_.shape == (None, 3) and complex_.dtype == "complex64"
    got = kgraph.Model([r, t], [polar, complex_]).predict([R.astype("float32"), np.ones((2, 3, 2), "float32")],
                                                          verbose=0)
    np.testing.assert_allclose(got[0], R * np.exp(1j), rtol=1e-6)
    np.testing.assert_allclose(got[1], np.full((2, 3), 1 + 1j))


def test_save_and_load_a_model_with_complex_ops(tmp_path):
    r = kgraph.Input((3,))
    model = kgraph.Model(r, ops.view_as_real(ops.conj(ops.polar(r, r))))
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    x = R.astype("float32")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("call, message", [
    (lambda: ops.view_as_complex(np.ones((2, 3))), "last axis of size 2.*x.shape=\\(2, 3\\)"),
    (lambda: ops.view_as_complex(np.float32(1.0)), "x.shape=\\(\\)"),
    (lambda: ops.polar(Z64, 1.0), "abs_.dtype=complex64"),
    (lambda: ops.polar(1.0, Z64), "angle.dtype=complex64"),
])
def test_errors_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
