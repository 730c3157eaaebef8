"""Lambda: calls, output shapes, gradients, and safe mode (files hold no code; functions come from custom_objects)."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers, ops
from kgraph.layers.core import lambda_layer
from kgraph.layers.core.lambda_layer import SafeModeScope
from tests.gradcheck import check_gradients


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


RNG = np.random.default_rng(0)


def scaled_tanh(x, scale=1.0):
    return ops.tanh(x) * scale


def first_half(x):
    return x[:, : x.shape[1] // 2]


def test_lambda_calls_with_arguments_training_and_mask(float64):
    x = RNG.standard_normal((2, 4))
    layer = layers.Lambda(scaled_tanh, arguments={"scale": 3.0})
    np.testing.assert_allclose(layer(x), 3.0 * np.tanh(x), rtol=1e-15)
    check_gradients(lambda xs: layer(xs[0]), [x])
    seen = {}

    def spy(inputs, mask=None, training=None):
        seen.update(mask=mask, training=training)
        return inputs
    layers.Lambda(spy)(x, training=True)
    assert seen == {"mask": None, "training": True}


def test_lambda_output_shape_traced_given_or_computed():
    x = kgraph.Input((6, 2))
    assert layers.Lambda(first_half)(x).shape == (None, 3, 2)
    assert layers.Lambda(first_half, output_shape=(3, 2))(x).shape == (None, 3, 2)
    assert layers.Lambda(first_half, output_shape=lambda s: (s[0], s[1] // 2, s[2]))(x).shape == (None, 3, 2)
    assert layers.Lambda(first_half).compute_output_shape((None, 6, 2)) == (None, 3, 2)
    model = kgraph.Model(x, layers.Lambda(first_half)(x))
    data = RNG.standard_normal((2, 6, 2)).astype("float32")
    np.testing.assert_array_equal(model.predict(data, verbose=0), data[:, :3])
    assert layers.Lambda(lambda t: t, mask=lambda t, m: m).supports_masking
    assert not layers.Lambda(first_half).supports_masking


def test_lambda_trains_inside_a_model():
    x = kgraph.Input((4,))
    model = kgraph.Model(x, layers.Dense(1)(layers.Lambda(scaled_tanh, arguments={"scale": 2.0})(layers.Dense(4)(x))))
    model.compile(optimizer="sgd", loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    model.fit(RNG.standard_normal((8, 4)), RNG.standard_normal((8, 1)), epochs=1, verbose=0)
    assert all(not np.array_equal(a, w.numpy()) for a, w in zip(before, model.trainable_weights))


def _model():
    x = kgraph.Input((6,), name="x")
    h = layers.Lambda(scaled_tanh, arguments={"scale": 2.0}, name="scaled")(layers.Dense(6)(x))
    return kgraph.Model(x, layers.Lambda(first_half, output_shape=(3,), name="half")(h))


def test_saving_a_lambda_is_refused_in_safe_mode(tmp_path):
    model = _model()
    assert lambda_layer.in_safe_mode()
    with pytest.raises(ValueError, match=r"Lambda layer 'scaled' needs its `function` \('scaled_tanh'\).*"
                                         r"custom_objects=\{'scaled_tanh': scaled_tanh\}.*SafeModeScope\(False\)"):
        model.save(tmp_path / "model.pkl")
    assert not (tmp_path / "model.pkl").exists()
    with pytest.raises(ValueError, match="safe mode off"):
        model.to_json()


def test_unsafe_save_keeps_names_and_loading_needs_the_functions(tmp_path):
    model = _model()
    data = RNG.standard_normal((3, 6)).astype("float32")
    path = tmp_path / "model.pkl"
    with SafeModeScope(False):
        model.save(path)
        config = model.get_layer("scaled").get_config()
    assert lambda_layer.in_safe_mode()
    assert config["function"] == {"module": __name__, "class_name": "function", "config": "scaled_tanh",
                                  "registered_name": "function"}
    assert config["arguments"] == {"scale": 2.0}
    with pytest.raises(ValueError, match=r"Cannot load Lambda layer 'scaled': its `function` is the Python function "
                                         r"'scaled_tanh' \(defined in module '.*'\), and kgraph never loads code"):
        kgraph.load_model(path)
    restored = layers.Lambda.from_config(config, custom_objects={"scaled_tanh": scaled_tanh})
    assert restored.function is scaled_tanh and restored.arguments == {"scale": 2.0}
    np.testing.assert_allclose(restored(data), 2.0 * np.tanh(data), rtol=1e-6)
    with SafeModeScope(False):
        assert restored.get_config() == config


def test_loading_never_imports_the_function_module():
    config = {"name": "evil", "function": {"module": "os", "class_name": "function", "config": "system",
                                           "registered_name": "function"}, "arguments": {}}
    with pytest.raises(ValueError, match=r"'system' \(defined in module 'os'\)"):
        layers.Lambda.from_config(config)
    bytecode = dict(config, function={"class_name": "__lambda__", "config": {"code": "4wEAAAAA", "defaults": None,
                                                                              "closure": None}})
    with pytest.raises(ValueError, match="stored as Python bytecode, and kgraph never runs code from a model file"):
        layers.Lambda.from_config(bytecode, custom_objects={"system": print})


def test_python_lambdas_cannot_be_saved_even_unsafe(monkeypatch):
    monkeypatch.setattr(lambda_layer, "_SAFE_MODE", [True])
    lambda_layer.enable_unsafe_deserialization()
    assert not lambda_layer.in_safe_mode()
    with pytest.raises(ValueError, match="has no name to restore it by"):
        layers.Lambda(lambda t: t * 2).get_config()
    with pytest.raises(ValueError, match="has no name to restore it by"):
        layers.Lambda(first_half, output_shape=lambda s: s).get_config()
    assert layers.Lambda(first_half, output_shape=(3,)).get_config()["output_shape"] == [3]


def test_lambda_errors():
    with pytest.raises(TypeError, match="`function` must be callable"):
        layers.Lambda("x * 2")


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


def test_keras_lambda_config_loads_with_custom_objects(keras):
    reference = keras.layers.Lambda(scaled_tanh, output_shape=(4,), arguments={"scale": 3.0})
    data = RNG.standard_normal((2, 4)).astype("float32")
    config = {k: v for k, v in reference.get_config().items() if k != "dtype"}
    layer = layers.Lambda.from_config(config, custom_objects={"scaled_tanh": scaled_tanh})
    np.testing.assert_allclose(layer(data), 3.0 * np.tanh(data), rtol=1e-6)
    bytecode = {k: v for k, v in keras.layers.Lambda(lambda t: t).get_config().items() if k != "dtype"}
    with pytest.raises(ValueError, match="stored as Python bytecode"):
        layers.Lambda.from_config(bytecode)
