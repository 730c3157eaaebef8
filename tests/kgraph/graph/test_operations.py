"""Operations in the graph: kgraph.ops calls and tensor operators on KerasTensors record op nodes."""
import json

import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from tests import op_models

# float32 models compared with float64 NumPy references: a few ulps of the outputs' scale.
RTOL, ATOL = 1e-5, 1e-5


def test_operators_record_op_nodes_with_keras_names_and_shapes():
    x = kgraph.Input(shape=(4, 3), name="x")
    cases = {
        "add": (x + 1, (None, 4, 3)), "subtract": (2.0 - x, (None, 4, 3)), "multiply": (x * x, (None, 4, 3)),
        "divide": (x / 2, (None, 4, 3)), "negative": (-x, (None, 4, 3)), "power": (x ** 2, (None, 4, 3)),
        "matmul": (x @ np.ones((3, 5), "float32"), (None, 4, 5)), "get_item": (x[:, 1:, None, ::2], (None, 3, 1, 2)),
        "greater": (x > 0, (None, 4, 3)), "abs": (abs(x), (None, 4, 3)), "floor_divide": (x // 2, (None, 4, 3)),
        "mod": (x % 2, (None, 4, 3)), "transpose": (x.T, (3, 4, None)),
    }
    for name, (tensor, shape) in cases.items():
        operation = tensor._keras_history.layer
        assert tensor.shape == shape, name
        assert operation.name.startswith(name) and isinstance(operation, kgraph.Operation)
        assert not isinstance(operation, kgraph.Layer)
    assert (x > 0).dtype == "bool" and x[..., 0].shape == (None, 4)
    assert (x + 1)._keras_history.layer.inbound_nodes[0].input_tensors == [x]


def test_ops_functions_between_layers_build_a_model_that_lists_operations():
    model, _ = op_models.residual()
    assert [layer.name for layer in model.layers] == ["x", "d1", "head"]
    assert [op.name for op in model.operations][:2] == ["x", "d1"]
    ops_only = [op for op in model.operations if not isinstance(op, kgraph.Layer)]
    assert [type(op).__name__ for op in ops_only] == ["Add"]
    lines = []
    model.summary(print_fn=lines.append)
    assert any("(Add)" in line for line in lines)


@pytest.mark.parametrize("build", op_models.BUILDERS, ids=lambda b: b.__name__)
def test_predict_matches_numpy_reference(build):
    model, reference = build()
    (a,) = op_models.inputs_for(model, 7)
    np.testing.assert_allclose(model.predict(a, verbose=0), reference(a.astype("float64")), rtol=RTOL, atol=ATOL)


def test_operator_residual_equals_the_same_model_made_of_layers():
    model, _ = op_models.residual()
    with_layers = op_models.add_as_layers()
    with_layers.set_weights(model.get_weights())
    (a,) = op_models.inputs_for(model, 5)
    np.testing.assert_array_equal(model.predict(a, verbose=0), with_layers.predict(a, verbose=0))


@pytest.mark.parametrize("build", op_models.BUILDERS, ids=lambda b: b.__name__)
def test_fit_learns_and_save_load_round_trips(build, tmp_path):
    kgraph.utils.set_random_seed(1)
    model, _ = build()
    (a,) = op_models.inputs_for(model, 96, seed=3)
    teacher, _ = build()
    target = teacher.predict(a, verbose=0)
    model.compile(optimizer=kgraph.optimizers.Adam(0.02), loss="mse")
    history = model.fit(a, target, epochs=30, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    assert [type(op).__name__ for op in loaded.operations] == [type(op).__name__ for op in model.operations]
    np.testing.assert_array_equal(loaded.predict(a, verbose=0), model.predict(a, verbose=0))


@pytest.mark.parametrize("build", op_models.BUILDERS, ids=lambda b: b.__name__)
def test_model_from_config_and_json(build):
    model, _ = build()
    config = model.get_config()
    op_entries = [entry for entry in config["layers"] if entry.get("module") == "kgraph.ops"]
    assert op_entries and all(set(entry["config"]) == {"name"} for entry in op_entries)
    tensor_arg = op_entries[0]["inbound_nodes"][0]["args"][0]
    assert tensor_arg["class_name"] == "__keras_tensor__" and "keras_history" in tensor_arg["config"]
    rebuilt = kgraph.Model.from_config(config)
    assert isinstance(rebuilt, kgraph.models.Functional)
    rebuilt.set_weights(model.get_weights())
    from_json = kgraph.models.model_from_json(json.dumps(json.loads(model.to_json())))
    from_json.set_weights(model.get_weights())
    (a,) = op_models.inputs_for(model, 4)
    expected = model.predict(a, verbose=0)
    np.testing.assert_array_equal(rebuilt.predict(a, verbose=0), expected)
    np.testing.assert_array_equal(from_json.predict(a, verbose=0), expected)


def test_from_config_with_nested_and_shared_layers():
    inner_in = kgraph.Input(shape=(3,), name="inner_in")
    inner = kgraph.Model(inner_in, layers.Dense(3, name="inner_dense")(inner_in) * 2.0, name="inner")
    x = kgraph.Input(shape=(3,), name="x")
    shared = layers.Dense(3, name="shared")
    y = inner(shared(x)) + shared(-x)
    model = kgraph.Model(x, ops.concatenate([y, y[:, :1]], axis=-1), name="outer")
    rebuilt = kgraph.Model.from_config(model.get_config())
    rebuilt.set_weights(model.get_weights())
    (a,) = op_models.inputs_for(model, 3)
    np.testing.assert_array_equal(rebuilt.predict(a, verbose=0), model.predict(a, verbose=0))
    assert len(rebuilt.get_layer("shared").inbound_nodes) == 2


def test_sub_model_sliced_at_an_op_output():
    x = kgraph.Input(shape=(4,), name="x")
    h = layers.Dense(4, name="d1")(x) * 3.0
    y = layers.Dense(2, name="d2")(ops.relu(h))
    model = kgraph.Model(x, y)
    tail = kgraph.Model(h, y)
    (a,) = op_models.inputs_for(model, 3)
    hidden = kgraph.Model(x, h).predict(a, verbose=0)
    np.testing.assert_allclose(tail.predict(hidden, verbose=0), model.predict(a, verbose=0), rtol=RTOL, atol=ATOL)


def test_getitem_keys_survive_config_round_trip():
    x = kgraph.Input(shape=(4, 5), name="x")
    y = x[..., None, 1::2] + x[:, -1:, None, :3:2]
    model = kgraph.Model(x, y)
    rebuilt = kgraph.models.model_from_json(model.to_json())
    a = np.arange(2 * 4 * 5, dtype="float32").reshape(2, 4, 5)
    expected = a[..., None, 1::2] + a[:, -1:, None, :3:2]
    np.testing.assert_array_equal(rebuilt.predict(a, verbose=0), expected)


def test_numpy_functions_on_keras_tensors_are_ops_or_clear_errors():
    x = kgraph.Input(shape=(3,))
    assert np.exp(x)._keras_history.layer.op_name == "exp"
    assert (np.ones(3, "float32") + x)._keras_history.layer.op_name == "add"
    assert np.concatenate([x, x], axis=-1).shape == (None, 6)
    with pytest.raises(TypeError, match="numpy.sort` is not a kgraph op"):
        np.sort(x)
    with pytest.raises(TypeError, match="Python bool"):
        if x > 0:
            pass


def test_shape_inference_failure_names_the_op_and_its_inputs():
    x = kgraph.Input(shape=(3,))
    with pytest.raises(ValueError, match=r"'matmul(_\d+)?'.*shape=\(None, 3\)"):
        ops.matmul(x, np.ones((4, 2), "float32"))


def test_long_chain_of_add_ops_builds_and_runs():
    x = kgraph.Input(shape=(2,))
    y = x
    for _ in range(3000):
        y = y + 1.0
    model = kgraph.Model(x, y)
    assert len(model.operations) == 3001
    np.testing.assert_array_equal(model.predict(np.zeros((1, 2), "float32"), verbose=0), [[3000.0, 3000.0]])


def test_output_names_never_repeat():
    x = kgraph.Input(shape=(3,), name="x")
    model = kgraph.Model(x, list(ops.moments(x, axes=[1])) + list(ops.moments(x * 2.0, axes=[1])))
    assert len(set(model.output_names)) == 4
