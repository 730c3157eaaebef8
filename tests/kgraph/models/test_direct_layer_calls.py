"""A Functional model's step calls a Dense layer directly where the generic layer call has nothing to do: the
same outputs, gradients and losses as the full call, and the full call wherever something applies."""
import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.layers.core.dense import Dense


class CountingDense(Dense):
    calls = 0

    def call(self, inputs):
        CountingDense.calls += 1
        return super().call(inputs)


def _model(kind):
    inputs = kgraph.Input(shape=(6,), dtype="float64" if kind == "float64 input" else "float32")
    h = inputs
    if kind == "masked":
        h = layers.Masking(0.0)(h)
    if kind == "mixed":
        h = layers.Dense(5, activation="relu", dtype="mixed_float16")(h)
    elif kind == "activity regularizer":
        h = layers.Dense(5, activation="relu", activity_regularizer="l2")(h)
    elif kind == "subclass":
        h = CountingDense(5, activation="relu")(h)
    elif kind == "custom activation":
        h = layers.Dense(5, activation=lambda t: kgraph.ops.tanh(t) * 2.0)(h)
    else:
        h = layers.Dense(5, activation="relu")(h)
    h = layers.Dense(4, activation="tanh")(h)
    return kgraph.Model(inputs, layers.Dense(3, activation="softmax")(h))


def _step(model, x):
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        y = model(x, training=True)
        loss = kgraph.ops.sum(y * np.arange(3, dtype=y.dtype)) + sum(kgraph.ops.sum(t) for t in model.losses)
    grads = tape.gradient(loss, model.trainable_weights + [x])
    return [np.asarray(y), np.asarray(loss)] + [np.asarray(g) for g in grads]


@pytest.mark.parametrize("kind", ["plain", "float64 input", "masked", "mixed", "activity regularizer", "subclass",
                                  "custom activation"])
def test_direct_calls_equal_full_calls(monkeypatch, kind):
    kgraph.utils.set_random_seed(0)
    model = _model(kind)
    x = np.random.default_rng(0).standard_normal((8, 6)).astype("float64" if kind == "float64 input" else "float32")
    x[:2] = 0.0  # rows the Masking layer masks
    CountingDense.calls = 0
    direct = _step(model, x)
    assert CountingDense.calls == (1 if kind == "subclass" else 0)  # a subclass's own call still runs
    monkeypatch.setattr(Dense, "_direct_call", None)
    full = _step(model, x)
    for a, b in zip(direct, full):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_direct_calls_are_taken_only_where_nothing_else_applies():
    kgraph.utils.set_random_seed(0)
    plain = layers.Dense(3, activation="relu")
    x32 = np.ones((2, 4), "float32")
    assert plain._direct_call(x32) is None  # not built yet: the full call builds it
    plain(x32)
    assert plain._direct_call(x32) is not None
    assert plain._direct_call(np.ones((2, 4), "float64")) is None  # the full call casts it
    assert plain._direct_call(np.ones((2, 5), "float32")) is None  # the full call names the wrong width
    assert plain._direct_call([[1.0] * 4]) is None
    regularized = layers.Dense(3, activity_regularizer="l1")
    regularized(x32)
    assert regularized._direct_call(x32) is None
    with pytest.raises(ValueError, match="incompatible|expected"):
        model = kgraph.Sequential([kgraph.Input(shape=(4,)), layers.Dense(3)])
        model(np.ones((2, 5), "float32"))


def test_a_call_replaced_on_the_instance_is_honoured():
    kgraph.utils.set_random_seed(0)
    model = _model("plain")
    dense = model.layers[1]
    seen = []
    original = dense.call

    def spy(inputs):
        seen.append(inputs.shape)
        return original(inputs)
    dense.call = spy
    model(np.ones((2, 6), "float32"))
    assert seen == [(2, 6)]
