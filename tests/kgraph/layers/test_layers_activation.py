"""Activation layers (ReLU, LeakyReLU, PReLU, ELU, Softmax), ActivityRegularization and the noise layers."""
import os

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
# Away from the kinks (0 and the thresholds below) so that finite differences are smooth.
X = np.concatenate([-0.1 - RNG.random(12), 0.1 + RNG.random(12), 3.0 + RNG.random(6), 7.0 + RNG.random(6)])
X = RNG.permutation(X).reshape(2, 3, 6)


def _relu_reference(x, max_value=None, negative_slope=0.0, threshold=0.0):
    positive = x if max_value is None else np.minimum(x, max_value)
    return np.where(x > threshold, positive, negative_slope * (x - threshold))


@pytest.mark.parametrize("kwargs", [{}, {"max_value": 6.0}, {"max_value": 2.0}, {"negative_slope": 0.1},
                                    {"max_value": 5.0, "negative_slope": 0.2, "threshold": 0.5}])
def test_relu_follows_keras_formula_and_differentiates(float64, kwargs):
    layer = layers.ReLU(**kwargs)
    np.testing.assert_allclose(layer(X), _relu_reference(X, **kwargs), rtol=0, atol=1e-15)
    check_gradients(lambda xs: layer(xs[0]), [X])
    assert layers.ReLU.from_config(layer.get_config()).get_config() == layer.get_config()


def test_relu_at_its_threshold_is_zero_as_in_keras():
    np.testing.assert_array_equal(layers.ReLU(threshold=1.0, negative_slope=0.5)(np.array([[1.0, 0.0, 2.0]])),
                                  [[0.0, -0.5, 2.0]])


def test_leaky_relu_prelu_elu_values_and_gradients(float64):
    np.testing.assert_allclose(layers.LeakyReLU()(X), np.where(X >= 0, X, 0.3 * X), rtol=1e-15)
    np.testing.assert_allclose(layers.ELU(alpha=0.5)(X), np.where(X > 0, X, 0.5 * np.expm1(X)), rtol=1e-12)
    prelu = layers.PReLU(alpha_initializer="random_normal", shared_axes=[1], name="prelu")
    out = prelu(X)
    assert [(w.path, w.shape) for w in prelu.weights] == [("prelu/alpha", (1, 6))]
    alpha = prelu.get_weights()[0]
    np.testing.assert_allclose(out, np.where(X > 0, X, alpha * X), rtol=1e-12)
    for layer in (layers.LeakyReLU(0.2), layers.ELU(0.7), prelu):
        check_gradients(lambda xs, layer=layer: layer(xs[0]), [X])
    check_variable_gradients(lambda: prelu(X), prelu.trainable_weights)


def test_prelu_alpha_shape_and_input_spec():
    layer = layers.PReLU(shared_axes=2)
    layer.build((None, 4, 5, 3))
    assert layer.alpha.shape == (4, 1, 3) and layer.get_config()["shared_axes"] == [2]
    np.testing.assert_array_equal(layer.get_weights()[0], 0.0)
    with pytest.raises(ValueError, match="incompatible|expected axis|Input 0"):
        layer(np.zeros((1, 4, 7, 2), "float32"))
    assert layer(np.zeros((1, 4, 9, 3), "float32")).shape == (1, 4, 9, 3)
    with pytest.raises(ValueError, match="positive axis indices"):
        layers.PReLU(shared_axes=[0])
    constrained = layers.PReLU(alpha_constraint="non_neg")
    constrained.build((None, 3))
    assert type(constrained.alpha.constraint).__name__ == "NonNeg"


@pytest.mark.parametrize("axis", [-1, 1, [1, 2]])
def test_softmax_over_one_or_several_axes(float64, axis):
    axes = tuple(axis) if isinstance(axis, list) else axis
    shifted = np.exp(X - X.max(axis=axes, keepdims=True))
    expected = shifted / shifted.sum(axis=axes, keepdims=True)
    layer = layers.Softmax(axis=axis)
    np.testing.assert_allclose(layer(X), expected, rtol=1e-12)
    check_gradients(lambda xs: layer(xs[0]), [X[:, :2, :4]])
    assert layers.Softmax.from_config(layer.get_config()).axis == axis


def test_softmax_mask_zeroes_masked_positions(float64):
    mask = np.array([[[1, 1, 0, 1, 0, 1]], [[0, 0, 0, 0, 0, 0]]], dtype="float64")
    out = layers.Softmax()(X, mask=mask)
    np.testing.assert_array_equal(out[np.broadcast_to(mask, X.shape) == 0], 0.0)
    kept = np.where(mask[0, 0] > 0.5)[0]
    e = np.exp(X[0][:, kept] - X[0][:, kept].max(axis=-1, keepdims=True))
    np.testing.assert_allclose(out[0][:, kept], e / e.sum(-1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(layers.Softmax()(X, mask=mask > 0.5), out)
    check_gradients(lambda xs: layers.Softmax()(xs[0], mask=mask[:1]), [X[:1]])
    with pytest.raises(ValueError, match="The `mask` must be broadcastable"):
        layers.Softmax()(X, mask=np.ones((2, 3, 5)))


def test_bad_activation_arguments_are_keras_errors():
    with pytest.raises(ValueError, match="max_value of a ReLU layer cannot be a negative value"):
        layers.ReLU(max_value=-1)
    with pytest.raises(ValueError, match="negative_slope of a ReLU layer cannot be None"):
        layers.ReLU(negative_slope=None)
    with pytest.raises(ValueError, match="threshold of a ReLU layer"):
        layers.ReLU(threshold=-0.5)
    with pytest.raises(ValueError, match="Leaky ReLU layer cannot be None or negative"):
        layers.LeakyReLU(-0.1)
    with pytest.raises(TypeError, match="'axis'"):
        layers.Softmax(axis="last")


def test_activity_regularization_adds_penalty_over_batch_size(float64):
    layer = layers.ActivityRegularization(l1=0.01, l2=0.1)
    x = kgraph.Input((3, 6))
    model = kgraph.Model(x, layer(layers.Dense(6)(x)))
    out = model(X)
    expected = (0.01 * np.abs(out).sum() + 0.1 * np.square(out).sum()) / 2
    np.testing.assert_allclose(float(sum(model.losses)), expected, rtol=1e-12)
    np.testing.assert_array_equal(layer(X), X)
    assert layers.ActivityRegularization.from_config(layer.get_config()).get_config() == layer.get_config()
    with kgraph.GradientTape() as tape:
        tape.watch(model.trainable_weights)
        model(X)
        penalty = sum(model.losses)
    assert all(np.any(g != 0) for g in tape.gradient(penalty, model.trainable_weights))


@pytest.mark.parametrize("layer_class,argument", [(layers.GaussianNoise, "stddev"), (layers.GaussianDropout, "rate"),
                                                  (layers.AlphaDropout, "rate")])
def test_noise_layers_act_only_in_training(float64, layer_class, argument):
    layer = layer_class(0.3, seed=4)
    assert layer(X) is X or np.array_equal(layer(X), X)
    noisy = layer(X, training=True)
    assert noisy.shape == X.shape and not np.allclose(noisy, X)
    assert not np.array_equal(noisy, layer(X, training=True))
    np.testing.assert_array_equal(layer_class(0.3, seed=4)(X, training=True), noisy)
    np.testing.assert_array_equal(layer_class(0.0)(X, training=True), X)
    config = layer.get_config()
    assert config[argument] == 0.3 and config["seed"] == 4
    assert layer_class.from_config(config).get_config() == config
    check_gradients(lambda xs: layer_class(0.3, seed=5)(xs[0], training=True), [X[:1, :2]])
    with pytest.raises(ValueError, match=f"Invalid value received for argument `{argument}`"):
        layer_class(1.5)


def test_noise_statistics_match_keras_definitions(float64):
    x = np.full((200, 500), 2.0)
    noise = layers.GaussianNoise(0.5, seed=0)(x, training=True) - x
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.5) < 0.01
    factor = layers.GaussianDropout(0.2, seed=0)(x, training=True) / x
    assert abs(factor.mean() - 1) < 0.01 and abs(factor.std() - np.sqrt(0.2 / 0.8)) < 0.01
    # AlphaDropout keeps zero mean and unit variance of standardized inputs, and drops to a single value.
    z = np.random.default_rng(1).standard_normal((200, 500))
    out = layers.AlphaDropout(0.2, seed=0)(z, training=True)
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    alpha_p = -1.6732632423543772 * 1.0507009873554805

    def affine(rate):
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        return a, -a * alpha_p * rate
    a, b = affine(0.2)
    dropped = np.isclose(out, a * alpha_p + b, rtol=0, atol=1e-12)
    assert abs(dropped.mean() - 0.2) < 0.01
    np.testing.assert_allclose(out[~dropped], a * z[~dropped] + b, rtol=1e-12)
    a, b = affine(0.5)
    rows = layers.AlphaDropout(0.5, noise_shape=(None, 1), seed=0)(z[:20], training=True)
    whole_rows = np.isclose(rows, a * alpha_p + b, rtol=0, atol=1e-12).mean(axis=1)
    assert set(whole_rows) <= {0.0, 1.0} and 0 < whole_rows.mean() < 1
    with pytest.raises(ValueError, match="below 1"):
        layers.GaussianDropout(1.0)


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,kwargs", [("ReLU", {}), ("ReLU", {"max_value": 6.0}),
                                         ("ReLU", {"max_value": 4.0, "negative_slope": 0.2, "threshold": 0.5}),
                                         ("LeakyReLU", {"negative_slope": 0.1}), ("ELU", {"alpha": 0.5}),
                                         ("PReLU", {"shared_axes": [1]}), ("Softmax", {"axis": [1, 2]}),
                                         ("Softmax", {"axis": 1})])
def test_keras_parity_on_copied_weights(keras, name, kwargs):
    x = X.astype("float32")
    reference = getattr(keras.layers, name)(**kwargs)
    reference(x)
    if reference.weights:
        reference.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in reference.get_weights()])
    layer = getattr(layers, name)(**kwargs)
    layer(x)
    layer.set_weights(reference.get_weights())
    np.testing.assert_allclose(layer(x), keras.ops.convert_to_numpy(reference(x)), rtol=1e-6, atol=1e-6)
    ours, theirs = layer.get_config(), reference.get_config()
    # Keras's own arguments compare as plain values (kgraph writes initializers in its own form).
    shared = {k for k, v in theirs.items() if k not in ("name", "dtype", "trainable") and not isinstance(v, dict)}
    assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}


def test_keras_parity_softmax_mask_and_activity_regularization(keras):
    x = X.astype("float32")
    mask = np.array([[[1, 0, 1, 1, 0, 1]], [[1, 1, 1, 0, 0, 0]]], dtype=bool)
    np.testing.assert_allclose(layers.Softmax()(x, mask=mask),
                               keras.ops.convert_to_numpy(keras.layers.Softmax()(x, mask=mask)), atol=1e-7)
    inputs = keras.Input((3, 6))
    reference = keras.Model(inputs, keras.layers.ActivityRegularization(l1=0.01, l2=0.1)(inputs))
    reference(x)
    ours = kgraph.Model(x_in := kgraph.Input((3, 6)), layers.ActivityRegularization(l1=0.01, l2=0.1)(x_in))
    ours(x)
    np.testing.assert_allclose(float(sum(ours.losses)), float(keras.ops.convert_to_numpy(sum(reference.losses))),
                               rtol=1e-5)
