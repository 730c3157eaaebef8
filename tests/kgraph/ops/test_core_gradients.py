"""Finite-difference checks (float64) of the core layers and of whole graphs with fan-out, sharing, nesting."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from tests.gradcheck import check_gradients, check_variable_gradients


@pytest.fixture(autouse=True)
def float64():
    previous = kgraph.backend.floatx()
    kgraph.backend.set_floatx("float64")
    yield
    kgraph.backend.set_floatx(previous)


RNG = np.random.default_rng(0)


def _x(*shape):
    # Values kept away from the kinks of relu-like activations at 0.
    x = RNG.uniform(0.2, 1.5, size=shape) * RNG.choice([-1.0, 1.0], size=shape)
    return x.astype("float64")


ACTIVATIONS = ["relu", "sigmoid", "tanh", "softmax", "linear", "gelu", "elu", "selu", "softplus", "softsign",
               "swish", "silu", "leaky_relu", "exponential", "hard_sigmoid"]


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_dense_gradients(activation):
    dense = layers.Dense(3, activation=activation)
    x = _x(4, 5) * (0.3 if activation == "hard_sigmoid" else 1.0)
    dense(x)
    check_gradients(lambda xs: dense(xs[0]), [x], rtol=1e-5, atol=1e-6)
    check_variable_gradients(lambda: dense(x), dense.trainable_weights, rtol=1e-5, atol=1e-6)


def test_dense_on_rank_3_inputs():
    dense = layers.Dense(2)
    x = _x(2, 3, 4)
    dense(x)
    check_gradients(lambda xs: dense(xs[0]), [x])
    check_variable_gradients(lambda: dense(x), dense.trainable_weights)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activation_layer_gradients(activation):
    layer = layers.Activation(activation)
    scale = 0.3 if activation == "hard_sigmoid" else 1.0
    check_gradients(lambda xs: layer(xs[0]), [_x(3, 4) * scale], atol=1e-6)


@pytest.mark.parametrize("make", [layers.Flatten, lambda: layers.Reshape((6, 2)), lambda: layers.Reshape((-1,)),
                                  layers.Identity])
def test_reshaping_gradients(make):
    layer = make()
    check_gradients(lambda xs: layer(xs[0]), [_x(2, 3, 4)])


@pytest.mark.parametrize("cls", [layers.Add, layers.Subtract, layers.Multiply, layers.Average, layers.Maximum,
                                 layers.Minimum])
def test_merge_gradients(cls):
    layer = cls()
    check_gradients(lambda xs: layer([xs[0], xs[1]]), [_x(3, 4), _x(3, 4)])


def test_merge_with_broadcasting_and_three_inputs():
    check_gradients(lambda xs: layers.Add()([xs[0], xs[1], xs[2]]), [_x(3, 4), _x(1, 4), _x(3, 4)])
    check_gradients(lambda xs: layers.Multiply()([xs[0], xs[1]]), [_x(2, 3, 4), _x(2, 1, 4)])


@pytest.mark.parametrize("axis", [-1, 1])
def test_concatenate_gradients(axis):
    layer = layers.Concatenate(axis=axis)
    check_gradients(lambda xs: layer([xs[0], xs[1]]), [_x(2, 3, 4), _x(2, 3, 4)])


def test_dropout_gradient_is_the_scaled_mask():
    drop = layers.Dropout(0.4, seed=5)
    x = _x(50, 8)
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        out = drop(x, training=True)
        total = ops.sum(out)
    grad = tape.gradient(total, x)
    kept = out != 0
    np.testing.assert_allclose(grad[kept], 1 / 0.6)
    np.testing.assert_array_equal(grad[~kept], 0.0)


def _graph_with_fan_out_sharing_and_nesting():
    inner_in = kgraph.Input(shape=(3,))
    inner = kgraph.Model(inner_in, layers.Dense(3, activation="tanh")(inner_in))
    x = kgraph.Input(shape=(3,))
    shared = layers.Dense(3, activation="sigmoid")
    h = shared(x)
    twice = shared(layers.Multiply()([h, h]))              # fan-out: h feeds both sides of Multiply
    nested = inner(inner(layers.Add()([h, twice])))         # nested model called twice
    out = layers.Dense(2)(layers.Concatenate()([nested, x]))
    return kgraph.Model(x, out)


def test_whole_graph_gradients_accumulate_over_fan_out_sharing_and_nesting():
    model = _graph_with_fan_out_sharing_and_nesting()
    x = _x(4, 3)
    model(x)
    check_gradients(lambda xs: model(xs[0]), [x], atol=1e-6)
    check_variable_gradients(lambda: model(x), model.trainable_weights, atol=1e-6)


def test_loss_gradients_through_a_model():
    model = _graph_with_fan_out_sharing_and_nesting()
    x, y = _x(5, 3), _x(5, 2)
    loss = kgraph.losses.MeanSquaredError()
    check_variable_gradients(lambda: loss(y, model(x)), model.trainable_weights, atol=1e-7)


def test_custom_layer_trains_without_backward_code():
    class Scale(kgraph.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, inputs):
            return ops.multiply(ops.tanh(inputs), self.w)

        def compute_output_shape(self, input_shape):
            return input_shape

    layer = Scale()
    x = _x(3, 4)
    layer(x)
    check_variable_gradients(lambda: layer(x), layer.trainable_weights)


def test_gradient_tape_custom_training_loop():
    kgraph.utils.set_random_seed(0)
    model = kgraph.Sequential([kgraph.Input(shape=(2,)), layers.Dense(8, activation="tanh"), layers.Dense(1)])
    optimizer = kgraph.optimizers.SGD(learning_rate=0.1)
    x = RNG.normal(size=(64, 2))
    y = (x[:, :1] * x[:, 1:]).astype("float64")
    loss_fn = kgraph.losses.MeanSquaredError()
    first = None
    for _ in range(200):
        with kgraph.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply(grads, model.trainable_weights)
        first = float(loss) if first is None else first
    assert float(loss) < 0.5 * first
