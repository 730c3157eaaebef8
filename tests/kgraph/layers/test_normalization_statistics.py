"""Normalization's ``mean`` and ``variance`` attributes, as Keras 3 exposes them (the inputs' broadcast shape)."""
import numpy as np
import pytest

import kgraph


@pytest.mark.parametrize("axis", [-1, (1, 2), None])
def test_adapted_statistics_match_keras(axis):
    keras = pytest.importorskip("keras")
    data = np.random.default_rng(0).normal(size=(6, 3, 2)).astype("float32")
    ours, theirs = kgraph.layers.Normalization(axis=axis), keras.layers.Normalization(axis=axis)
    assert ours.mean is None and ours.variance is None
    ours.adapt(data)
    theirs.adapt(data)
    for name in ("mean", "variance"):
        expected = keras.ops.convert_to_numpy(getattr(theirs, name))
        np.testing.assert_allclose(np.asarray(getattr(ours, name)), expected, rtol=1e-5, atol=1e-6)


def test_given_statistics_are_broadcast():
    layer = kgraph.layers.Normalization(mean=[1.0, 2.0], variance=[4.0, 9.0])
    layer.build((None, 2))
    np.testing.assert_allclose(layer.mean, [[1.0, 2.0]])
    np.testing.assert_allclose(layer.variance, [[4.0, 9.0]])
