"""keras.utils data helpers and keras.random functions with Keras's names and rules."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, ops


def test_to_categorical_pad_sequences_normalize():
    np.testing.assert_array_equal(kgraph.utils.to_categorical([0, 2, 1], 3), np.eye(3)[[0, 2, 1]])
    assert kgraph.utils.to_categorical([0, 1]).dtype == np.float64  # Keras's dtype for array input
    assert kgraph.utils.to_categorical(np.array([[1], [3]])).shape == (2, 4)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        kgraph.utils.to_categorical([0, 5], 2)
    padded = kgraph.utils.pad_sequences([[1, 2, 3], [4]], maxlen=2)
    np.testing.assert_array_equal(padded, [[2, 3], [0, 4]])
    np.testing.assert_array_equal(kgraph.utils.pad_sequences([[1, 2, 3], [4]], padding="post", truncating="post"),
                                  [[1, 2, 3], [4, 0, 0]])
    np.testing.assert_allclose(kgraph.utils.normalize(np.array([[3.0, 4.0], [0.0, 0.0]])), [[0.6, 0.8], [0, 0]])


def test_random_functions_are_seedable():
    a = kgraph.random.normal((2, 3), seed=1)
    np.testing.assert_array_equal(a, kgraph.random.normal((2, 3), seed=1))
    assert a.dtype == np.float32 and a.shape == (2, 3)
    u = kgraph.random.uniform((1000,), 2.0, 3.0, seed=2)
    assert u.min() >= 2.0 and u.max() < 3.0
    assert np.abs(kgraph.random.truncated_normal((1000,), seed=3)).max() <= 2.0
    r = kgraph.random.randint((50,), 0, 4, seed=4)
    assert r.dtype == np.int32 and set(np.unique(r)) <= {0, 1, 2, 3}
    generator = kgraph.random.SeedGenerator(5)
    assert not np.array_equal(kgraph.random.normal((3,), seed=generator), kgraph.random.normal((3,), seed=generator))
    assert sorted(kgraph.random.shuffle(np.arange(6), seed=6)) == list(range(6))
    with pytest.raises(ValueError, match="fully known shape"):
        kgraph.random.normal((None, 2))


def test_random_dropout_keeps_gradients():
    x = np.ones((4, 5))
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        y = ops.sum(kgraph.random.dropout(x, 0.5, seed=0))
    grad = tape.gradient(y, x)
    assert set(np.unique(grad)) <= {0.0, 2.0} and grad.sum() == y


def test_vae_sampling_layer_from_the_keras_guide_builds_and_runs():
    class Sampling(layers.Layer):
        def call(self, inputs):
            z_mean, z_log_var = inputs
            epsilon = kgraph.random.normal(shape=(ops.shape(z_mean)[0], ops.shape(z_mean)[1]))
            return z_mean + ops.exp(0.5 * z_log_var) * epsilon

    inp = kgraph.Input((4,))
    z = Sampling()([layers.Dense(2)(inp), layers.Dense(2)(inp)])
    assert z.shape == (None, 2)
    assert kgraph.Model(inp, z).predict(np.ones((3, 4), "float32"), verbose=0).shape == (3, 2)


def test_register_keras_serializable_and_clone_model(tmp_path):
    @kgraph.saving.register_keras_serializable(package="tests")
    class Scaled(layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    assert kgraph.saving.get_registered_name(Scaled) == "tests>Scaled"
    assert kgraph.saving.get_registered_object("tests>Scaled") is Scaled
    inp = kgraph.Input((3,))
    model = kgraph.Model(inp, Scaled(3.0)(layers.Dense(3)(inp)))
    model.save(tmp_path / "m.pkl")
    x = np.ones((2, 3), "float32")
    np.testing.assert_array_equal(kgraph.load_model(tmp_path / "m.pkl").predict(x, verbose=0),
                                  model.predict(x, verbose=0))
    clone = kgraph.models.clone_model(model)
    assert [type(layer) for layer in clone.layers] == [type(layer) for layer in model.layers]
    assert clone.layers[-1].factor == 3.0 and clone.layers[1].kernel is not model.layers[1].kernel
    with pytest.raises(ValueError, match="already been registered"):
        kgraph.saving.register_keras_serializable(package="tests", name="Scaled")(Scaled.__base__)


def test_config_module():
    assert kgraph.config.floatx() == "float32" and kgraph.config.backend() == "numpy"
    assert kgraph.config.image_data_format() == "channels_last"
    with pytest.raises(ValueError, match="channels-last"):
        kgraph.config.set_image_data_format("channels_first")
