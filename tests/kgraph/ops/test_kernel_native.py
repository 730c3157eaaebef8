"""kernels.native: NumPy's own BLAS product and tanh loop called from compiled kernels, bit for bit NumPy's."""
import numpy as np
import pytest

from kgraph.ops.kernels import compiled, lstm, native

pytest.importorskip("numba")  # the dev extra installs it, so these run wherever the suite is meant to run


def _numpy_blas_name():
    config = np.show_config(mode="dicts")
    return config.get("Build Dependencies", {}).get("blas", {}).get("name", "")


@pytest.fixture
def fused():
    module = compiled.kernels()
    assert module is not None
    return module


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_wheels_blas_is_found_and_gives_matmuls_bits(fused, dtype):
    if _numpy_blas_name() != "scipy-openblas":
        pytest.skip("this NumPy was built with another BLAS; the compiled steps call np.matmul there")
    gemm = native.gemm(dtype, fused)
    assert gemm is not None
    rng = np.random.default_rng(1)
    for rows, inner, columns in [(2, 1, 1), (3, 1, 5), (8, 64, 256), (19, 256, 64), (64, 128, 512)]:
        a = rng.standard_normal((rows, inner + 5)).astype(dtype)[:, 2:2 + inner]  # rows inside a wider array
        b = rng.standard_normal((inner, columns)).astype(dtype)
        out = np.full((rows, columns), np.nan, dtype=dtype)
        fused.gemm_rows(gemm, a, b, out, dtype(1), dtype(0))
        np.testing.assert_array_equal(out, np.matmul(a, b))


def test_other_dtypes_have_no_blas_product(fused):
    assert native.gemm(np.float16, fused) is None
    assert native.gemm(np.int32, fused) is None


def test_a_library_whose_products_differ_is_not_used(fused, monkeypatch):
    class Wrong:
        """A gemm whose products are off by a factor: the check must turn it down."""
        @staticmethod
        def gemm_rows(function, a, b, out, one, zero):
            fused.gemm_rows(function, a, b, out, one + one, zero)
    monkeypatch.setattr(native, "_found", {})
    assert native.gemm(np.float32, Wrong) is None
    assert native._found == {("gemm", "f"): None}  # decided once per process


def test_without_threadpoolctl_the_steps_keep_numpys_products(fused, monkeypatch):
    monkeypatch.setattr(native, "_found", {})
    monkeypatch.setattr(native, "_libraries", lambda: [])
    assert native.gemm(np.float32, fused) is None


def test_the_recurrent_steps_take_numpys_products_only_for_kernels_blas_takes_as_they_are(fused):
    kernel = np.ones((4, 16), np.float32)
    assert (native.kernel_gemm(fused, kernel, 5, np.dtype(np.float32)) is None) == (native.gemm(np.float32, fused) is None)
    assert native.kernel_gemm(fused, kernel, 1, np.dtype(np.float32)) is None  # one row: NumPy may multiply otherwise
    assert native.kernel_gemm(fused, np.asfortranarray(kernel), 5, np.dtype(np.float32)) is None
    assert native.kernel_gemm(fused, kernel.astype(np.float64), 5, np.dtype(np.float32)) is None
    assert native.kernel_gemm(None, kernel, 5, np.dtype(np.float32)) is None


def _numpy_has_loop_api():
    return hasattr(np.tanh, "_get_strided_loop") and hasattr(np.tanh, "_resolve_dtypes_and_context")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpys_tanh_loop_is_found_and_gives_np_tanhs_bits(fused, dtype):
    if not _numpy_has_loop_api():
        pytest.skip("this NumPy hands out no ufunc loops; the compiled steps call np.tanh there")
    loop = native.tanh_loop(dtype, fused)
    assert loop is not None and all(isinstance(address, int) for address in loop)
    rng = np.random.default_rng(2)
    scratch = np.empty(5, np.int64)
    for shape in [(1,), (3, 5), (64, 512), (33, 129)]:
        x = (rng.standard_normal(shape) * 5).astype(dtype)
        x.flat[0] = np.nan if x.size > 1 else -0.0
        out = np.empty_like(x)
        assert fused.ufunc_rows(*loop, x, out, scratch) == 0
        np.testing.assert_array_equal(out, np.tanh(x))
        fused.ufunc_rows(*loop, x, x, scratch)  # in place, as the LSTM's gates
        np.testing.assert_array_equal(x, out)


def test_a_loop_whose_values_differ_is_not_used(fused, monkeypatch):
    if not _numpy_has_loop_api():
        pytest.skip("this NumPy hands out no ufunc loops")

    class Wrong:
        """A loop call that leaves the output as it was: the check must turn it down."""
        @staticmethod
        def ufunc_rows(loop, context, auxdata, a, out, scratch):
            return 0
    monkeypatch.setattr(native, "_found", {})
    assert native.tanh_loop(np.float32, Wrong) is None
    assert native.tanh_loop(np.int64, fused) is None


def test_a_numpy_without_the_loop_api_keeps_np_tanh(fused, monkeypatch):
    monkeypatch.setattr(native, "_found", {})

    class NoLoops:
        def _resolve_dtypes_and_context(self, dtypes):
            raise AttributeError("_resolve_dtypes_and_context")
    monkeypatch.setattr(native.np, "tanh", NoLoops())
    assert native.tanh_loop(np.float32, fused) is None


def _lstm_outputs(batch=24, timesteps=7, units=8, dtype=np.float32):
    """Outputs and gradients of one LSTM kernel call (masked steps, initial states, a sequence cotangent)."""
    rng = np.random.default_rng(5)
    projection = rng.standard_normal((timesteps, batch, 4 * units)).astype(dtype).transpose(1, 0, 2)
    kernel = (rng.standard_normal((units, 4 * units)) * 0.3).astype(dtype)
    h0, c0 = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(2))
    mask = rng.random((batch, timesteps)) > 0.3
    (sequence, h, c), vjp = lstm.run(projection, kernel, h0, c0, False, mask, False)
    g = rng.standard_normal(sequence.shape).astype(dtype)
    return [np.array(sequence), h, c, *vjp((g, h * 0.5, c * 0.25))]


@pytest.mark.parametrize("without", ["tanh loop", "both"])
def test_the_lstm_loops_without_numpys_routines_give_the_same_values(fused, monkeypatch, without):
    # The compiled LSTM steps with NumPy's BLAS and tanh loop (the default where both are found), with the BLAS
    # alone (a NumPy without the loop API), and with neither: the same values, element for element.
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "1")
    for dtype in (np.float32, np.float64):
        expected = _lstm_outputs(dtype=dtype)
        with monkeypatch.context() as patch:
            patch.setattr(native, "tanh_loop", lambda dtype, fused: None)
            if without == "both":
                patch.setattr(native, "gemm", lambda dtype, fused: None)
            got = _lstm_outputs(dtype=dtype)
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(a, b)
