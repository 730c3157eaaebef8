"""kgraph.constraints: Keras's weight constraints (math, names, configs) and their application after an optimizer
step, compared with Keras 3 where it is installed."""
import numpy as np
import pytest

import kgraph
from kgraph import constraints, layers, optimizers

W = np.random.default_rng(0).standard_normal((4, 3)).astype("float32") * 2.0

CASES = [(constraints.MaxNorm, {"max_value": 1.5, "axis": 0}), (constraints.MaxNorm, {"max_value": 2, "axis": [0, 1]}),
         (constraints.MinMaxNorm, {"min_value": 0.5, "max_value": 1.0, "rate": 0.7, "axis": 1}),
         (constraints.NonNeg, {}), (constraints.UnitNorm, {"axis": 0}), (constraints.Constraint, {})]


@pytest.fixture(scope="module")
def keras():
    return pytest.importorskip("keras")


def _norms(w, axis):
    return np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))


def test_the_math_is_keras_formulas():
    eps = kgraph.backend.epsilon()
    norms = _norms(W, 0)
    np.testing.assert_allclose(constraints.MaxNorm(1.5)(W), W * np.clip(norms, 0, 1.5) / (eps + norms), rtol=1e-6)
    np.testing.assert_allclose(constraints.UnitNorm(0)(W), W / (eps + norms), rtol=1e-6)
    np.testing.assert_array_equal(constraints.NonNeg()(W), np.maximum(W, 0))
    desired = 0.5 * np.clip(norms, 1.0, 2.0) + 0.5 * norms
    np.testing.assert_allclose(constraints.MinMaxNorm(1.0, 2.0, rate=0.5)(W), W * desired / (eps + norms), rtol=1e-6)
    assert constraints.Constraint()(W) is W


@pytest.mark.parametrize("cls,config", CASES)
def test_same_values_and_configs_as_keras(keras, cls, config):
    ours, theirs = cls(**config), getattr(keras.constraints, cls.__name__)(**config)
    np.testing.assert_allclose(ours(W), keras.ops.convert_to_numpy(theirs(keras.ops.convert_to_tensor(W))),
                               rtol=1e-6, atol=1e-7)
    assert ours.get_config() == theirs.get_config()


def test_get_names_aliases_and_callables():
    assert constraints.max_norm is constraints.MaxNorm and constraints.non_neg is constraints.NonNeg
    assert constraints.unit_norm is constraints.UnitNorm and constraints.min_max_norm is constraints.MinMaxNorm
    for name, cls in [("max_norm", constraints.MaxNorm), ("MaxNorm", constraints.MaxNorm),
                      ("non_neg", constraints.NonNeg), ("unit_norm", constraints.UnitNorm),
                      ("min_max_norm", constraints.MinMaxNorm)]:
        assert type(constraints.get(name)) is cls
    assert constraints.get(None) is None
    assert type(constraints.get(constraints.NonNeg)) is constraints.NonNeg

    def clip(w):
        return w
    assert constraints.get(clip) is clip
    with pytest.raises(ValueError, match="Could not interpret constraint identifier"):
        constraints.get("no_such_constraint")
    with pytest.raises(ValueError, match="Could not interpret constraint identifier"):
        constraints.get(3)


def test_serialize_deserialize_round_trip_and_keras_configs():
    original = constraints.MinMaxNorm(0.2, 3.0, rate=0.5, axis=[0, 1])
    data = constraints.serialize(original)
    assert data == {"module": "kgraph.constraints", "class_name": "MinMaxNorm",
                    "config": {"min_value": 0.2, "max_value": 3.0, "rate": 0.5, "axis": [0, 1]}}
    clone = constraints.deserialize(data)
    assert type(clone) is constraints.MinMaxNorm and clone.get_config() == original.get_config()
    keras_form = {"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 3, "axis": 1},
                  "registered_name": None}
    assert constraints.get(keras_form).get_config() == {"max_value": 3, "axis": 1}
    assert constraints.serialize(None) is None
    with pytest.raises(ValueError, match="Unknown constraint"):
        constraints.deserialize({"class_name": "Nope", "config": {}})

    class Halve(constraints.Constraint):
        def __call__(self, w):
            return w * 0.5
    assert type(constraints.deserialize({"class_name": "Halve", "config": {}}, {"Halve": Halve})) is Halve


def test_add_weight_stores_the_constraint_and_the_optimizer_applies_it():
    layer = layers.Dense(3, kernel_constraint="non_neg", bias_constraint=constraints.MaxNorm(0.1))
    layer.build((None, 4))
    assert type(layer.kernel.constraint) is constraints.NonNeg
    layer.set_weights([W, np.full((3,), -5.0, "float32")])
    optimizers.SGD(0.0).apply([np.zeros_like(W), np.zeros(3, "float32")], layer.trainable_weights)
    np.testing.assert_array_equal(layer.kernel.numpy(), np.maximum(W, 0))
    np.testing.assert_allclose(np.abs(layer.bias.numpy()), 0.1 / np.sqrt(3) * np.ones(3), rtol=1e-5)
    unconstrained = layers.Dense(3)
    unconstrained.build((None, 4))
    assert unconstrained.kernel.constraint is None


def test_a_constraint_applies_to_the_variables_it_updates_only():
    kept = kgraph.Variable(-np.ones(2, "float32"))
    kept.constraint = constraints.NonNeg()
    other = kgraph.Variable(-np.ones(2, "float32"))
    other.constraint = constraints.NonNeg()
    optimizers.SGD(0.1).apply_gradients([(np.ones(2, "float32"), kept)])
    np.testing.assert_array_equal(kept.numpy(), 0.0)
    np.testing.assert_array_equal(other.numpy(), -1.0)  # no update, no projection (as Keras)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_weights_after_training_steps_match_keras(keras, optimizer):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((8, 4)).astype("float32"), rng.standard_normal((8, 2)).astype("float32")
    arguments = {"kernel_constraint": {"class_name": "MaxNorm", "config": {"max_value": 0.5, "axis": 0}},
                 "bias_constraint": "non_neg"}

    def make(lib, constraint_lib):
        inputs = lib.Input((4,))
        model = lib.Model(inputs, lib.layers.Dense(2, kernel_constraint=constraint_lib.get(
            arguments["kernel_constraint"]), bias_constraint=arguments["bias_constraint"])(inputs))
        model.compile(optimizer=optimizer, loss="mse")
        return model
    ours, theirs = make(kgraph, constraints), make(keras, keras.constraints)
    start = [rng.standard_normal(w.shape).astype("float32") for w in ours.get_weights()]
    ours.set_weights(start)
    theirs.set_weights(start)
    ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    kernel = ours.get_weights()[0]
    assert np.all(np.sqrt((kernel ** 2).sum(axis=0)) <= 0.5 + 1e-6) and np.all(ours.get_weights()[1] >= 0)
