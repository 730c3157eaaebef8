"""BatchNormalization and LayerNormalization: Keras semantics, moving statistics, gradients, weight layout."""
import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from tests.gradcheck import check_gradients, check_variable_gradients


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


RNG = np.random.default_rng(0)


def _bn(x, **kwargs):
    layer = layers.BatchNormalization(**kwargs)
    layer.build(x.shape)
    return layer


def _keras_weights(channels, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(channels), rng.standard_normal(channels), rng.standard_normal(channels),
            rng.random(channels) + 0.5]


def test_batch_normalization_weights_follow_keras_order_and_shapes():
    layer = layers.BatchNormalization(name="bn")
    layer.build((None, 5, 5, 3))
    assert [w.path for w in layer.weights] == ["bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"]
    assert [w.trainable for w in layer.weights] == [True, True, False, False]
    np.testing.assert_array_equal(layer.get_weights()[3], np.ones(3))
    bare = layers.BatchNormalization(center=False, scale=False, name="bare")
    bare.build((None, 4))
    assert [w.name for w in bare.weights] == ["moving_mean", "moving_variance"]


@pytest.mark.parametrize("training", [False, None])
def test_inference_uses_and_keeps_the_moving_statistics(training):
    x = RNG.standard_normal((6, 4, 3)).astype("float32") * 2 + 1
    layer = _bn(x, epsilon=1e-2)
    gamma, beta, mean, var = [w.astype("float32") for w in _keras_weights(3)]
    layer.set_weights([gamma, beta, mean, var])
    out = layer(x, training=training)
    np.testing.assert_allclose(out, (x - mean) / np.sqrt(var + 1e-2) * gamma + beta, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(layer.get_weights()[2], mean)
    np.testing.assert_array_equal(layer.get_weights()[3], var)


def test_training_normalizes_with_batch_statistics_and_updates_the_moving_ones():
    x = RNG.standard_normal((8, 5, 2)) * 3 + 2
    layer = _bn(x, momentum=0.9)
    gamma, beta, mean, var = _keras_weights(2)
    layer.set_weights([gamma, beta, mean, var])
    out = layer(x.astype("float32"), training=True)
    batch_mean, batch_var = x.mean(axis=(0, 1)), x.var(axis=(0, 1))  # biased variance, as Keras
    expected = (x - batch_mean) / np.sqrt(batch_var + 1e-3) * gamma + beta
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer.get_weights()[2], mean * 0.9 + batch_mean * 0.1, rtol=1e-5)
    np.testing.assert_allclose(layer.get_weights()[3], var * 0.9 + batch_var * 0.1, rtol=1e-5)


def test_frozen_layer_runs_in_inference_mode_even_when_training():
    x = RNG.standard_normal((8, 3)).astype("float32") + 4
    layer = _bn(x)
    before = layer.get_weights()
    layer.trainable = False
    out = layer(x, training=True)
    np.testing.assert_allclose(out, x / np.sqrt(1 + 1e-3), rtol=1e-6)
    for a, b in zip(before, layer.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 4


def test_fit_updates_moving_statistics_and_they_get_no_gradient():
    x = RNG.standard_normal((32, 4)).astype("float32") * 2 + 3
    inp = kgraph.Input((4,))
    bn = layers.BatchNormalization()
    model = kgraph.Model(inp, layers.Dense(1)(bn(inp)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.zeros((32, 1), "float32"), epochs=2, batch_size=8, verbose=0)
    assert np.all(bn.moving_mean.numpy() > 0.1)
    assert all(w.trainable for w in model.trainable_weights) and len(model.trainable_weights) == 4
    before = bn.moving_mean.numpy()
    model.predict(x, verbose=0)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), before)


@pytest.mark.parametrize("training,axis,shape", [(True, -1, (4, 3, 2)), (False, -1, (3, 2, 2, 2)),
                                                 (True, 1, (3, 2, 4)), (False, 1, (4, 3))])
def test_batch_normalization_gradients(float64, training, axis, shape):
    x = np.random.default_rng(2).standard_normal(shape)
    layer = layers.BatchNormalization(axis=axis)
    layer.build(shape)
    layer.set_weights(_keras_weights(shape[axis]))
    snapshot = layer.get_weights()

    def run(inputs):
        out = layer(inputs, training=training)
        layer.set_weights(snapshot)  # keep each probe on the same moving statistics
        return out
    check_gradients(lambda xs: run(xs[0]), [x])
    check_variable_gradients(lambda: run(x), layer.trainable_weights)


@pytest.mark.parametrize("axis,shape,weight_shape", [
    (-1, (3, 4, 5), (5,)), ([1, 2], (3, 4, 5), (4, 5)), ([-2, -1], (2, 3, 4), (3, 4)), (1, (3, 4, 5), (4,)),
    ([1, -1], (2, 3, 4), (4, 3)), ([2, 1], (2, 3, 4), (3, 4))])
def test_layer_normalization_matches_reference_and_keras_weight_shapes(axis, shape, weight_shape):
    x = RNG.standard_normal(shape).astype("float32") * 3 + 1
    layer = layers.LayerNormalization(axis=axis)
    layer.build(shape)
    assert [w.shape for w in layer.weights] == [weight_shape, weight_shape]
    rng = np.random.default_rng(3)
    gamma, beta = rng.standard_normal(weight_shape), rng.standard_normal(weight_shape)
    layer.set_weights([gamma, beta])
    axes = tuple(sorted({a % len(shape) for a in ([axis] if isinstance(axis, int) else axis)}))
    bshape = [shape[i] if i in axes else 1 for i in range(len(shape))]
    mean, var = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    expected = (x - mean) / np.sqrt(var + 1e-3) * gamma.reshape(bshape) + beta.reshape(bshape)
    np.testing.assert_allclose(layer(x), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kwargs,shape", [({}, (3, 4)), ({"axis": [1, 2]}, (2, 3, 2)),
                                          ({"axis": 1, "center": False}, (2, 3, 2)),
                                          ({"scale": False, "epsilon": 0.1}, (2, 5))])
def test_layer_normalization_gradients(float64, kwargs, shape):
    x = np.random.default_rng(4).standard_normal(shape)
    layer = layers.LayerNormalization(**kwargs)
    layer.build(shape)
    layer.set_weights([np.random.default_rng(5).standard_normal(w.shape) for w in layer.weights])
    check_gradients(lambda xs: layer(xs[0]), [x])
    check_variable_gradients(lambda: layer(x), layer.trainable_weights)


def test_config_round_trip():
    for layer in (layers.BatchNormalization(axis=1, momentum=0.9, epsilon=1e-5, center=False),
                  layers.LayerNormalization(axis=[1, 2], epsilon=1e-6, scale=False)):
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


def test_bad_arguments_and_inputs():
    with pytest.raises(ValueError, match="'bn'.*axis 3 is out of bounds"):
        layers.BatchNormalization(axis=3, name="bn").build((None, 4, 2))
    with pytest.raises(TypeError, match="expected an int"):
        layers.BatchNormalization(axis=[1, 2])
    with pytest.raises(ValueError, match="synchronized"):
        layers.BatchNormalization(synchronized=True)
    with pytest.raises(TypeError, match="list/tuple of ints"):
        layers.LayerNormalization(axis="last")
    with pytest.raises(ValueError, match="'ln'.*must be defined"):
        layers.LayerNormalization(name="ln").build((None, 3, None))
    layer = layers.BatchNormalization(name="bn2")
    layer(np.zeros((2, 3), dtype="float32"))
    with pytest.raises(ValueError, match="bn2.*expected axis -1 of input shape to have value 3"):
        layer(np.zeros((2, 4), dtype="float32"))
