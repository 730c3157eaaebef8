"""MultiHeadAttention: Keras equations, Keras parity, masks, gradients, dropout, errors."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers, ops
from tests.gradcheck import check_gradients, check_variable_gradients


def attention_reference(query, value, key, weights, num_heads, mask=None, causal=False, use_bias=True,
                        fused=False):
    """Keras's MultiHeadAttention from its equations, in float64 NumPy. A fully masked query row gets zero
    probabilities in Keras's masked softmax, and uniform ones in its fused dot-product attention (``fused``: the
    path Keras takes without dropout when the scores are not returned)."""
    if use_bias:
        wq, bq, wk, bk, wv, bv, wo, bo = weights
    else:
        wq, wk, wv, wo = weights
        bq, bk, bv, bo = (np.zeros(w.shape[1:] if w is not wo else w.shape[2:]) for w in (wq, wk, wv, wo))
    key_dim = wq.shape[-1]
    q = (np.einsum("btd,dnk->bntk", query, wq) + np.expand_dims(bq, 1)) / np.sqrt(key_dim)
    k = np.einsum("bsd,dnk->bnsk", key, wk) + np.expand_dims(bk, 1)
    v = np.einsum("bsd,dnk->bnsk", value, wv) + np.expand_dims(bv, 1)
    scores = q @ np.swapaxes(k, -1, -2)
    keep = np.ones(scores.shape[-2:], bool)[None, None]
    if mask is not None:
        keep = keep & mask.astype(bool)[:, None]
    if causal:
        keep = keep & np.tril(np.ones(scores.shape[-2:], bool))
    scores = np.where(keep, scores, -1e9)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    kept = keep | ~keep.any(-1, keepdims=True) if fused else keep
    probabilities = np.where(kept, e / e.sum(-1, keepdims=True), 0.0)
    context = probabilities @ v
    return np.einsum("bntk,nko->bto", context, wo.reshape(wo.shape[0], wo.shape[1], -1)) + np.ravel(bo), \
        probabilities


def _randomize(layer, rng):
    layer.set_weights([w + 0.5 * rng.standard_normal(w.shape).astype(w.dtype) for w in layer.get_weights()])
    return [w.astype(np.float64) for w in layer.get_weights()]


def _inputs(rng, dtype="float32"):
    query = rng.standard_normal((2, 4, 6)).astype(dtype)
    value = rng.standard_normal((2, 5, 3)).astype(dtype)
    key = rng.standard_normal((2, 5, 7)).astype(dtype)
    mask = rng.random((2, 4, 5)) > 0.3
    mask[0, 1] = False  # a fully masked query row
    return query, value, key, mask


@pytest.mark.parametrize("kwargs,call", [
    ({}, {}),
    ({"value_dim": 2, "output_shape": 8}, {"key": True}),
    ({}, {"attention_mask": True}),
    ({}, {"use_causal_mask": True}),
    ({"use_bias": False}, {"attention_mask": True, "use_causal_mask": True}),
])
def test_forward_matches_keras_equations(kwargs, call):
    rng = np.random.default_rng(0)
    query, value, key, mask = _inputs(rng)
    arguments = {"key": key if call.get("key") else None,
                 "attention_mask": mask if call.get("attention_mask") else None,
                 "use_causal_mask": call.get("use_causal_mask", False)}
    layer = layers.MultiHeadAttention(2, 3, **kwargs)
    layer(query, value, **arguments)
    weights = _randomize(layer, rng)
    output, scores = layer(query, value, return_attention_scores=True, **arguments)
    expected, expected_scores = attention_reference(
        query.astype(np.float64), value.astype(np.float64),
        (key if call.get("key") else value).astype(np.float64), weights, 2,
        mask=arguments["attention_mask"], causal=arguments["use_causal_mask"], use_bias=kwargs.get("use_bias", True))
    np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-6)
    fused, _ = attention_reference(
        query.astype(np.float64), value.astype(np.float64),
        (key if call.get("key") else value).astype(np.float64), weights, 2,
        mask=arguments["attention_mask"], causal=arguments["use_causal_mask"], use_bias=kwargs.get("use_bias", True),
        fused=True)
    np.testing.assert_allclose(layer(query, value, **arguments), fused, rtol=1e-5, atol=1e-5)


def test_weight_layout_matches_keras():
    layer = layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5, name="mha")
    layer(np.zeros((1, 2, 6), "float32"), np.zeros((1, 3, 7), "float32"))
    assert [(w.path, w.shape) for w in layer.weights] == [
        ("mha/query_kernel", (6, 2, 3)), ("mha/query_bias", (2, 3)),
        ("mha/key_kernel", (7, 2, 3)), ("mha/key_bias", (2, 3)),
        ("mha/value_kernel", (7, 2, 4)), ("mha/value_bias", (2, 4)),
        ("mha/attention_output_kernel", (2, 4, 5)), ("mha/attention_output_bias", (5,))]


def test_symbolic_model_with_mask_input_and_scores():
    tokens = kgraph.Input(shape=(None, 8), name="tokens")
    mask = kgraph.Input(shape=(None, None), name="mask")
    mha = layers.MultiHeadAttention(2, 4)
    attended, scores = mha(tokens, tokens, attention_mask=mask, return_attention_scores=True)
    assert attended.shape == (None, None, 8) and scores.shape == (None, 2, None, None)
    causal = layers.MultiHeadAttention(2, 4)(attended, attended, use_causal_mask=True)
    model = kgraph.Model([tokens, mask], [layers.Add()([attended, causal]), scores])
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 8)).astype("float32")
    m = (rng.random((3, 5, 5)) > 0.2).astype("float32")
    out, s = model([x, m])
    assert out.shape == (3, 5, 8) and s.shape == (3, 2, 5, 5)
    np.testing.assert_array_equal(s[m[:, None].repeat(2, 1) == 0], 0)
    np.testing.assert_allclose(model([x, m])[0], out, rtol=1e-6)


def test_training_updates_weights():
    tokens = kgraph.Input(shape=(None, 4))
    y = layers.MultiHeadAttention(2, 2, dropout=0.1)(tokens, tokens, use_causal_mask=True)
    model = kgraph.Model(tokens, layers.Dense(1)(y))
    rng = np.random.default_rng(2)
    x, t = rng.standard_normal((8, 3, 4)).astype("float32"), rng.standard_normal((8, 3, 1)).astype("float32")
    before = [w.copy() for w in model.get_weights()]
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, t, epochs=1, batch_size=4, verbose=0)
    assert all(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))


def test_dropout_only_in_training():
    rng = np.random.default_rng(3)
    query, value, _, _ = _inputs(rng)
    layer = layers.MultiHeadAttention(2, 3, dropout=0.5, seed=4)
    inference, scores = layer(query, value, return_attention_scores=True)
    np.testing.assert_allclose(layer(query, value, training=False), inference)
    trained, trained_scores = layer(query, value, training=True, return_attention_scores=True)
    assert not np.allclose(trained, inference)
    # The returned scores are the probabilities before dropout, as in Keras.
    np.testing.assert_allclose(trained_scores, scores, rtol=1e-6)


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


@pytest.mark.parametrize("arguments", [
    {},
    {"attention_mask": True},
    {"use_causal_mask": True, "key": True},
    {"attention_mask": True, "use_causal_mask": True},
])
def test_gradients_match_finite_differences(float64, arguments):
    rng = np.random.default_rng(5)
    query, value, key, mask = _inputs(rng, "float64")
    query, value, key, mask = query[:, :3, :3], value[:, :3, :2], key[:, :3, :2], mask[:, :3, :3]
    call = {"attention_mask": mask if arguments.get("attention_mask") else None,
            "use_causal_mask": arguments.get("use_causal_mask", False)}
    layer = layers.MultiHeadAttention(2, 2, output_shape=2)
    use_key = arguments.get("key", False)
    layer(query, value, key if use_key else None, **call)
    _randomize(layer, rng)

    def total(q, v, k):
        output, scores = layer(q, v, k, return_attention_scores=True, **call)
        return ops.add(ops.sum(output), ops.sum(ops.multiply(scores, 3.0)))
    check_variable_gradients(lambda: total(query, value, key if use_key else None), layer.trainable_weights)
    if use_key:
        check_gradients(lambda xs: total(*xs), [query, value, key])
    else:
        check_gradients(lambda xs: total(xs[0], xs[1], None), [query, value])


def test_errors_name_the_layer_and_the_expectation():
    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ValueError, match="'att'.*`query` of shape \\(batch, time, features\\).*\\(2, 4\\)"):
        layers.MultiHeadAttention(2, 2, name="att")(np.zeros((2, 4), "float32"), x)
    with pytest.raises(ValueError, match="expects `value`"):
        layers.MultiHeadAttention(2, 2)(x)
    with pytest.raises(ValueError, match="positive integer.*num_heads=0"):
        layers.MultiHeadAttention(0, 2)
    with pytest.raises(ValueError, match="attention_axes=None"):
        layers.MultiHeadAttention(2, 2, attention_axes=(1, 2))
    with pytest.raises(ValueError, match=r"`attention_mask` of shape \(2, 3, 3\).*\(1, 2, 3, 3\)"):
        layers.MultiHeadAttention(2, 2)(x, x, attention_mask=np.ones((1, 2, 3, 3)))
    with pytest.raises(ValueError, match=r"`attention_mask` of shape \(2, 3, 3\).*\(2, 3, 4\)"):
        layers.MultiHeadAttention(2, 2)(x, x, attention_mask=np.ones((2, 3, 4)))


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("kwargs,call", [({}, {"use_causal_mask": True}),
                                         ({"value_dim": 2, "output_shape": 5}, {"attention_mask": True})])
def test_keras_weights_load_verbatim(keras, kwargs, call):
    rng = np.random.default_rng(6)
    query, value, _, mask = _inputs(rng)
    arguments = {"attention_mask": mask if call.get("attention_mask") else None,
                 "use_causal_mask": call.get("use_causal_mask", False)}
    reference = keras.layers.MultiHeadAttention(2, 3, **kwargs)
    reference(query, value, **arguments)
    reference.set_weights([w + 0.3 * rng.standard_normal(w.shape).astype("float32")
                           for w in reference.get_weights()])
    layer = layers.MultiHeadAttention(2, 3, **kwargs)
    layer(query, value, **arguments)
    layer.set_weights(reference.get_weights())
    # Keras computes explicit scores (its documented masked softmax) when asked to return them.
    expected, expected_scores = reference(query, value, return_attention_scores=True, **arguments)
    output, scores = layer(query, value, return_attention_scores=True, **arguments)
    np.testing.assert_allclose(output, keras.ops.convert_to_numpy(expected), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores, keras.ops.convert_to_numpy(expected_scores), rtol=1e-5, atol=1e-6)


def test_model_with_attention_and_recurrent_layers_saves_and_loads(tmp_path):
    tokens = kgraph.Input(shape=(None, 4))
    mask = kgraph.Input(shape=(None, None))
    h = layers.Bidirectional(layers.LSTM(3, return_sequences=True), merge_mode="sum")(tokens)
    h2 = layers.GRU(3, return_sequences=True, reset_after=False)(h)
    attended, scores = layers.MultiHeadAttention(2, 2)(h2, h, h2, attention_mask=mask, return_attention_scores=True)
    model = kgraph.Model([tokens, mask], [layers.SimpleRNN(2)(attended), scores])
    rng = np.random.default_rng(7)
    x, m = rng.standard_normal((2, 5, 4)).astype("float32"), (rng.random((2, 5, 5)) > 0.3).astype("float32")
    expected = model([x, m])
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = kgraph.models.load_model(path)
    for a, b in zip(loaded([x, m]), expected):
        np.testing.assert_array_equal(a, b)
