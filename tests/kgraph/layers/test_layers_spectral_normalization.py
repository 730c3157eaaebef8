"""SpectralNormalization: the kernel's spectral norm after training calls, Keras's weight order, saving, parity."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from tests.gradcheck import check_variable_gradients

RNG = np.random.default_rng(0)


def _largest_singular_value(kernel):
    return np.linalg.svd(kernel.reshape(-1, kernel.shape[-1]), compute_uv=False)[0]


@pytest.mark.parametrize("make,shape", [(lambda: layers.Dense(4), (3, 6)), (lambda: layers.Conv2D(3, 2), (2, 4, 4, 2)),
                                        (lambda: layers.Conv1D(2, 3), (2, 5, 3))])
def test_training_calls_divide_the_kernel_by_its_spectral_norm(make, shape):
    x = RNG.standard_normal(shape).astype("float32")
    wrapper = layers.SpectralNormalization(make(), power_iterations=30)
    wrapper(x)
    wrapper.kernel.assign(3.0 * wrapper.kernel.numpy())
    inference = wrapper(x)
    kernel = wrapper.kernel.numpy()
    assert wrapper.kernel is wrapper.layer.kernel and _largest_singular_value(kernel) > 2.0
    np.testing.assert_array_equal(wrapper(x, training=False), inference)
    np.testing.assert_array_equal(wrapper.kernel.numpy(), kernel)
    vector_u = wrapper.vector_u.numpy()
    trained = wrapper(x, training=True)
    # Thirty power iterations from a random start: sigma to well within float32 rounding of the exact norm.
    np.testing.assert_allclose(wrapper.kernel.numpy(), kernel / _largest_singular_value(kernel), rtol=1e-4)
    np.testing.assert_allclose(trained, wrapper.layer(x), rtol=1e-6)
    assert not np.array_equal(wrapper.vector_u.numpy(), vector_u)
    np.testing.assert_allclose(np.linalg.norm(wrapper.vector_u.numpy()), 1.0, rtol=1e-6)


def test_weights_are_keras_ordered_and_a_zero_kernel_is_left_alone():
    wrapper = layers.SpectralNormalization(layers.Dense(3, kernel_initializer="zeros"))
    x = RNG.standard_normal((2, 4)).astype("float32")
    wrapper(x, training=True)
    dense = f"{wrapper.name}/{wrapper.layer.name}"  # as Keras: built inside the wrapper's scope
    assert [w.path for w in wrapper.weights] == [f"{dense}/kernel", f"{wrapper.name}/vector_u", f"{dense}/bias"]
    assert [w.path for w in wrapper.trainable_weights] == [f"{dense}/kernel", f"{dense}/bias"]
    assert not np.any(wrapper.kernel.numpy()) and np.all(np.isfinite(wrapper.vector_u.numpy()))
    embedded = layers.SpectralNormalization(layers.Embedding(10, 4))
    embedded(np.array([[1, 2]]))
    assert embedded.kernel is embedded.layer.embeddings and embedded.vector_u.shape == (1, 4)


def test_gradients_reach_the_wrapped_weights():
    previous = backend.floatx()
    backend.set_floatx("float64")
    try:
        wrapper = layers.SpectralNormalization(layers.Dense(3, activation="tanh"))
        x = RNG.standard_normal((2, 4))
        wrapper(x)
        check_variable_gradients(lambda: wrapper(x), wrapper.trainable_weights)
    finally:
        backend.set_floatx(previous)


def test_fit_normalizes_every_step_saves_and_loads(tmp_path):
    x = kgraph.Input((6, 6, 2))
    conv = layers.SpectralNormalization(layers.Conv2D(3, 3, activation="relu"), power_iterations=2)
    model = kgraph.Model(x, layers.Dense(2)(layers.Flatten()(conv(x))))
    data = RNG.standard_normal((8, 6, 6, 2)).astype("float32")
    model.compile(optimizer="sgd", loss="mse")
    model.fit(data, RNG.standard_normal((8, 2)).astype("float32"), epochs=2, batch_size=4, verbose=0)
    # Each step normalizes before the SGD update, so the norm stays near 1 rather than where it started.
    assert abs(_largest_singular_value(conv.kernel.numpy()) - 1.0) < 0.2
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    np.testing.assert_array_equal(loaded.predict(data, verbose=0), model.predict(data, verbose=0))
    wrapper = loaded.layers[1]
    assert wrapper.kernel is wrapper.layer.kernel and wrapper.power_iterations == 2
    config = conv.get_config()
    assert layers.SpectralNormalization.from_config(config).get_config() == config


def test_errors():
    with pytest.raises(ValueError, match="`power_iterations` should be greater than zero"):
        layers.SpectralNormalization(layers.Dense(2), power_iterations=0)
    with pytest.raises(ValueError, match="isn't a supported layer type"):
        layers.SpectralNormalization("dense")
    with pytest.raises(ValueError, match="Flatten object has no attribute 'kernel' nor 'embeddings'"):
        layers.SpectralNormalization(layers.Flatten())(np.zeros((1, 2, 2), "float32"))


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,args,shape", [("Dense", (3,), (2, 5, 6)), ("Conv2D", (3, 2), (2, 4, 4, 2))])
def test_keras_parity_on_copied_weights_in_training_and_inference(keras, name, args, shape):
    x = RNG.standard_normal(shape).astype("float32")
    reference = keras.layers.SpectralNormalization(getattr(keras.layers, name)(*args), power_iterations=2)
    reference(x)
    reference.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in reference.get_weights()])
    wrapper = layers.SpectralNormalization(getattr(layers, name)(*args), power_iterations=2)
    wrapper(x)
    assert [w.shape for w in wrapper.weights] == [tuple(w.shape) for w in reference.weights]
    wrapper.set_weights(reference.get_weights())
    np.testing.assert_allclose(wrapper(x), keras.ops.convert_to_numpy(reference(x)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(wrapper(x, training=True), keras.ops.convert_to_numpy(reference(x, training=True)),
                               rtol=1e-5, atol=1e-5)
    for actual, expected in zip(wrapper.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    assert wrapper.get_config()["power_iterations"] == reference.get_config()["power_iterations"]
