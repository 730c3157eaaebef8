"""Custom layers written as in the Keras guide: symbolic build by tracing, training, gradients, saving.

Gradient checks run in float64 (finite differences need it) with the default
tolerances of ``tests.gradcheck`` (rtol 1e-5, atol 1e-7).
"""
import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from tests import custom_layers as C
from tests.gradcheck import check_variable_gradients


def _model(custom, dtype="float32", units=5):
    x = kgraph.Input(shape=(4,), name="x", dtype=dtype)
    h = layers.Dense(units, activation="tanh", name="before", dtype=dtype)(x)
    y = custom(h)
    return kgraph.Model(x, layers.Dense(2, name="after", dtype=dtype)(y))


CUSTOM = {
    "linear": lambda dtype: C.Linear(3, dtype=dtype),
    "normalized_projection": lambda dtype: C.NormalizedProjection(3, dtype=dtype),
    "activity_regularizer": lambda dtype: C.ActivityRegularizer(0.1, dtype=dtype),
    "operator_mix": lambda dtype: C.OperatorMix(dtype=dtype),
}
SHAPES = {"linear": (None, 3), "normalized_projection": (None, 3), "activity_regularizer": (None, 5),
          "operator_mix": (None, 8)}


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_builds_symbolically_without_compute_output_shape(name):
    layer = CUSTOM[name]("float32")
    x = kgraph.Input(shape=(5,))
    y = layer(x)
    assert y.shape == SHAPES[name] and y.dtype == "float32"
    assert layer.built and len(layer.inbound_nodes) == 1
    # Tracing recorded nothing on the layer's input beyond the layer's own node.
    assert [n.outbound_layer for n in x._keras_history.layer.outbound_nodes] == [layer]


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_gradients_reach_the_layer_and_the_layers_before(name):
    kgraph.utils.set_random_seed(0)
    model = _model(CUSTOM[name]("float64"), dtype="float64")
    a = np.random.default_rng(1).standard_normal((3, 4))
    check_variable_gradients(lambda: model(a, training=True), model.trainable_weights)


def test_add_loss_reaches_training_loss():
    kgraph.utils.set_random_seed(0)
    model = _model(C.ActivityRegularizer(rate=10.0))
    a = np.random.default_rng(0).standard_normal((8, 4)).astype("float32")
    target = np.zeros((8, 2), "float32")
    model.compile(optimizer="sgd", loss="mse")
    plain = float(np.mean((model.predict(a, verbose=0) - target) ** 2))
    loss = model.evaluate(a, target, verbose=0)
    hidden = kgraph.Model(model.input, model.get_layer("before").output).predict(a, verbose=0)
    assert loss == pytest.approx(plain + 10.0 * np.mean(hidden ** 2), rel=1e-4)


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_fit_learns_and_save_load(name, tmp_path):
    kgraph.utils.set_random_seed(2)
    model = _model(CUSTOM[name]("float32"))
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 4)).astype("float32")
    target = np.stack([np.sin(a[:, 0]) + a[:, 1], a[:, 2] * a[:, 3]], axis=-1).astype("float32")
    model.compile(optimizer=kgraph.optimizers.Adam(0.02), loss="mse")
    history = model.fit(a, target, epochs=25, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.6 * history.history["loss"][0]
    model.save(tmp_path / "custom.pkl")
    loaded = kgraph.load_model(tmp_path / "custom.pkl")
    np.testing.assert_array_equal(loaded.predict(a, verbose=0), model.predict(a, verbose=0))


def test_operators_inside_call_keep_gradients_of_earlier_layers():
    class Ops(kgraph.layers.Layer):
        def call(self, x):
            return ops.concatenate([x * 2.0, x[:, 0:1], -x, x[:, 0][:, None] ** 2], axis=-1)

    model = _model(Ops(dtype="float64"), dtype="float64")
    a = np.random.default_rng(4).standard_normal((3, 4))
    grads = check_variable_gradients(lambda: model(a), model.trainable_weights)
    assert all(g is not None and np.any(g != 0) for g in grads)


def test_numpy_function_that_is_no_op_fails_loudly_in_training_and_runs_in_inference():
    model = _model(C.SortsWithNumPy())
    assert model.output_shape == (None, 2)
    a = np.random.default_rng(5).standard_normal((4, 4)).astype("float32")
    hidden = kgraph.Model(model.input, model.get_layer("before").output).predict(a, verbose=0)
    after = model.get_layer("after")
    np.testing.assert_allclose(model.predict(a, verbose=0), after(np.sort(hidden, axis=-1)), rtol=1e-6)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(TypeError, match=r"numpy\.sort.*stop_gradient"):
        model.fit(a, np.zeros((4, 2), "float32"), epochs=1, verbose=0)


def test_in_place_change_of_a_recorded_array_is_refused():
    class InPlace(kgraph.layers.Layer):
        def call(self, x):
            x[:, 0] = 0.0
            return x

    model = _model(InPlace())
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(TypeError, match="Item assignment"):
        model.fit(np.ones((2, 4), "float32"), np.zeros((2, 2), "float32"), epochs=1, verbose=0)


def test_taped_arrays_behave_as_plain_arrays_after_the_tape():
    w = kgraph.Variable(np.ones(3), name="w")
    with kgraph.GradientTape() as tape:
        y = ops.multiply(w, 2.0)
        z = np.exp(y).sum()
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(tape.gradient(z, w), 2 * np.exp(2.0) * np.ones(3))
    later = y * 3.0
    assert type(later) is np.ndarray and later[0] == 6.0


def test_watched_plain_input_is_recorded_inside_call():
    class Scale(kgraph.layers.Layer):
        def call(self, x):
            return (x * 3.0).sum(axis=-1)

    x = np.arange(6, dtype="float32").reshape(2, 3)
    with kgraph.GradientTape() as tape:
        tape.watch(x)
        y = Scale()(x)
    np.testing.assert_array_equal(tape.gradient(y, x), np.full((2, 3), 3.0, "float32"))
