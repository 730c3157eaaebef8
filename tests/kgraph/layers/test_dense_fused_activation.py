"""A Dense layer with a relu, sigmoid, tanh or softmax activation records its product and its activation as one
op (``ops.nn.dense_activation``) in a model's step: the same values, gradients, second-order gradients and
trained weights as the two ops recorded one after the other."""
import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.backend.autodiff import GradientTape
from kgraph.layers.core import dense as dense_module

ACTIVATIONS = ["relu", "sigmoid", "tanh", "softmax"]


def _model(activation, dtype="float32", seed=3):
    kgraph.utils.set_random_seed(seed)
    inputs = kgraph.Input((6,), dtype=dtype)
    h = layers.Dense(5, activation=activation, dtype=dtype)(inputs)
    out = layers.Dense(4, activation="softmax", dtype=dtype)(h)
    return kgraph.Model(inputs, out)


def _forward_and_gradients(model, x):
    with GradientTape() as tape:
        y = model(x, training=True)
        records = len(tape._records)
        loss = kgraph.ops.sum(kgraph.ops.multiply(y, np.arange(4, dtype=y.dtype)))
    return np.asarray(y), [np.asarray(g) for g in tape.gradient(loss, model.trainable_weights)], records


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_values_and_gradients_equal_the_two_ops(activation, dtype, monkeypatch):
    x = np.random.default_rng(0).normal(size=(8, 6)).astype(dtype)
    model = _model(activation, dtype)
    y, grads, records = _forward_and_gradients(model, x)
    monkeypatch.setattr(dense_module, "_FUSED_ACTIVATIONS", {})
    y2, grads2, records2 = _forward_and_gradients(model, x)
    assert (records, records2) == (2, 4)  # one record per layer against two: the fused op really ran
    np.testing.assert_array_equal(y, y2, strict=True)
    for g, g2 in zip(grads, grads2):
        np.testing.assert_array_equal(g, g2, strict=True)


def _train(x, y):
    model = _model("relu")
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False)
    return history.history, model.get_weights()


def test_training_is_the_same_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(96, 6)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + 2 * (x[:, 1] > 0)
    history, weights = _train(x, y)
    monkeypatch.setattr(dense_module, "_FUSED_ACTIVATIONS", {})
    history2, weights2 = _train(x, y)
    assert history == history2
    for w, w2 in zip(weights, weights2):
        np.testing.assert_array_equal(w, w2, strict=True)
    assert history["loss"][-1] < history["loss"][0]


def _weighted(y):
    """A score of the outputs whose gradient is not zero (a softmax's outputs sum to one)."""
    return kgraph.ops.sum(kgraph.ops.multiply(y, np.arange(4, dtype=y.dtype)))


def _penalty_gradients(model, x, outer_first):
    """d/dweights of a gradient penalty (the squared norm of d output / d input), as WGAN-GP takes it."""
    weights = model.trainable_weights
    if outer_first:
        with GradientTape() as outer:
            with GradientTape() as inner:
                inner.watch(x)
                score = _weighted(model(x, training=True))
            (d_x,) = inner.gradient(score, [x])
            penalty = kgraph.ops.sum(kgraph.ops.square(d_x))
    else:  # the outer tape starts after the forward pass: the inner tape's records carry the second order
        with GradientTape(persistent=True) as inner:
            inner.watch(x)
            score = _weighted(model(x, training=True))
        with GradientTape() as outer:
            outer.watch(x)
            for w in weights:
                outer.watch(w)
            (d_x,) = inner.gradient(score, [x])
            penalty = kgraph.ops.sum(kgraph.ops.square(d_x))
    return [None if g is None else np.asarray(g) for g in outer.gradient(penalty, weights)]


@pytest.mark.parametrize("outer_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "sigmoid", "tanh", "softmax"])
def test_second_order_gradients_equal_the_two_ops(activation, outer_first, monkeypatch):
    x = np.random.default_rng(2).normal(size=(5, 6))
    kgraph.backend.set_floatx("float64")
    try:
        model = _model(activation, "float64")
        fused = _penalty_gradients(model, x, outer_first)
        monkeypatch.setattr(dense_module, "_FUSED_ACTIVATIONS", {})
        plain = _penalty_gradients(model, x, outer_first)
    finally:
        kgraph.backend.set_floatx("float32")
    assert [g is None for g in fused] == [g is None for g in plain]
    assert sum(np.abs(g).max() > 1e-6 for g in fused if g is not None) >= 2
    for g, g2 in zip(fused, plain):
        if g is not None:
            np.testing.assert_allclose(g, g2, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("activation", ["gelu", "elu", lambda t: kgraph.ops.relu(t) * 2.0])
def test_other_activations_run_as_two_ops(activation):
    x = np.random.default_rng(4).normal(size=(3, 6)).astype("float32")
    model = _model(activation)
    dense = model.layers[1]
    hidden = np.asarray(dense.activation(x @ dense.kernel.numpy() + dense.bias.numpy()))
    head = model.layers[2]
    logits = hidden @ head.kernel.numpy() + head.bias.numpy()
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    y, grads, records = _forward_and_gradients(model, x)
    assert records >= 3  # the first layer's product and activation (one op or more), the head's fused op
    np.testing.assert_allclose(y, expected / expected.sum(-1, keepdims=True), rtol=1e-5)
    assert all(np.isfinite(g).all() for g in grads)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, units", [((32, 6), 64), ((4, 16, 6), 64), ((1500, 6), 1)])
def test_relu_bias_in_one_compiled_pass_equals_the_two_ops(shape, units, dtype):
    """Large enough for the compiled loops (where numba is installed): the bias and the relu in one pass, and
    relu's VJP, against ``dense`` then ``relu`` recorded apart; upstream cotangents that the loop does not take
    (another dtype, not C-ordered) go relu's own way, with the same values."""
    from kgraph.ops.kernels import compiled
    compiled.kernels(1 << 30)  # loads numba where it is installed (a relu alone never does)
    rng = np.random.default_rng(1)
    x = rng.normal(size=shape).astype(dtype)
    kernel = rng.normal(size=(6, units)).astype(dtype)
    bias = rng.normal(size=(units,)).astype(dtype)
    out, vjp = dense_module.dense_activation._kgraph_primitive.fn(x, kernel, bias, dense_module.relu)
    z, dense_vjp = kgraph.ops.dense._kgraph_primitive.fn(x, kernel, bias)
    expected, relu_vjp = dense_module.relu._kgraph_primitive.fn(z)
    np.testing.assert_array_equal(out, expected, strict=True)
    upstream = rng.normal(size=out.shape).astype(dtype)
    for g in (upstream, upstream.astype("float64" if dtype == "float32" else "float32"),
              np.asfortranarray(upstream) if len(shape) == 2 else upstream[..., ::-1].copy()[..., ::-1]):
        got = [c() if callable(c) else c for c in vjp(g)]  # (the bias gradient comes summed with relu's)
        g_z = relu_vjp(g)
        want = [c() for c in dense_vjp(g_z if g_z.dtype == z.dtype else g_z.astype(z.dtype))]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b, strict=True)
    if units > 1:  # the compiled loop's row sums were checked against NumPy's and found equal
        from kgraph.ops.nn import _ROW_SUMS
        assert _ROW_SUMS[(out.shape, np.dtype(dtype))] is True
