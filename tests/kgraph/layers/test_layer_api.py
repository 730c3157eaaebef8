"""Layer API: weights, config round trips, summary, Keras weight layout."""
import json

import numpy as np
import pytest

import kgraph
from kgraph import layers


def test_dense_weights_have_keras_layout_and_order():
    dense = layers.Dense(3, name="d")
    dense.build((None, 4))
    kernel, bias = dense.get_weights()
    assert kernel.shape == (4, 3) and bias.shape == (3,)
    assert [w.path for w in dense.weights] == ["d/kernel", "d/bias"]
    rng = np.random.default_rng(0)
    k, b = rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=3).astype("float32")
    dense.set_weights([k, b])
    x = rng.normal(size=(2, 4)).astype("float32")
    np.testing.assert_allclose(dense(x), x @ k + b, rtol=1e-6)
    assert dense.count_params() == 15


def test_set_weights_errors():
    dense = layers.Dense(2, name="dd")
    dense.build((None, 3))
    with pytest.raises(ValueError, match="expecting 2 weights"):
        dense.set_weights([np.zeros((3, 2))])
    with pytest.raises(ValueError, match=r"weight shape \(3, 2\) is not compatible with provided weight shape \(2, 3\)"):
        dense.set_weights([np.zeros((2, 3)), np.zeros(2)])


def test_count_params_unbuilt_is_an_error():
    with pytest.raises(ValueError, match="isn't built"):
        layers.Dense(2).count_params()


def test_trainable_flag():
    dense = layers.Dense(2)
    dense.build((None, 2))
    assert len(dense.trainable_weights) == 2
    dense.trainable = False
    assert dense.trainable_weights == [] and len(dense.non_trainable_weights) == 2


def test_unknown_kwargs_are_rejected():
    # Keras raises a ValueError naming the arguments.
    with pytest.raises(ValueError, match="Unrecognized keyword arguments passed to Dense"):
        layers.Dense(2, unitz=3)


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "softmax", "linear", "gelu", "elu", "selu",
                                  "softplus", "softsign", "swish", "silu", "leaky_relu", "hard_sigmoid",
                                  "exponential"])
def test_activation_layer_runs_every_activation(name):
    x = np.linspace(-3, 3, 12, dtype="float32").reshape(2, 6)
    out = layers.Activation(name)(x)
    assert out.shape == x.shape and np.all(np.isfinite(out))


def test_layer_config_round_trip():
    dense = layers.Dense(4, activation="relu", use_bias=False, name="cfg")
    clone = layers.Dense.from_config(dense.get_config())
    assert clone.units == 4 and clone.use_bias is False and clone.name == "cfg"


def _shared_nested_model():
    kgraph.utils.clear_session()
    inner_in = kgraph.Input(shape=(3,), name="inner_in")
    inner = kgraph.Model(inner_in, layers.Dense(3, name="inner_dense")(inner_in), name="inner")
    a = kgraph.Input(shape=(3,), name="a")
    b = kgraph.Input(shape=(3,), name="b")
    shared = layers.Dense(3, name="shared")
    merged = layers.Add(name="add")([shared(a), shared(b)])
    out = layers.Dense(2, name="head")(inner(inner(merged)))
    return kgraph.Model([a, b], out, name="outer")


def test_functional_config_round_trip_with_shared_and_nested():
    model = _shared_nested_model()
    data = [np.ones((2, 3), "float32"), np.full((2, 3), 0.5, "float32")]
    config = model.get_config()
    clone = kgraph.models.Functional.from_config(config)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(data, verbose=0), model.predict(data, verbose=0), rtol=1e-6)
    assert len(clone.get_layer("shared").inbound_nodes) == 2
    restored = kgraph.models.model_from_json(model.to_json())
    restored.set_weights(model.get_weights())
    np.testing.assert_allclose(restored.predict(data, verbose=0), model.predict(data, verbose=0), rtol=1e-6)
    json.loads(model.to_json())


def test_sequential_config_round_trip():
    model = kgraph.Sequential([kgraph.Input(shape=(4,)), layers.Dense(3, activation="relu"), layers.Dropout(0.2),
                               layers.Dense(1)])
    clone = kgraph.models.model_from_json(model.to_json())
    clone.set_weights(model.get_weights())
    x = np.ones((2, 4), "float32")
    np.testing.assert_allclose(clone.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_summary_table(capsys):
    model = _shared_nested_model()
    model.summary()
    text = capsys.readouterr().out
    assert 'Model: "outer"' in text
    assert "shared (Dense)" in text and "inner (Functional)" in text
    assert "Connected to" in text and "a[0][0]" in text
    total = sum(w.size for w in model.get_weights())
    assert f"Total params: {total:,}" in text
    assert "Trainable params:" in text and "Non-trainable params: 0" in text


def test_get_layer():
    model = _shared_nested_model()
    assert model.get_layer("head").name == "head"
    assert model.get_layer(index=0).name == "a"
    with pytest.raises(ValueError, match="No such layer: nope"):
        model.get_layer("nope")


def test_model_input_and_output_shapes():
    model = _shared_nested_model()
    assert model.input_shape == [(None, 3), (None, 3)]
    assert model.output_shape == (None, 2)
    seq = kgraph.Sequential([kgraph.Input(shape=(4,)), layers.Dense(3)])
    assert seq.input_shape == (None, 4) and seq.output_shape == (None, 3)


def test_variables_list_the_seed_generators_states_after_the_weights_as_keras():
    class NoisyDense(kgraph.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = kgraph.layers.Dense(2)
            self.seed_generator = kgraph.random.SeedGenerator(1337)

        def call(self, x):
            return kgraph.random.dropout(self.dense(x), 0.5, seed=self.seed_generator)

    layer = NoisyDense()
    layer(np.ones((2, 3), "float32"))
    assert len(layer.weights) == 2 and len(layer.variables) == 3
    state = layer.variables[-1]
    assert state is layer.seed_generator.state and not state.trainable
    np.testing.assert_array_equal(state.numpy(), [1337, 1])  # the seed, then one draw
