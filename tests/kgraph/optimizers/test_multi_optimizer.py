"""MultiOptimizer and OptimizerMap: variables routed by path to their own optimizers, as Keras 3 does."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, optimizers
from kgraph.backend.variable import Variable
from kgraph.saving.keras_compile import optimizer_variables

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(3)
INIT = {"enc/kernel": RNG.normal(size=(3, 4)).astype("float32"), "enc/bias": np.zeros(4, "float32"),
        "dec/kernel": RNG.normal(size=(4, 2)).astype("float32")}
GRADS = [{p: RNG.normal(size=v.shape).astype("float32") for p, v in INIT.items()} for _ in range(4)]
X = RNG.normal(size=(16, 3)).astype("float32")
Y = RNG.normal(size=(16, 2)).astype("float32")
FIT = {"batch_size": 8, "shuffle": False, "verbose": 0}


def test_optimizer_map_lookup_as_keras():
    adam, sgd, rmsprop = optimizers.Adam(), optimizers.SGD(), optimizers.RMSprop()
    mapping = optimizers.OptimizerMap(default_optimizer=rmsprop)
    mapping["encoder/layer_0/dense"] = adam
    mapping["encoder/.*"] = sgd
    mapping["decoder"] = adam
    assert mapping["decoder"] is adam and mapping["encoder/layer_0/dense"] is adam
    assert mapping["encoder/layer_0/attention/query"] is sgd and mapping["decoder/layer_0/dense"] is rmsprop
    mapping["enc.*"] = sgd
    with pytest.raises(ValueError, match="Multiple optimizers assigned to variable encoder/x"):
        mapping["encoder/x"]
    with pytest.raises(ValueError, match="already exists"):
        mapping["decoder"] = sgd
    with pytest.raises(ValueError, match="cannot be LossScaleOptimizer|cannot be used inside"):
        mapping["other"] = optimizers.LossScaleOptimizer(optimizers.SGD())
    with pytest.raises(TypeError, match="default_optimizer must be"):
        optimizers.OptimizerMap("sgd")
    with pytest.raises(AttributeError, match="Learning rate cannot be accessed on a MultiOptimizer"):
        optimizers.MultiOptimizer(mapping).learning_rate


def _kgraph_map():
    mapping = optimizers.OptimizerMap(optimizers.SGD(0.1, momentum=0.5))
    mapping[".*enc/.*"] = optimizers.Adam(0.01)
    return mapping


def _keras_map():
    mapping = keras.optimizers.OptimizerMap(keras.optimizers.SGD(0.1, momentum=0.5))
    mapping[".*enc/.*"] = keras.optimizers.Adam(0.01)
    return mapping


def test_the_same_trajectory_as_keras():
    ours = optimizers.MultiOptimizer(_kgraph_map())
    variables = [Variable(v.copy(), name=p.split("/")[1], path=p) for p, v in INIT.items()]
    theirs = keras.optimizers.MultiOptimizer(_keras_map())
    keras_variables = []
    for path, value in INIT.items():
        with keras.name_scope(path.split("/")[0]):
            keras_variables.append(keras.Variable(value.copy(), name=path.split("/")[1]))
    for step in GRADS:
        ours.apply([step[v.path] for v in variables], variables)
        theirs.apply([keras.ops.convert_to_tensor(step[v.path]) for v in keras_variables], keras_variables)
    for a, b in zip(variables, keras_variables):
        np.testing.assert_allclose(a.numpy(), keras.ops.convert_to_numpy(b), rtol=1e-5, atol=1e-6)
    assert [int(o.iterations) for o in ours.optimizers] == [4, 4] and int(ours.iterations) == 4
    assert [type(o).__name__ for o in ours.optimizers] == ["Adam", "SGD"]
    assert len(ours.optimizers[0]._trainable_variables) == 2 and len(ours.optimizers[1]._trainable_variables) == 1
    assert len(ours.variables) == len(theirs.variables) - 3  # Keras also keeps three learning rates
    config = ours.get_config()
    restored = optimizers.deserialize(optimizers.serialize(ours))
    assert restored.get_config() == config and [type(o) for o in restored.optimizers] == [optimizers.Adam,
                                                                                           optimizers.SGD]


def _models():
    kgraph.utils.set_random_seed(1)
    ours = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(4, activation="tanh", name="enc"),
                              layers.Dense(2, name="dec")])
    keras.utils.set_random_seed(1)
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="enc"),
                               keras.layers.Dense(2, name="dec")])
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=optimizers.MultiOptimizer(_kgraph_map()), loss="mse")
    theirs.compile(optimizer=keras.optimizers.MultiOptimizer(_keras_map()), loss="mse")
    return ours, theirs


def test_fit_and_keras_files_both_ways(tmp_path):
    ours, theirs = _models()
    # kgraph names a Sequential's weights "enc/kernel", Keras "sequential/enc/kernel": the pattern matches both.
    for model in (ours, theirs):
        model.fit(X, Y, epochs=2, **FIT)
    theirs_values = [keras.ops.convert_to_numpy(v) for v in theirs.optimizer.variables]
    assert max(float(np.abs(np.asarray(a, "float64") - b).max())
               for a, b in zip(optimizer_variables(ours), theirs_values)) < 1e-5
    ours.save(tmp_path / "ours.keras")
    theirs.save(tmp_path / "theirs.keras")
    in_keras = keras.saving.load_model(tmp_path / "ours.keras")
    assert isinstance(in_keras.optimizer, keras.optimizers.MultiOptimizer)
    in_kgraph = kgraph.load_model(tmp_path / "theirs.keras")
    assert isinstance(in_kgraph.optimizer, optimizers.MultiOptimizer) and int(in_kgraph.optimizer.iterations) == 4
    assert [int(o.iterations) for o in in_kgraph.optimizer.optimizers] == [4, 4]
    np.testing.assert_array_equal(np.concatenate([np.ravel(v) for v in optimizer_variables(in_kgraph)]),
                                  np.concatenate([np.ravel(v) for v in theirs_values]))
    back = kgraph.load_model(tmp_path / "ours.keras")
    assert back.optimizer.get_config() == ours.optimizer.get_config()
    for model in (ours, back, in_kgraph):
        model.fit(X, Y, epochs=1, **FIT)
    theirs.fit(X, Y, epochs=1, **FIT)
    np.testing.assert_array_equal(np.concatenate([w.ravel() for w in back.get_weights()]),
                                  np.concatenate([w.ravel() for w in ours.get_weights()]))
    keras_weights = np.concatenate([keras.ops.convert_to_numpy(w).ravel() for w in theirs.weights])
    for model in (ours, in_kgraph):  # kgraph resumed Keras's training
        np.testing.assert_allclose(np.concatenate([w.ravel() for w in model.get_weights()]), keras_weights,
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("suffix", [".pkl", ".keras"])
def test_kgraph_files_resume_exactly(tmp_path, suffix):
    ours, _ = _models()
    ours.fit(X, Y, epochs=1, **FIT)
    ours.save(tmp_path / f"model{suffix}")
    loaded = kgraph.load_model(tmp_path / f"model{suffix}")
    assert int(loaded.optimizer.iterations) == 2 and [int(o.iterations) for o in loaded.optimizer.optimizers] == [2, 2]
    assert all(np.array_equal(a, b) for a, b in zip(optimizer_variables(loaded), optimizer_variables(ours)))
    ours.fit(X, Y, epochs=1, **FIT)
    loaded.fit(X, Y, epochs=1, **FIT)
    assert all(np.array_equal(a, b) for a, b in zip(loaded.get_weights(), ours.get_weights()))


def test_inside_a_loss_scale_optimizer(tmp_path):
    kgraph.utils.set_random_seed(1)
    model = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(4, name="enc"), layers.Dense(2, name="dec")])
    model.compile(optimizer=optimizers.LossScaleOptimizer(optimizers.MultiOptimizer(_kgraph_map())), loss="mse")
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "model.keras")
    loaded = kgraph.load_model(tmp_path / "model.keras")
    inner = loaded.optimizer.inner_optimizer
    assert isinstance(inner, optimizers.MultiOptimizer) and int(loaded.optimizer.iterations) == 2
    assert all(np.array_equal(a, b) for a, b in zip(optimizer_variables(loaded), optimizer_variables(model)))


def test_a_callable_chooses_the_optimizer():
    adam, sgd = optimizers.Adam(0.01), optimizers.SGD(0.1)
    multi = optimizers.MultiOptimizer(lambda variable: adam if variable.path.endswith("kernel") else sgd)
    variables = [Variable(v.copy(), name=p.split("/")[1], path=p) for p, v in INIT.items()]
    multi.apply([GRADS[0][v.path] for v in variables], variables)
    assert multi.optimizers == [adam, sgd] and [len(o._trainable_variables) for o in multi.optimizers] == [2, 1]
    np.testing.assert_allclose(variables[1].numpy(), INIT["enc/bias"] - 0.1 * GRADS[0]["enc/bias"], rtol=1e-6)
    with pytest.raises(ValueError, match="must be a kgraph Optimizer"):
        optimizers.MultiOptimizer(lambda variable: "adam").build([Variable(np.zeros(2), name="x")])


def test_inner_optimizer_groups_split_the_state_as_keras_files_do():
    from kgraph.saving.keras_compile import inner_optimizer_groups
    ours, theirs = _models()
    for model in (ours, theirs):
        model.fit(X, Y, epochs=1, **FIT)
    groups = inner_optimizer_groups(ours)
    # Keras names them as its optimizers are named ("adam", or "adam_4" where others were made before)
    assert list(groups) == ["optimizer/optimizers/adam/vars", "optimizer/optimizers/sgd/vars"]
    assert [o.name.split("_")[0] for o in theirs.optimizer.optimizers] == ["adam", "sgd"]
    flat = [value for values in groups.values() for value in values]
    assert all(np.array_equal(a, b) for a, b in zip(flat, optimizer_variables(ours)[2:]))
    for values, inner in zip(groups.values(), theirs.optimizer.optimizers):
        expected = [keras.ops.convert_to_numpy(v) for v in inner.variables]
        assert [np.shape(v) for v in values] == [np.shape(v) for v in expected]
        np.testing.assert_allclose(np.concatenate([np.ravel(v) for v in values]).astype("float64"),
                                   np.concatenate([np.ravel(v) for v in expected]).astype("float64"), atol=1e-5)
