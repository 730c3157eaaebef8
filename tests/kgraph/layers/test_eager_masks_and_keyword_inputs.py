"""Keras 3's call conventions: the first input given by keyword, masks carried by eager arrays (``_keras_mask``)
from layer to layer, and the mask reaching a custom layer's output-spec inference; compared with Keras where it is
installed."""
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import layers, ops

PADDED = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]])


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


class Gate(layers.Layer):
    """``source * source_mask`` (a second tensor named after the first, as MultiHeadAttention's masks are)."""

    def call(self, source, source_mask=None):
        return source if source_mask is None else ops.multiply(source, ops.cast(source_mask, source.dtype))

    def compute_output_shape(self, source_shape):
        return source_shape


class MaskedMean(layers.Layer):
    """The mean over time of the unmasked steps; it needs the mask, so its output spec needs it too."""

    def call(self, inputs, mask=None):
        weights = ops.expand_dims(ops.cast(mask, inputs.dtype), -1)
        return ops.divide(ops.sum(ops.multiply(inputs, weights), axis=1), ops.sum(weights, axis=1))


def test_first_input_by_keyword_eagerly_and_symbolically():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    m = np.array([[1, 0, 1], [0, 1, 1]], dtype="float32")
    gate = Gate()
    np.testing.assert_array_equal(gate(source=x, source_mask=m), x * m)
    source, mask = kgraph.Input((3,), name="source"), kgraph.Input((3,), name="mask")
    out = gate(source=source, source_mask=mask)
    assert out.shape == (None, 3)
    model = kgraph.Model([source, mask], out)
    np.testing.assert_array_equal(model.predict([x, m], verbose=0), x * m)
    np.testing.assert_array_equal(layers.Dense(2, kernel_initializer="ones")(inputs=x), x.sum(1, keepdims=True) * [1, 1])
    with pytest.raises(ValueError, match="called without inputs.*`source`"):
        gate(source_mask=m)


def test_first_input_by_keyword_matches_keras(keras):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    dense, theirs = layers.Dense(2), keras.layers.Dense(2)
    theirs.build((None, 3))
    dense.build((None, 3))
    dense.set_weights(theirs.get_weights())
    np.testing.assert_allclose(dense(inputs=x), keras.ops.convert_to_numpy(theirs(inputs=x)), rtol=1e-6)


def test_an_eager_embedding_output_carries_its_mask():
    embedding = layers.Embedding(6, 3, mask_zero=True)
    out = embedding(PADDED)
    np.testing.assert_array_equal(out._keras_mask, PADDED != 0)
    assert not hasattr(np.asarray(out), "_keras_mask")  # the plain array behind it
    assert not hasattr(layers.Embedding(6, 3)(PADDED), "_keras_mask")
    keras = pytest.importorskip("keras")
    theirs = keras.layers.Embedding(6, 3, mask_zero=True)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(theirs(PADDED)._keras_mask), out._keras_mask)


def test_eager_masks_pass_through_masking_layers_and_stop_at_others():
    h = layers.Embedding(6, 3, mask_zero=True)(PADDED)
    kept = layers.Dropout(0.5)(h)
    np.testing.assert_array_equal(kept._keras_mask, PADDED != 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flat = layers.Flatten()(h)
    assert not hasattr(flat, "_keras_mask") or flat._keras_mask is None
    assert any("does not support masking" in str(w.message) for w in caught)
    gru = layers.GRU(2)
    everything = np.ones_like(PADDED, dtype=bool)
    np.testing.assert_allclose(gru(h, mask=everything), gru(np.asarray(h)), rtol=1e-6)  # a given mask wins
    assert not np.allclose(gru(h), gru(np.asarray(h)))


def _tagger(lib):
    class Tagger(lib.Model):
        def __init__(self):
            super().__init__()
            self.embed = lib.layers.Embedding(10, 4, mask_zero=True)
            self.rnn = lib.layers.LSTM(3)

        def call(self, x):
            return self.rnn(self.embed(x))
    return Tagger()


def test_subclassed_embedding_lstm_ignores_padding():
    model = _tagger(kgraph)
    padded = model(PADDED)
    for row, length in zip(range(2), (3, 2)):
        np.testing.assert_allclose(padded[row], model(PADDED[row:row + 1, :length])[0], rtol=0, atol=1e-7)
    model.compile(optimizer="sgd", loss="mse")
    np.testing.assert_allclose(model.predict(PADDED, verbose=0), padded, atol=1e-7)


def test_subclassed_embedding_lstm_matches_keras(keras):
    ours, theirs = _tagger(kgraph), _tagger(keras)
    ours(PADDED)
    theirs(PADDED)
    rng = np.random.default_rng(2)
    ours.set_weights([rng.standard_normal(w.shape).astype("float32") for w in ours.get_weights()])
    theirs.set_weights(ours.get_weights())
    expected = keras.ops.convert_to_numpy(theirs(PADDED))
    np.testing.assert_allclose(ours(PADDED), expected, rtol=1e-5, atol=1e-6)
    unpadded = keras.ops.convert_to_numpy(theirs(PADDED[:1, :3]))
    np.testing.assert_allclose(expected[:1], unpadded, atol=1e-6)  # Keras: padding changes nothing either


def test_output_spec_inference_of_a_layer_taking_mask_gets_the_mask():
    def build(lib, mean_layer):
        ids = lib.Input((5,), dtype="int32")
        return lib.Model(ids, mean_layer(lib.layers.Embedding(6, 3, mask_zero=True)(ids)))
    ours = build(kgraph, MaskedMean())
    assert ours.outputs[0].shape == (None, 3)
    table = ours.get_weights()[0]
    np.testing.assert_allclose(ours.predict(PADDED, verbose=0), [table[[1, 2, 3]].mean(0), table[[4, 5]].mean(0)],
                               rtol=1e-6)
    keras = pytest.importorskip("keras")

    class KerasMaskedMean(keras.layers.Layer):
        def call(self, inputs, mask=None):
            weights = keras.ops.expand_dims(keras.ops.cast(mask, inputs.dtype), -1)
            return keras.ops.sum(inputs * weights, axis=1) / keras.ops.sum(weights, axis=1)
    theirs = build(keras, KerasMaskedMean())
    theirs.set_weights(ours.get_weights())
    expected = keras.ops.convert_to_numpy(theirs(PADDED))
    np.testing.assert_allclose(ours.predict(PADDED, verbose=0), expected, rtol=1e-6)
    np.testing.assert_allclose(MaskedMean()(layers.Embedding(6, 3, mask_zero=True, weights=ours.get_weights())(
        PADDED)), expected, rtol=1e-6)
