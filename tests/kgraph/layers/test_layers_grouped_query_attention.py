"""GroupQueryAttention: MultiHeadAttention with shared key/value heads, masks, gate, gradients, saving, Keras parity."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from tests.gradcheck import check_gradients, check_variable_gradients

RNG = np.random.default_rng(0)


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


def _randomized(layer, rng):
    layer.set_weights([w + 0.5 * rng.standard_normal(w.shape).astype(w.dtype) for w in layer.get_weights()])
    return layer.get_weights()


def _as_multi_head(gqa, weights, key_dim):
    """A MultiHeadAttention computing what ``gqa`` computes: its key and value heads repeated per group."""
    repeats = gqa.num_repeats
    mha = layers.MultiHeadAttention(gqa.num_query_heads, key_dim, use_bias=gqa.use_bias)
    if gqa.use_bias:
        wq, bq, wk, bk, wv, bv, wo, bo = weights
        converted = [wq, bq, wk.repeat(repeats, 1), bk.repeat(repeats, 0), wv.repeat(repeats, 1),
                     bv.repeat(repeats, 0), wo, bo]
    else:
        wq, wk, wv, wo = weights
        converted = [wq, wk.repeat(repeats, 1), wv.repeat(repeats, 1), wo]
    return mha, converted


@pytest.mark.parametrize("kwargs,call", [
    ({"num_query_heads": 4, "num_key_value_heads": 2}, {}),
    ({"num_query_heads": 6, "num_key_value_heads": 2, "use_bias": False}, {"use_causal_mask": True}),
    ({"num_query_heads": 3, "num_key_value_heads": 1}, {"attention_mask": RNG.random((2, 5, 4)) > 0.4}),
    ({"num_query_heads": 2, "num_key_value_heads": 2}, {"return_attention_scores": True})])
def test_equals_multi_head_attention_with_repeated_key_value_heads(kwargs, call):
    query, value, key = (RNG.standard_normal(s).astype("float32") for s in ((2, 5, 6), (2, 4, 7), (2, 4, 3)))
    gqa = layers.GroupQueryAttention(head_dim=3, **kwargs)
    gqa(query, value, key)
    weights = _randomized(gqa, RNG)
    mha, converted = _as_multi_head(gqa, weights, 3)
    mha(query, value, key)
    mha.set_weights(converted)
    expected, actual = mha(query, value, key, **call), gqa(query, value, key, **call)
    for e, a in zip(*((o if isinstance(o, tuple) else (o,)) for o in (expected, actual))):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_sliding_window_is_a_band_mask_and_the_gate_scales_each_head():
    x = RNG.standard_normal((2, 6, 4)).astype("float32")
    band = np.abs(np.arange(6)[:, None] - np.arange(6)[None, :]) < 2
    windowed = layers.GroupQueryAttention(2, 4, 2, sliding_window=2)
    windowed(x, x)
    weights = _randomized(windowed, RNG)
    plain = layers.GroupQueryAttention(2, 4, 2)
    plain(x, x)
    plain.set_weights(weights)
    np.testing.assert_allclose(windowed(x, x, use_causal_mask=True),
                               plain(x, x, attention_mask=np.tril(band)[None].repeat(2, 0)), rtol=1e-5, atol=1e-6)
    gated = layers.GroupQueryAttention(2, 4, 2, use_gate=True)
    gated(x, x)
    # Keras's paths: the sub-layers are built inside the layer's own scope, named as Keras's class.
    assert gated.name.startswith("grouped_query_attention")
    assert [w.path for w in gated.weights][4:6] == [f"{gated.name}/gate/kernel", f"{gated.name}/gate/bias"]
    gated_weights = _randomized(gated, RNG)
    gated.set_weights(gated_weights[:4] + [np.zeros_like(gated_weights[4]), np.full_like(gated_weights[5], -50.0)]
                      + gated_weights[6:])
    # A closed gate (sigmoid(-50) ~ 0) leaves only the output bias.
    np.testing.assert_allclose(gated(x, x), np.broadcast_to(gated_weights[-1], (2, 6, 4)), atol=1e-6)


def test_query_and_value_masks_come_from_the_graph():
    tokens = kgraph.Input((5,), dtype="int32")
    embedding = layers.Embedding(10, 4, mask_zero=True)
    attention = layers.GroupQueryAttention(2, 2, 1)
    h = embedding(tokens)
    out = attention(h, h)
    assert out._keras_mask is not None
    data = np.array([[1, 2, 3, 0, 0], [4, 0, 0, 0, 0]])
    vectors, keep = embedding(data), data != 0
    expected = attention(vectors, vectors, query_mask=keep, value_mask=keep)
    np.testing.assert_allclose(kgraph.Model(tokens, out).predict(data, verbose=0), expected, rtol=1e-6)
    # Eager arrays carry their masks too (Keras 3); np.asarray drops it.
    np.testing.assert_allclose(attention(vectors, vectors), expected, rtol=1e-6)
    assert not np.allclose(expected, attention(np.asarray(vectors), np.asarray(vectors)))


@pytest.mark.parametrize("kwargs,call", [({"use_gate": True}, {}), ({"sliding_window": 2}, {"use_causal_mask": True})])
def test_gradients_match_finite_differences(float64, kwargs, call):
    rng = np.random.default_rng(1)
    query, value = rng.standard_normal((1, 3, 4)), rng.standard_normal((1, 4, 3))
    layer = layers.GroupQueryAttention(2, 4, 2, **kwargs)
    layer(query, value)
    check_gradients(lambda xs: layer(xs[0], xs[1], **call), [query, value])
    check_variable_gradients(lambda: layer(query, value, **call), layer.trainable_weights)


def test_model_trains_saves_loads_and_config_round_trips(tmp_path):
    x, memory = kgraph.Input((5, 6), name="x"), kgraph.Input((4, 3), name="memory")
    attention = layers.GroupQueryAttention(3, 4, 2, dropout=0.1, use_gate=True, sliding_window=3, seed=1)
    model = kgraph.Model([x, memory], attention(x, memory))
    data = [RNG.standard_normal((4, 5, 6)).astype("float32"), RNG.standard_normal((4, 4, 3)).astype("float32")]
    model.compile(optimizer="adam", loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    model.fit(data, RNG.standard_normal((4, 5, 6)).astype("float32"), epochs=1, batch_size=2, verbose=0)
    assert all(not np.array_equal(a, w.numpy()) for a, w in zip(before, model.trainable_weights))
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    np.testing.assert_array_equal(loaded.predict(data, verbose=0), model.predict(data, verbose=0))
    config = attention.get_config()
    assert layers.GroupQueryAttention.from_config(config).get_config() == config


@pytest.mark.parametrize("make,message", [
    (lambda: layers.GroupQueryAttention(4, 6, 4), "must be divisible by `num_key_value_heads`"),
    (lambda: layers.GroupQueryAttention(0, 2, 1), "`head_dim` to be a positive integer"),
    (lambda: layers.GroupQueryAttention(2, 2, 1, sliding_window=0), "`sliding_window` must be `None`"),
    (lambda: layers.GroupQueryAttention(2, 2, 1, dropout=0.1, flash_attention=True), "Dropout is not supported"),
    (lambda: layers.GroupQueryAttention(2, 2, 1)(np.zeros((1, 3), "float32"), np.zeros((1, 3), "float32")),
     "expects `query` of shape \\(batch, time, features\\)")])
def test_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("kwargs,call", [
    ({"head_dim": 4, "num_query_heads": 4, "num_key_value_heads": 2}, {"return_attention_scores": True}),
    ({"head_dim": 3, "num_query_heads": 6, "num_key_value_heads": 3, "use_gate": True, "sliding_window": 2},
     {"use_causal_mask": True}),
    # Rows of fully masked queries are zero probabilities on Keras's explicit path (the one that returns the
    # scores); its fused path without scores leaves them to the backend's kernel (uniform with torch).
    ({"head_dim": 2, "num_query_heads": 2, "num_key_value_heads": 1, "use_bias": False},
     {"query_mask": np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool),
      "value_mask": np.array([[1, 1, 0, 0], [1, 1, 1, 0]], bool), "return_attention_scores": True})])
def test_keras_parity_on_copied_weights(keras, kwargs, call):
    query, value, key = (RNG.standard_normal(s).astype("float32") for s in ((2, 5, 6), (2, 4, 7), (2, 4, 3)))
    reference = keras.layers.GroupQueryAttention(**kwargs)
    reference(query, value, key)
    reference.set_weights([0.5 * RNG.standard_normal(w.shape).astype("float32") for w in reference.get_weights()])
    layer = layers.GroupQueryAttention(**kwargs)
    layer(query, value, key)
    assert [w.shape for w in layer.weights] == [tuple(w.shape) for w in reference.weights]
    layer.set_weights(reference.get_weights())
    expected, actual = reference(query, value, key, **call), layer(query, value, key, **call)
    for e, a in zip(*((o if isinstance(o, tuple) else (o,)) for o in (expected, actual))):
        np.testing.assert_allclose(a, keras.ops.convert_to_numpy(e), rtol=1e-5, atol=1e-5)
    config, expected_config = layer.get_config(), reference.get_config()
    assert {k: config[k] for k in config if k not in ("name", "dtype") and "initializer" not in k} == {
        k: expected_config[k] for k in config if k not in ("name", "dtype") and "initializer" not in k}
