"""The compiled recurrent kernels' float32 tanh (``kernels.fused_tanh``): correctly rounded, special values kept."""
import numpy as np
import pytest

pytest.importorskip("numba")  # the dev extra installs it

from kgraph.ops.kernels import fused_tanh  # noqa: E402


def _rounded(x):
    """tanh in float64, rounded once to float32: the correctly rounded value (but for ties closer than float64's
    own error, which the exhaustive check of benchmarks/tanh_check.py did not meet)."""
    return np.tanh(x.astype(np.float64)).astype(np.float32)


def _tanh(x):
    out = np.empty_like(x)
    fused_tanh.tanh_rows(x, out)
    return out


def test_every_101st_float32_up_to_where_tanh_rounds_to_one_is_correctly_rounded():
    top = int(np.array([9.2], np.float32).view(np.int32)[0])
    bits = np.arange(0, top, 101, dtype=np.int32)
    x = bits[: bits.size // 1000 * 1000].view(np.float32).reshape(1000, -1)
    got = _tanh(x)
    np.testing.assert_array_equal(got.view(np.int32), _rounded(x).view(np.int32))
    np.testing.assert_array_equal(_tanh(-x).view(np.int32), (-got).view(np.int32))  # odd, bit for bit


def test_special_values():
    big = np.finfo(np.float32).max
    tiny = np.float32(1e-45)  # the smallest subnormal
    x = np.array([[0.0, -0.0, np.inf, -np.inf, np.nan, big, -big, tiny, -tiny, 9.02, -9.05, 9.1, 20.0, 1e-20]],
                 np.float32)
    got = _tanh(x)[0]
    np.testing.assert_array_equal(got[[0, 1]].view(np.int32), x[0, [0, 1]].view(np.int32))  # +0.0 and -0.0 kept
    np.testing.assert_array_equal(got[[2, 3, 5, 6]], [1, -1, 1, -1])
    assert np.isnan(got[4])
    np.testing.assert_array_equal(got[[7, 8, 13]], x[0, [7, 8, 13]])  # tanh(x) rounds to x near zero
    np.testing.assert_array_equal(got[9:13], [1, -1, 1, 1])


def test_in_place_and_rows_of_a_wider_array_give_the_same_values():
    rng = np.random.default_rng(0)
    wide = (rng.standard_normal((37, 300)) * 4).astype(np.float32)
    expected = _rounded(wide[:, :200])
    block = wide[:, :200]  # rows of unit stride, 300 apart (a GRU's gate columns)
    out = np.empty((37, 200), np.float32)
    fused_tanh.tanh_rows(block, out)
    np.testing.assert_array_equal(out, expected)
    fused_tanh.tanh_rows(block, block)  # in place
    np.testing.assert_array_equal(wide[:, :200], expected)
    np.testing.assert_array_equal(_tanh(np.empty((0, 5), np.float32)), np.empty((0, 5), np.float32))
