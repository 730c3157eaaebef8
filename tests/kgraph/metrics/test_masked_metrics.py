"""Compiled metrics of a masked sequence model weigh the masked entries out, as Keras's do (and as the loss does)."""
import numpy as np
import pytest

import kgraph


def _model(K, weights=None):
    inputs = K.Input(shape=(None,), dtype="int64")
    x = K.layers.Embedding(10, 4, mask_zero=True)(inputs)
    model = K.Model(inputs, K.layers.Dense(3, activation="softmax")(x))
    if weights is not None:
        model.set_weights(weights)
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy", "sparse_categorical_crossentropy"],
                  weighted_metrics=["accuracy"])
    return model


X = np.array([[1, 2, 3, 0, 0, 0], [4, 5, 0, 0, 0, 0]])
Y = np.array([[0, 1, 2, 0, 0, 0], [1, 2, 0, 0, 0, 0]])


def test_masked_entries_do_not_count_in_the_metrics():
    model = _model(kgraph)
    probabilities = model.predict(X, verbose=0)
    hits = (probabilities.argmax(-1) == Y)[X != 0]
    result = model.evaluate(X, Y, verbose=0, return_dict=True)
    np.testing.assert_allclose(result["accuracy"], hits.mean(), rtol=1e-6)


@pytest.mark.parametrize("sample_weight", [None, np.tile([[1.0], [3.0]], (1, 6))])
def test_masked_metrics_match_keras(sample_weight):
    keras = pytest.importorskip("keras")
    rng = np.random.default_rng(0)
    reference = _model(keras)
    weights = [rng.normal(size=w.shape).astype("float32") for w in reference.get_weights()]
    reference.set_weights(weights)
    ours = _model(kgraph, weights)
    expected = reference.evaluate(X, Y, sample_weight=sample_weight, verbose=0, return_dict=True)
    got = ours.evaluate(X, Y, sample_weight=sample_weight, verbose=0, return_dict=True)
    assert set(got) == set(expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, err_msg=name)
