"""Shared data, models and comparisons of the Keras-contract tests."""

import numpy as np

RTOL, ATOL = 1e-5, 1e-6  # float32 arithmetic in a different order: a few ulps per step


def _data(n=32, features=4, outputs=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    y = (x @ rng.normal(size=(features, outputs)) + 0.1 * rng.normal(size=(n, outputs))).astype("float32")
    return x, y


def _dense_model(K, cls=None, outputs=2):
    inputs = K.Input(shape=(4,))
    return (cls or K.Model)(inputs, K.layers.Dense(outputs, name="out")(K.layers.Dense(8, name="hidden")(inputs)))


def _copy_weights(source, target, sample):
    """Give ``target`` the weights of ``source`` (both built on ``sample`` first if need be)."""
    for model in (source, target):
        if not model.built or not model.weights:
            model(sample)
    target.set_weights(source.get_weights())


def _assert_close(actual, expected, rtol=RTOL, atol=ATOL):
    if isinstance(expected, dict):
        assert set(actual) == set(expected), (sorted(actual), sorted(expected))
        for key in expected:
            np.testing.assert_allclose(actual[key], expected[key], rtol=rtol, atol=atol, err_msg=key)
    else:
        np.testing.assert_allclose(np.asarray(actual, float), np.asarray(expected, float), rtol=rtol, atol=atol)


def _assert_same_weights(actual, expected, rtol=RTOL, atol=ATOL):
    for a, b in zip(actual.get_weights(), expected.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
