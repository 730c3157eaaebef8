"""The optimizers kgraph added for Keras 3's ``keras.optimizers`` names: the same trajectory as Keras's own from the
same weights and gradients (several steps, with and without weight decay), the same ``get_config()``, string
identifiers, and ``.keras`` files that Keras and kgraph read from each other.
"""
import numpy as np
import pytest

import kgraph
from kgraph import layers, optimizers
from kgraph.backend.variable import Variable
from kgraph.saving.keras_compile import optimizer_variables

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(0)
SHAPES = {"dense/kernel": (4, 3), "dense/bias": (3,), "conv/kernel": (2, 2, 3, 2), "embedding/embeddings": (5, 2)}
INIT = {path: RNG.normal(size=shape).astype("float32") for path, shape in SHAPES.items()}
GRADS = [{path: (RNG.normal(size=shape) * 0.5).astype("float32") for path, shape in SHAPES.items()}
         for _ in range(6)]

# name: (arguments, supports weight decay as an argument)
CASES = {
    "Adadelta": {"learning_rate": 0.5, "rho": 0.9},
    "Adafactor": {"learning_rate": 0.05},
    "Adamax": {"learning_rate": 0.02, "beta_1": 0.8},
    "Ftrl": {"learning_rate": 0.1, "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.02,
             "l2_shrinkage_regularization_strength": 0.01, "beta": 0.1},
    "Lamb": {"learning_rate": 0.01},
    "Lion": {"learning_rate": 0.01, "beta_1": 0.8},
    "Nadam": {"learning_rate": 0.02},
    "Muon": {"learning_rate": 0.02, "exclude_layers": ["conv"]},
    "ScheduleFreeAdamW": {"learning_rate": 0.02, "warmup_steps": 3},
}


def _kgraph_run(optimizer, steps=len(GRADS)):
    variables = [Variable(value.copy(), name=path.split("/")[1], path=path) for path, value in INIT.items()]
    for step in GRADS[:steps]:
        optimizer.apply([step[v.path].copy() for v in variables], variables)
    return [v.numpy() for v in variables]


def _keras_run(optimizer, steps=len(GRADS)):
    variables = []
    for path, value in INIT.items():
        scope, name = path.split("/")
        with keras.name_scope(scope):
            variables.append(keras.Variable(value.copy(), name=name))
    assert [v.path for v in variables] == list(INIT)
    for step in GRADS[:steps]:
        optimizer.apply([keras.ops.convert_to_tensor(step[v.path]) for v in variables], variables)
    return [keras.ops.convert_to_numpy(v) for v in variables], optimizer


@pytest.mark.parametrize("weight_decay", [None, 0.05])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_trajectory_as_keras(name, weight_decay):
    arguments = {**CASES[name], "name": f"opt_{name.lower()}"}
    if weight_decay is not None:
        arguments["weight_decay"] = weight_decay
        if name == "Muon":
            arguments["adam_weight_decay"] = 2 * weight_decay
    ours = getattr(optimizers, name)(**arguments)
    theirs, keras_optimizer = _keras_run(getattr(keras.optimizers, name)(**arguments))
    got = _kgraph_run(ours)
    for path, a, b in zip(INIT, got, theirs):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{name} {path}")
    assert np.abs(got[0] - INIT["dense/kernel"]).max() > 1e-3  # the weights really moved
    expected = keras_optimizer.get_config()
    config = ours.get_config()
    assert np.float32(config["learning_rate"]) == np.float32(expected["learning_rate"])  # Keras keeps a float32
    assert config == {**expected, "learning_rate": config["learning_rate"]}


# --- .keras files, both ways ----------------------------------------------------------------------------------------

X = RNG.normal(size=(16, 3)).astype("float32")
Y = RNG.normal(size=(16, 2)).astype("float32")
FIT = {"batch_size": 8, "shuffle": False, "verbose": 0}


def _ours(optimizer):
    kgraph.utils.set_random_seed(1)
    model = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(4, activation="tanh"), layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _theirs(optimizer):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _numpy(values):
    return [np.asarray(keras.ops.convert_to_numpy(v)) for v in values]


def _max_difference(left, right):
    assert len(left) == len(right)
    return max(float(np.abs(np.asarray(a, "float64") - np.asarray(b, "float64")).max()) for a, b in zip(left, right))


@pytest.mark.parametrize("name", sorted(CASES))
def test_string_identifiers_and_keras_reads_kgraph_files(tmp_path, name):
    ours = _ours(name.lower())
    assert type(ours.optimizer) is getattr(optimizers, name)
    assert type(optimizers.get(name.upper())) is type(optimizers.deserialize(optimizers.serialize(ours.optimizer)))
    ours.fit(X, Y, epochs=2, **FIT)
    ours.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    assert isinstance(theirs.optimizer, getattr(keras.optimizers, name))
    assert int(keras.ops.convert_to_numpy(theirs.optimizer.iterations)) == 4
    assert _max_difference(_numpy(theirs.optimizer.variables), optimizer_variables(ours)) < 1e-6
    theirs.fit(X, Y, epochs=1, **FIT)
    ours.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(_numpy(theirs.weights), ours.get_weights()) < 1e-5
    back = kgraph.load_model(tmp_path / "ours.keras")
    assert back.optimizer.get_config() == ours.optimizer.get_config()


@pytest.mark.parametrize("name", sorted(CASES))
def test_kgraph_reads_keras_files(tmp_path, name):
    theirs = _theirs(getattr(keras.optimizers, name)(**CASES[name]))
    theirs.fit(X, Y, epochs=2, **FIT)
    theirs.save(tmp_path / "theirs.keras")
    ours = kgraph.load_model(tmp_path / "theirs.keras")
    assert type(ours.optimizer) is getattr(optimizers, name) and int(ours.optimizer.iterations) == 4
    assert _max_difference(optimizer_variables(ours), _numpy(theirs.optimizer.variables)) < 1e-6
    theirs.fit(X, Y, epochs=1, **FIT)
    ours.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    ours.save(tmp_path / "again.keras")
    for loaded in (kgraph.load_model(tmp_path / "again.keras"), kgraph.load_model(tmp_path / "again.keras")):
        assert _max_difference(optimizer_variables(loaded), optimizer_variables(ours)) == 0.0


@pytest.mark.parametrize("name", ["Adafactor", "Muon", "Nadam", "ScheduleFreeAdamW"])
def test_pickle_files_resume_exactly(tmp_path, name):
    model = _ours(getattr(optimizers, name)(**CASES[name]))
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    assert loaded.optimizer.get_config() == model.optimizer.get_config() and int(loaded.optimizer.iterations) == 2
    assert _max_difference(optimizer_variables(loaded), optimizer_variables(model)) == 0.0
    model.fit(X, Y, epochs=1, **FIT)
    loaded.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(loaded.get_weights(), model.get_weights()) == 0.0


def test_argument_errors_as_keras():
    with pytest.raises(ValueError, match="beta_1` must be in the \\[0, 1\\] range"):
        optimizers.Lion(beta_1=0.0)
    with pytest.raises(ValueError, match="`learning_rate_power` needs to be negative or zero"):
        optimizers.Ftrl(learning_rate_power=0.5)
    with pytest.raises(ValueError, match="`l1_regularization_strength` needs to be positive or zero"):
        optimizers.Ftrl(l1_regularization_strength=-1.0)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        optimizers.Muon().zeropower_via_newtonschulz5(np.ones(3), 5)
    with pytest.raises(ValueError, match="Unknown optimizer 'nadamw'"):
        optimizers.get("nadamw")


def test_nadam_product_follows_the_step_count():
    ours = optimizers.Nadam(beta_1=0.8)
    _kgraph_run(ours, steps=3)
    expected = np.prod([0.8 * (1 - 0.5 * 0.96**t) for t in (1, 2, 3)])
    np.testing.assert_allclose(ours.trailing_variables()[0], expected, rtol=1e-7)
    ours.iterations.assign(1)
    np.testing.assert_allclose(ours.trailing_variables()[0], 0.8 * (1 - 0.5 * 0.96), rtol=1e-7)


def test_muon_keeps_no_velocity_for_the_matrices_it_orthogonalizes():
    muon = optimizers.Muon(exclude_layers=["conv"])
    variables = [Variable(value.copy(), name=path.split("/")[1], path=path) for path, value in INIT.items()]
    muon.build(variables)
    assert [v.path for v in muon.variables[1:]] == [
        "muon/dense/kernel_momentum", "muon/dense/bias_momentum", "muon/dense/bias_velocity",
        "muon/conv/kernel_momentum", "muon/conv/kernel_velocity", "muon/embedding/embeddings_momentum",
        "muon/embedding/embeddings_velocity"]
    with pytest.raises(ValueError, match="keeps no slot 'velocity' for variable 'dense/kernel'"):
        muon.set_slot_state(variables, [[0, {"velocity": np.zeros((4, 3), "float32")}]])
