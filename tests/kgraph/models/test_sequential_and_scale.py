"""Sequential building, and graphs far deeper than Keras's recursion limit."""
import time

import numpy as np
import pytest

import kgraph
from kgraph import layers


def test_sequential_with_input_builds_incrementally():
    model = kgraph.Sequential([kgraph.Input(shape=(4,)), layers.Dense(3), layers.Dense(2)])
    assert [type(l).__name__ for l in model.layers] == ["Dense", "Dense"]
    assert model.outputs[0].shape == (None, 2)
    assert all(len(l.inbound_nodes) == 1 for l in model.layers)
    assert model.predict(np.ones((5, 4), "float32"), verbose=0).shape == (5, 2)


def test_sequential_builds_lazily_from_data():
    model = kgraph.Sequential()
    model.add(layers.Dense(3, activation="relu"))
    model.add(layers.Dense(1))
    assert not model.layers[0].built
    out = model(np.ones((2, 5), "float32"))
    assert out.shape == (2, 1)
    assert model.layers[0].kernel.shape == (5, 3)
    assert model.inputs[0].shape == (None, 5)


def test_sequential_input_shape_argument():
    model = kgraph.Sequential([layers.Dense(2, input_shape=(3,))])
    assert model.inputs[0].shape == (None, 3)


def test_thousand_adds_leave_one_node_each():
    model = kgraph.Sequential([kgraph.Input(shape=(2,))])
    for _ in range(1000):
        model.add(layers.Activation("linear"))
    assert all(len(layer.inbound_nodes) == 1 for layer in model.layers)
    assert len(model.layers) == 1000
    assert model.predict(np.ones((1, 2), "float32"), verbose=0).shape == (1, 2)
    assert all(len(layer.inbound_nodes) == 1 for layer in model.layers)


def test_sequential_errors():
    model = kgraph.Sequential([layers.Dense(2, name="a")])
    with pytest.raises(ValueError, match="unique names"):
        model.add(layers.Dense(2, name="a"))
    with pytest.raises(TypeError, match="Only instances of `kgraph.Layer`"):
        model.add("dense")
    with pytest.raises(ValueError, match="not been built"):
        _ = model.functional


def test_sequential_pop():
    model = kgraph.Sequential([kgraph.Input(shape=(2,)), layers.Dense(3), layers.Dense(4)])
    model.pop()
    assert model.outputs[0].shape == (None, 3)


def test_hundred_thousand_layer_chain_builds_and_runs():
    x = kgraph.Input(shape=(1,))
    h = x
    for _ in range(100_000):
        h = layers.Identity()(h)
    start = time.perf_counter()
    model = kgraph.Model(x, h)
    assert len(model.layers) == 100_001
    assert max(model.nodes_by_depth) == 100_000
    out = model.predict(np.array([[3.0]], "float32"), verbose=0)
    np.testing.assert_array_equal(out, [[3.0]])
    assert time.perf_counter() - start < 120  # a generous bound: this graph only has to finish


def test_sequential_without_input_shape_compiles_and_learns_from_its_first_step():
    model = kgraph.Sequential([layers.Dense(8, activation="tanh"), layers.Dense(1)])
    model.compile(optimizer=kgraph.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).standard_normal((64, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    history = model.fit(x, y, epochs=3, batch_size=64, verbose=0)
    losses = history.history["loss"]
    assert losses[1] < losses[0] and losses[2] < losses[1]


def test_a_sequential_with_a_known_input_is_built_as_it_grows_as_in_keras(tmp_path):
    model = kgraph.Sequential([kgraph.Input((8,))])
    assert not model.built
    model.add(kgraph.layers.Dense(3))
    assert model.built
    assert not kgraph.Sequential([kgraph.layers.Dense(3)]).built
    model.save(str(tmp_path / "m.keras"))
    assert kgraph.models.load_model(str(tmp_path / "m.keras")).built
