"""Wrapper (the base of layer wrappers) and layers.serialize/deserialize (Keras 3's serialized-layer dicts)."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers, ops
from kgraph.saving.registration import register_keras_serializable
from tests.export.parity import assert_parity
from tests.gradcheck import check_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")
RNG = np.random.default_rng(0)


@register_keras_serializable(package="WrapperTests")
class Residual(layers.Wrapper):
    """A user's wrapper: ``x + scale * layer(x)``."""

    def __init__(self, layer, scale=1.0, **kwargs):
        super().__init__(layer, **kwargs)
        self.scale = scale

    def call(self, inputs):
        return ops.add(inputs, ops.multiply(self.layer(inputs), self.scale))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


def _residual_model():
    x = kgraph.Input((4,), name="x")
    model = kgraph.Model(x, layers.Dense(2)(Residual(layers.Dense(4, activation="tanh"), scale=0.5)(x)))
    model.set_weights([RNG.standard_normal(w.shape).astype(w.dtype) for w in model.get_weights()])
    return model


def test_a_wrapper_builds_tracks_and_saves_its_layer(tmp_path):
    wrapper = Residual(layers.Dense(3), scale=2.0)
    x = RNG.standard_normal((2, 3)).astype("float32")
    out = wrapper(x)
    assert wrapper.layer.built and wrapper.layer._build_input_shape == (2, 3)
    # As Keras: the wrapper builds its layer inside its own name scope.
    assert [w.path for w in wrapper.weights] == [f"{wrapper.name}/{wrapper.layer.name}/{n}" for n in ("kernel", "bias")]
    np.testing.assert_allclose(out, x + 2.0 * wrapper.layer(x), rtol=1e-6)
    config = wrapper.get_config()
    assert config["layer"]["class_name"] == "Dense" and config["scale"] == 2.0
    clone = Residual.from_config(config)
    assert isinstance(clone.layer, layers.Dense) and clone.layer.built and clone.get_config() == config
    model = _residual_model()
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x[:, :1].repeat(4, 1), verbose=0),
                                  model.predict(x[:, :1].repeat(4, 1), verbose=0))


def test_the_base_class_needs_a_layer_and_a_call():
    with pytest.raises(ValueError, match="layer"):
        layers.Wrapper("dense")
    with pytest.raises(ValueError, match="TimeDistributed"):
        layers.TimeDistributed(np.ones(3))
    with pytest.raises(NotImplementedError, match="Wrapper"):
        layers.Wrapper(layers.Dense(2))(np.ones((1, 3), "float32"))


def test_gradients_and_export_pass_through_a_wrapper():
    previous = backend.floatx()
    backend.set_floatx("float64")
    try:
        wrapper = Residual(layers.Dense(3, activation="tanh"), scale=0.5)
        check_gradients(lambda xs: wrapper(xs[0]), [RNG.standard_normal((2, 3))])
    finally:
        backend.set_floatx(previous)
    assert_parity(_residual_model())


def test_time_distributed_is_a_wrapper_with_an_unchanged_config():
    inner = layers.Dense(3, name="inner")
    wrapped = layers.TimeDistributed(inner, name="td")
    wrapped(np.ones((2, 5, 4), "float32"))
    assert isinstance(wrapped, layers.Wrapper) and wrapped.layer is inner
    policy = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": None}
    assert wrapped.get_config() == {"name": "td", "trainable": True, "dtype": policy,
                                    "layer": {"class_name": "Dense", "config": inner.get_config(),
                                              "build_config": {"input_shape": (None, 4)}}}


def test_serialize_gives_keras_dicts_and_deserialize_rebuilds_built_layers():
    dense = layers.Dense(3, activation="relu", name="d")
    assert layers.serialize(dense) == {"module": "keras.layers", "class_name": "Dense",
                                       "config": layers.serialize(dense)["config"], "registered_name": None}
    dense(np.ones((2, 4), "float32"))
    data = layers.serialize(dense)
    assert data["build_config"] == {"input_shape": (2, 4)}
    assert data["config"]["kernel_initializer"] == {"module": "keras.initializers", "class_name": "GlorotUniform",
                                                    "config": {"seed": None, "input_axes": None,
                                                               "output_axes": None},
                                                    "registered_name": None}
    rebuilt = layers.deserialize(data)
    assert type(rebuilt) is layers.Dense and rebuilt.built and rebuilt.get_config() == dense.get_config()
    custom = layers.serialize(Residual(layers.Dense(2)))
    assert custom["module"] == __name__ and custom["registered_name"] == "WrapperTests>Residual"
    assert type(layers.deserialize(custom).layer) is layers.Dense


def test_deserialize_refuses_what_is_not_a_layer_config():
    with pytest.raises(ValueError, match="class_name"):
        layers.deserialize("Dense")
    with pytest.raises(ValueError, match="Nope"):
        layers.deserialize({"module": "keras.layers", "class_name": "Nope", "config": {}, "registered_name": None})


@needs_keras
def test_bidirectional_stays_outside_wrapper_as_in_keras():
    import keras
    assert isinstance(keras.layers.TimeDistributed(keras.layers.Dense(2)), keras.layers.Wrapper)
    assert not isinstance(keras.layers.Bidirectional(keras.layers.LSTM(2)), keras.layers.Wrapper)
    assert not isinstance(layers.Bidirectional(layers.LSTM(2)), layers.Wrapper)


@needs_keras
@pytest.mark.parametrize("make", [lambda L: L.Dense(3, activation="tanh", name="d"),
                                  lambda L: L.TimeDistributed(L.Dense(2, name="inner"), name="td"),
                                  lambda L: L.LSTM(3, return_sequences=True, name="lstm"),
                                  lambda L: L.Bidirectional(L.GRU(2, name="gru"), name="bi")])
def test_serialized_forms_match_and_cross_between_kgraph_and_keras(make):
    import keras
    ours, theirs = make(layers), make(keras.layers)
    x = RNG.standard_normal((2, 5, 4)).astype("float32")
    ours(x)
    theirs(x)
    our_data, their_data = layers.serialize(ours), keras.layers.serialize(theirs)
    assert set(our_data) == set(their_data)
    assert {k: our_data[k] for k in ("module", "class_name", "registered_name")} == \
        {k: their_data[k] for k in ("module", "class_name", "registered_name")}
    assert set(our_data["config"]) <= set(their_data["config"])
    # Each side rebuilds the other's dict into a layer computing the same function on copied weights.
    from_keras, to_keras = layers.deserialize(their_data), keras.layers.deserialize(our_data)
    # Keras always saves Bidirectional's backward layer; kgraph only one given to it (the same layer either way).
    assert {k: v for k, v in from_keras.get_config().items() if k != "backward_layer"} == ours.get_config()
    from_keras.set_weights(ours.get_weights())
    np.testing.assert_array_equal(from_keras(x), ours(x))
    to_keras(x)
    to_keras.set_weights(ours.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(to_keras(x)), ours(x), rtol=1e-5, atol=1e-6)
