"""kernels.blas: NumPy's own BLAS product called from compiled kernels, bit for bit NumPy's matmul."""
import numpy as np
import pytest

from kgraph.ops.kernels import blas, compiled, lstm

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
    gemm = blas.gemm(dtype, fused)
    assert gemm is not None
    rng = np.random.default_rng(1)
    for rows, inner, columns in [(2, 1, 1), (3, 1, 5), (8, 64, 256), (19, 256, 64), (64, 128, 512)]:
        a = rng.standard_normal((rows, inner + 5)).astype(dtype)[:, 2:2 + inner]  # rows inside a wider array
        b = rng.standard_normal((inner, columns)).astype(dtype)
        out = np.full((rows, columns), np.nan, dtype=dtype)
        fused.gemm_rows(gemm, a, b, out, dtype(1), dtype(0))
        np.testing.assert_array_equal(out, np.matmul(a, b))


def test_other_dtypes_have_no_blas_product(fused):
    assert blas.gemm(np.float16, fused) is None
    assert blas.gemm(np.int32, fused) is None


def test_a_library_whose_products_differ_is_not_used(fused, monkeypatch):
    class Wrong:
        """A gemm whose products are off by a factor: the check must turn it down."""
        @staticmethod
        def gemm_rows(function, a, b, out, one, zero):
            fused.gemm_rows(function, a, b, out, one + one, zero)
    monkeypatch.setattr(blas, "_found", {})
    assert blas.gemm(np.float32, Wrong) is None
    assert blas._found == {"f": None}  # decided once per process


def test_without_threadpoolctl_the_steps_keep_numpys_products(fused, monkeypatch):
    monkeypatch.setattr(blas, "_found", {})
    monkeypatch.setattr(blas, "_libraries", lambda: [])
    assert blas.gemm(np.float32, fused) is None


def test_the_lstm_steps_take_numpys_products_only_for_kernels_blas_takes_as_they_are(fused):
    kernel = np.ones((4, 16), np.float32)
    assert (lstm._gemm(fused, kernel, 5, np.dtype(np.float32)) is None) == (blas.gemm(np.float32, fused) is None)
    assert lstm._gemm(fused, kernel, 1, np.dtype(np.float32)) is None  # one row: NumPy may multiply otherwise
    assert lstm._gemm(fused, np.asfortranarray(kernel), 5, np.dtype(np.float32)) is None
    assert lstm._gemm(fused, kernel.astype(np.float64), 5, np.dtype(np.float32)) is None
    assert lstm._gemm(None, kernel, 5, np.dtype(np.float32)) is None
