"""``keras.random.beta``, ``binomial`` and ``gamma``: shapes, dtypes, seeding and parameter broadcasting, and the
same distributions as Keras's samples (compared statistically: the generators differ, so values cannot)."""
import numpy as np
import pytest
from scipy import stats

import kgraph
from kgraph import random

keras = pytest.importorskip("keras")

N = 20000
# (function name, keyword parameters): kgraph's and Keras's samples must pass a two-sample KS test.
DISTRIBUTIONS = [
    ("gamma", {"alpha": 0.5}), ("gamma", {"alpha": 3.0}),
    ("beta", {"alpha": 2.0, "beta": 5.0}), ("beta", {"alpha": 0.5, "beta": 0.5}),
    ("binomial", {"counts": 10, "probabilities": 0.3}), ("binomial", {"counts": 1, "probabilities": 0.5}),
]


@pytest.mark.parametrize("name, params", DISTRIBUTIONS, ids=[f"{n}-{p}" for n, p in DISTRIBUTIONS])
def test_same_distribution_as_keras(name, params):
    ours = getattr(random, name)((N,), seed=1, **params)
    theirs = keras.ops.convert_to_numpy(getattr(keras.random, name)((N,), seed=1, **params))
    assert ours.shape == theirs.shape == (N,) and ours.dtype == theirs.dtype == np.float32
    if name == "binomial":  # a discrete law: the frequency of each count
        values = np.arange(params["counts"] + 1)
        ours_freq = np.array([np.mean(ours == v) for v in values])
        theirs_freq = np.array([np.mean(theirs == v) for v in values])
        np.testing.assert_allclose(ours_freq, theirs_freq, atol=0.02)
        np.testing.assert_allclose(ours_freq, stats.binom.pmf(values, params["counts"], params["probabilities"]),
                                   atol=0.015)
    else:
        assert stats.ks_2samp(ours, theirs).pvalue > 1e-3
        law = stats.gamma(params["alpha"]) if name == "gamma" else stats.beta(params["alpha"], params["beta"])
        assert stats.kstest(ours, law.cdf).pvalue > 1e-3


@pytest.mark.parametrize("call", [
    lambda **kw: random.gamma((3, 4), 2.0, **kw),
    lambda **kw: random.beta((3, 4), 2.0, 3.0, **kw),
    lambda **kw: random.binomial((3, 4), 5, 0.5, **kw),
])
def test_shapes_dtypes_and_seeding(call):
    a = call(seed=7)
    assert a.shape == (3, 4) and a.dtype == np.float32
    np.testing.assert_array_equal(a, call(seed=7))
    assert not np.array_equal(call(seed=7), call(seed=8))
    assert call(seed=7, dtype="float64").dtype == np.float64
    generator = random.SeedGenerator(3)
    first, second = call(seed=generator), call(seed=generator)
    again = random.SeedGenerator(3)
    np.testing.assert_array_equal(call(seed=again), first)
    assert not np.array_equal(first, second)
    kgraph.utils.set_random_seed(11)
    unseeded = call()
    kgraph.utils.set_random_seed(11)
    np.testing.assert_array_equal(call(), unseeded)


def test_default_dtype_is_floatx():
    kgraph.backend.set_floatx("float64")
    try:
        assert random.gamma((2,), 1.0, seed=0).dtype == np.float64
        assert random.binomial((2,), 3, 0.5, seed=0).dtype == np.float64
    finally:
        kgraph.backend.set_floatx("float32")


def test_parameters_broadcast_per_sample():
    alpha = np.array([0.5, 5.0, 50.0])
    samples = random.gamma((N, 3), alpha, seed=2)
    np.testing.assert_allclose(samples.mean(axis=0), alpha, rtol=0.05)
    draws = random.binomial((N, 2), np.array([4, 40]), np.array([0.5, 0.1]), seed=3)
    np.testing.assert_allclose(draws.mean(axis=0), [2.0, 4.0], rtol=0.05)
    assert set(np.unique(draws[:, 0])) <= set(range(5))
    b = random.beta((N, 2), np.array([1.0, 9.0]), 1.0, seed=4)
    np.testing.assert_allclose(b.mean(axis=0), [0.5, 0.9], atol=0.01)
    assert (b > 0).all() and (b < 1).all()


def test_bad_parameters_are_clear_errors():
    with pytest.raises(ValueError, match="`alpha` must be positive"):
        random.gamma((2,), 0.0)
    with pytest.raises(ValueError, match="must be positive"):
        random.beta((2,), 1.0, -1.0)
    with pytest.raises(ValueError, match="whole numbers"):
        random.binomial((2,), 2.5, 0.5)
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        random.binomial((2,), 3, 1.5)
    with pytest.raises(ValueError, match="must broadcast to the sample shape"):
        random.gamma((4,), np.ones(3))
    with pytest.raises(ValueError, match="fully known shape"):
        random.beta((None, 2), 1.0, 1.0)
