"""The symbolic graph: KerasTensor, Node, Layer calls, Functional maps and depths."""
import numpy as np
import pytest

import kgraph
from kgraph import layers


def test_input_creates_input_layer_with_one_node():
    x = kgraph.Input(shape=(3,), name="x")
    assert x.shape == (None, 3)
    assert x.dtype == "float32"
    layer, node_index, tensor_index = x._keras_history
    assert isinstance(layer, kgraph.layers.InputLayer)
    assert (node_index, tensor_index) == (0, 0)
    assert x._keras_history == (layer, 0, 0)
    assert layer.inbound_nodes[0].output_tensors == [x]
    assert layer.name == "x"


def test_input_batch_size_and_dtype():
    x = kgraph.Input(shape=(2, 5), batch_size=4, dtype="int32")
    assert x.shape == (4, 2, 5)
    assert x.dtype == "int32"


def test_shared_dense_relationships_match_keras_notes():
    a = kgraph.Input(shape=(32,), name="a")
    b = kgraph.Input(shape=(32,), name="b")
    a_layer, b_layer = a._keras_history.layer, b._keras_history.layer
    dense = layers.Dense(16, name="dense_shared")
    a_2 = dense(a)
    b_2 = dense(b)
    assert len(dense.inbound_nodes) == 2
    assert len(dense.outbound_nodes) == 0
    assert dense._inbound_nodes is dense.inbound_nodes
    assert dense._outbound_nodes is dense.outbound_nodes
    assert dense.inbound_nodes[0].inbound_layers == [a_layer]
    assert dense.inbound_nodes[0].outbound_layer is dense
    assert dense.inbound_nodes[0].input_tensors == [a]
    assert dense.inbound_nodes[0].output_tensors == [a_2]
    assert dense.inbound_nodes[1].inbound_layers == [b_layer]
    assert dense.inbound_nodes[1].input_tensors == [b]
    assert dense.inbound_nodes[1].output_tensors == [b_2]
    assert dense.inbound_nodes[0].input_shapes == [(None, 32)]
    assert dense.inbound_nodes[0].output_shapes == [(None, 16)]
    assert a_layer.outbound_nodes == [dense.inbound_nodes[0]]
    assert a_2._keras_history == (dense, 0, 0)
    assert b_2._keras_history == (dense, 1, 0)


def _assert_invariant(model):
    for nodes in model.nodes_by_depth.values():
        for node in nodes:
            for i, t in enumerate(node.input_tensors):
                produced = node.inbound_layers[i].inbound_nodes[node.node_indices[i]]
                assert produced.output_tensors[node.tensor_indices[i]] is t


def test_node_arguments_and_config():
    x = kgraph.Input(shape=(4,), name="inp")
    drop = layers.Dropout(0.5, name="drop")
    y = drop(x, training=True)
    node = drop.inbound_nodes[0]
    assert node.arguments == {"training": True}
    assert node.get_config() == [["inp", 0, 0, {"training": True}]]
    assert y.shape == (None, 4)


def test_diamond_depths():
    x = kgraph.Input(shape=(4,), name="in")
    left = layers.Dense(4, name="left")(x)
    right = layers.Dense(4, name="right")(layers.Dense(4, name="right_pre")(x))
    out = layers.Add(name="sum")([left, right])
    model = kgraph.Model(x, out)
    depth_of = {layer.name: d for d, ls in model.layers_by_depth.items() for layer in ls}
    assert depth_of == {"sum": 0, "left": 1, "right": 1, "right_pre": 2, "in": 3}
    assert [n.outbound_layer.name for n in model.nodes_by_depth[1]] == ["left", "right"] or \
        [n.outbound_layer.name for n in model.nodes_by_depth[1]] == ["right", "left"]
    assert model.layers[0].name == "in"
    assert [layer.name for layer in model.layers][-1] == "sum"
    _assert_invariant(model)


def test_shared_layer_depth_is_its_deepest_node():
    x = kgraph.Input(shape=(4,), name="x")
    shared = layers.Dense(4, name="shared")
    h = shared(x)
    h2 = layers.Dense(4, name="mid")(h)
    out = shared(h2)
    model = kgraph.Model(x, out)
    depth_of = {layer.name: d for d, ls in model.layers_by_depth.items() for layer in ls}
    assert depth_of["shared"] > depth_of["mid"]
    assert depth_of["x"] > depth_of["shared"]
    _assert_invariant(model)
    data = np.ones((2, 4), "float32")
    k, b = shared.kernel.value, shared.bias.value
    k2, b2 = model.get_layer("mid").kernel.value, model.get_layer("mid").bias.value
    expected = ((data @ k + b) @ k2 + b2) @ k + b
    np.testing.assert_allclose(model.predict(data, verbose=0), expected, rtol=1e-5)


def test_layers_order_is_deterministic_and_inputs_first():
    def build():
        kgraph.utils.clear_session()
        a = kgraph.Input(shape=(2,), name="a")
        b = kgraph.Input(shape=(2,), name="b")
        deep = layers.Dense(2)(layers.Dense(2)(layers.Dense(2)(a)))
        out = layers.Concatenate()([deep, layers.Dense(2)(b)])
        return kgraph.Model([a, b], out)
    names = [layer.name for layer in build().layers]
    assert names[:2] == ["a", "b"]
    assert names == [layer.name for layer in build().layers]


def test_auto_names_are_unique():
    kgraph.utils.clear_session()
    d1, d2, d3 = layers.Dense(1), layers.Dense(1), layers.Dense(1)
    assert [d1.name, d2.name, d3.name] == ["dense", "dense_1", "dense_2"]
    assert layers.Activation("relu").name == "activation"


def test_multi_input_multi_output_and_dicts():
    a = kgraph.Input(shape=(3,), name="a")
    b = kgraph.Input(shape=(2,), name="b")
    merged = layers.Concatenate(name="cat")([a, b])
    out1 = layers.Dense(1, name="out1")(merged)
    out2 = layers.Dense(2, name="out2")(merged)
    model = kgraph.Model({"a": a, "b": b}, {"first": out1, "second": out2})
    assert model.output_names == ["first", "second"]
    xa, xb = np.ones((5, 3), "float32"), np.zeros((5, 2), "float32")
    result = model.predict({"a": xa, "b": xb}, verbose=0)
    assert set(result) == {"first", "second"}
    assert result["first"].shape == (5, 1) and result["second"].shape == (5, 2)
    keyed = kgraph.Model({"left": a, "right": b}, out1)
    np.testing.assert_allclose(keyed.predict({"left": xa, "right": xb}, verbose=0), result["first"])
    listed = kgraph.Model([a, b], [out1, out2])
    assert listed.output_names == ["out1", "out2"]
    r1, r2 = listed.predict([xa, xb], verbose=0)
    np.testing.assert_allclose(r1, result["first"])
    with pytest.raises(ValueError, match="(?i)unknown"):
        listed.predict({"a": xa, "c": xb}, verbose=0)


def test_nested_model_called_twice():
    inner_in = kgraph.Input(shape=(3,), name="inner_in")
    inner = kgraph.Model(inner_in, layers.Dense(3, activation="tanh", name="inner_dense")(inner_in), name="inner")
    x = kgraph.Input(shape=(3,), name="outer_in")
    y = inner(inner(x))
    model = kgraph.Model(x, y, name="outer")
    assert len(inner.inbound_nodes) == 2
    data = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    once = inner.predict(data, verbose=0)
    np.testing.assert_allclose(model.predict(data, verbose=0), inner.predict(once, verbose=0), rtol=1e-6)
    assert len(model.weights) == 2
    _assert_invariant(model)


def test_slicing_a_sub_model_from_intermediate_tensors():
    x = kgraph.Input(shape=(4,), name="x")
    h = layers.Dense(5, name="h")(x)
    out = layers.Dense(2, name="out")(layers.Activation("relu", name="act")(h))
    full = kgraph.Model(x, out)
    head = kgraph.Model(h, out)
    data = np.random.default_rng(1).normal(size=(3, 4)).astype("float32")
    hidden = kgraph.Model(x, h).predict(data, verbose=0)
    np.testing.assert_allclose(head.predict(hidden, verbose=0), full.predict(data, verbose=0), rtol=1e-5)
    assert head.get_layer("out") is full.get_layer("out")


def test_disconnected_graph_names_the_tensor():
    a = kgraph.Input(shape=(2,), name="a")
    b = kgraph.Input(shape=(2,), name="b")
    out = layers.Add()([a, layers.Dense(2)(b)])
    with pytest.raises(ValueError, match="Graph disconnected"):
        kgraph.Model(a, out)


def test_duplicate_layer_names_are_rejected():
    x = kgraph.Input(shape=(2,))
    y = layers.Dense(2, name="same")(x)
    z = layers.Dense(2, name="same")(y)
    with pytest.raises(ValueError, match='"same" is used 2 times'):
        kgraph.Model(x, z)


def test_non_keras_tensor_inputs_are_rejected():
    x = kgraph.Input(shape=(2,))
    with pytest.raises(TypeError, match="must be KerasTensors"):
        kgraph.Model(np.zeros((1, 2)), layers.Dense(1)(x))


def test_wrong_arrays_to_model_name_the_input():
    x = kgraph.Input(shape=(4,), name="features")
    model = kgraph.Model(x, layers.Dense(2)(x))
    with pytest.raises(ValueError, match=r"Input 'features'.*expected shape=\(None, 4\), found shape=\(2, 3\)"):
        model.predict(np.zeros((2, 3), "float32"), verbose=0)
    two = kgraph.Model([x, kgraph.Input(shape=(1,), name="other")], layers.Dense(1)(x))
    with pytest.raises(ValueError, match="expects 2 input"):
        two(np.zeros((2, 4), "float32"))
    with pytest.raises(TypeError, match="numeric"):
        model(np.array([["a", None]], dtype=object))


def test_input_spec_errors_name_layer_and_shapes():
    dense = layers.Dense(3, name="d3")
    dense(np.zeros((1, 4), "float32"))
    with pytest.raises(ValueError, match=r'layer "d3".*axis -1.*value 4.*\(2, 5\)'):
        dense(np.zeros((2, 5), "float32"))
    with pytest.raises(ValueError, match="min_ndim=2"):
        layers.Dense(2, name="d_rank")(kgraph.Input(shape=(), batch_size=3))


def test_compute_output_shape_is_used_not_dummy_data():
    class Doubler(kgraph.Layer):
        calls = 0

        def call(self, x):
            Doubler.calls += 1
            return kgraph.ops.concatenate([x, x], axis=-1)

        def compute_output_shape(self, input_shape):
            return input_shape[:-1] + (input_shape[-1] * 2,)

    x = kgraph.Input(shape=(3,))
    y = Doubler()(x)
    assert y.shape == (None, 6)
    assert Doubler.calls == 0
    model = kgraph.Model(x, y)
    assert model.predict(np.ones((2, 3), "float32"), verbose=0).shape == (2, 6)


def test_custom_layer_without_output_shape_is_traced():
    class NoShape(kgraph.Layer):
        def call(self, x):
            return kgraph.ops.concatenate([x, x[:, :1] * 2.0], axis=-1)

    inputs = kgraph.Input(shape=(2,))
    y = NoShape()(inputs)
    assert y.shape == (None, 3) and y.dtype == "float32"
    # The trace leaves no trace: the input feeds only the layer's own node.
    assert [n.outbound_layer for n in inputs._keras_history.layer.outbound_nodes] == [y._keras_history.layer]


def test_layer_input_output_properties():
    x = kgraph.Input(shape=(2,))
    dense = layers.Dense(3)
    y = dense(x)
    assert dense.input is x and dense.output is y
    assert dense.input_shape == (None, 2) and dense.output_shape == (None, 3)
    dense(kgraph.Input(shape=(2,)))  # a shared layer answers for its first call, as Keras 3's
    assert dense.input is x and dense.output is y
    with pytest.raises(AttributeError, match="never been called"):
        _ = layers.Dense(3).output


def test_a_sequential_called_as_a_layer_answers_for_that_call():
    blocks = kgraph.Sequential([layers.Dense(3), layers.Dense(2)])
    inputs = kgraph.Input((4,))
    outputs = blocks(layers.Dense(4)(inputs))
    assert blocks.output is outputs
    assert kgraph.Model(inputs, blocks.output).output_shape == (None, 2)
    own = kgraph.Sequential([kgraph.Input((4,)), layers.Dense(2)])
    assert own.input.shape == (None, 4) and own.output.shape == (None, 2)


def test_intermediate_arrays_are_freed():
    x = kgraph.Input(shape=(2,))
    h = x
    for _ in range(5):
        h = layers.Dense(2)(h)
    model = kgraph.Model(x, h)
    uses = model._uses
    assert all(count >= 1 for count in uses.values())
    assert len(model._plan) == 5


def test_wrong_dtype_to_model_names_the_input():
    tokens = kgraph.Input(shape=(3,), dtype="int32", name="tokens")
    model = kgraph.Model(tokens, layers.Identity(name="same")(tokens))
    with pytest.raises(ValueError, match=r"Input 'tokens'.*expects integer values \(dtype=int32\)"):
        model(np.array([[0.5, 1.0, 2.0]]))
    out = model(np.array([[1.0, 2.0, 3.0]]))
    assert out.dtype == np.int32
    floats = kgraph.Input(shape=(2,), name="floats")
    cast = kgraph.Model(floats, layers.Identity()(floats))
    assert cast(np.ones((1, 2), dtype="float64")).dtype == np.float32
