"""ops.dense on inputs with several leading axes (one 2-D product) and on empty axes, against finite differences."""
import numpy as np
import pytest

from kgraph import ops
from tests.gradcheck import check_gradients


@pytest.mark.parametrize("x_shape,units", [((2, 3, 4), 5), ((2, 2, 3, 4), 3), ((2, 3, 4), 0), ((2, 0, 4), 3)])
def test_dense_over_leading_axes_matches_finite_differences(x_shape, units):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(x_shape), rng.standard_normal((x_shape[-1], units)), rng.standard_normal(units)]
    grads = check_gradients(lambda v: ops.dense(v[0], v[1], v[2]), xs)
    assert [g.shape for g in grads] == [x.shape for x in xs]


def test_dense_over_leading_axes_equals_one_product_per_row():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)[:, ::2]  # not contiguous
    kernel = rng.standard_normal((4, 6)).astype(np.float32)
    out = ops.dense(x, kernel)
    assert out.shape == (3, 3, 6)
    np.testing.assert_allclose(out, np.einsum("btf,fu->btu", x, kernel), rtol=1e-5, atol=1e-5)
