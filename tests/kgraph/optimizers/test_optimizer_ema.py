"""The optimizers' moving averages of the weights (``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``) and
``loss_scale_factor``, against Keras 3: the same weights and averages step by step, the same end of ``fit``, the
same configuration and errors, and ``.keras`` files that Keras and kgraph read from each other."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, optimizers
from kgraph.backend.variable import Variable
from kgraph.saving.keras_compile import optimizer_variables

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(11)
SHAPES = {"dense/kernel": (4, 3), "dense/bias": (3,), "conv/kernel": (2, 2, 3, 2)}
INIT = {path: RNG.normal(size=shape).astype("float32") for path, shape in SHAPES.items()}
GRADS = [{path: (RNG.normal(size=shape) * 0.5).astype("float32") for path, shape in SHAPES.items()}
         for _ in range(7)]
X = RNG.normal(size=(24, 3)).astype("float32")
Y = RNG.normal(size=(24, 2)).astype("float32")
FIT = {"batch_size": 8, "shuffle": False, "verbose": 0}

CASES = {
    "SGD": {"learning_rate": 0.1, "momentum": 0.5},
    "Adam": {"learning_rate": 0.05},
    "AdamW": {"learning_rate": 0.05},
    "RMSprop": {"learning_rate": 0.02, "momentum": 0.3, "centered": True},
    "Adagrad": {"learning_rate": 0.1},
    "Adadelta": {"learning_rate": 0.5},
    "Adafactor": {"learning_rate": 0.05},
    "Adamax": {"learning_rate": 0.05},
    "Ftrl": {"learning_rate": 0.1},
    "Lamb": {"learning_rate": 0.01},
    "Lion": {"learning_rate": 0.01},
    "Muon": {"learning_rate": 0.02, "exclude_layers": ["conv"]},
    "Nadam": {"learning_rate": 0.05},
    "ScheduleFreeAdamW": {"learning_rate": 0.02},
}


def _numpy(values):
    return [np.asarray(keras.ops.convert_to_numpy(v)) for v in values]


def _kgraph_variables():
    return [Variable(value.copy(), name=path.split("/")[1], path=path) for path, value in INIT.items()]


def _keras_variables():
    variables = []
    for path, value in INIT.items():
        scope, name = path.split("/")
        with keras.name_scope(scope):
            variables.append(keras.Variable(value.copy(), name=name))
    return variables


def _without_learning_rate(keras_optimizer):
    """Keras's ``variables`` less its learning rate (second; kgraph keeps a float), as arrays."""
    values = _numpy(keras_optimizer.variables)
    return values[:1] + values[2:]


@pytest.mark.parametrize("frequency", [None, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_weights_and_averages_as_keras_step_by_step(name, frequency):
    arguments = {**CASES[name], "use_ema": True, "ema_momentum": 0.8, "ema_overwrite_frequency": frequency}
    ours, theirs = getattr(optimizers, name)(**arguments), getattr(keras.optimizers, name)(**arguments)
    variables, keras_variables = _kgraph_variables(), _keras_variables()
    for step in GRADS:
        ours.apply([step[v.path].copy() for v in variables], variables)
        theirs.apply([keras.ops.convert_to_tensor(step[v.path]) for v in keras_variables], keras_variables)
        for a, b in zip([v.numpy() for v in variables], _numpy(keras_variables)):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=name)
        ours_state, keras_state = [v.numpy() for v in ours.variables], _without_learning_rate(theirs)
        extra = 1 if name == "Nadam" else 0  # Keras's running product of Nadam's momentum decays, last
        assert len(ours_state) == len(keras_state) - extra
        for a, b in zip(ours_state, keras_state):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=name)
    averages = ours._model_variables_moving_average
    assert [v.path for v in ours.variables[1:4]] == [f"{ours.name}/{p}_average" for p in INIT]
    assert all(a is b for a, b in zip(averages, ours.variables[1:4]))
    before = [v.numpy() for v in variables]
    ours.finalize_variable_values(variables)
    theirs.finalize_variable_values(keras_variables)
    for a, b, avg, old in zip([v.numpy() for v in variables], _numpy(keras_variables), averages, before):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=name)
        np.testing.assert_array_equal(a, avg.numpy())
        if frequency is None:
            assert np.abs(a - old).max() > 1e-4  # the averages are not the weights


def test_the_first_step_starts_the_average_at_the_weights_and_overwrites_follow_the_frequency():
    optimizer = optimizers.SGD(0.1, use_ema=True, ema_momentum=0.9, ema_overwrite_frequency=2)
    variable = Variable(np.array([1.0, 2.0], "float32"), name="w")
    optimizer.apply([np.array([1.0, 1.0], "float32")], [variable])
    average = optimizer._model_variables_moving_average[0]
    np.testing.assert_array_equal(average.numpy(), variable.numpy())  # m = 0 on the first step
    np.testing.assert_allclose(variable.numpy(), [0.9, 1.9])
    optimizer.apply([np.array([1.0, 1.0], "float32")], [variable])  # step 2: overwritten by the average
    np.testing.assert_allclose(average.numpy(), 0.9 * np.array([0.9, 1.9]) + 0.1 * np.array([0.8, 1.8]), rtol=1e-6)
    np.testing.assert_array_equal(variable.numpy(), average.numpy())
    optimizer.apply([np.array([1.0, 1.0], "float32")], [variable])  # step 3: not overwritten
    assert not np.array_equal(variable.numpy(), average.numpy())


@pytest.mark.parametrize("name", ["SGD", "Adam", "Lion", "Muon"])
def test_the_same_config_as_keras(name):
    arguments = {"use_ema": True, "ema_momentum": 0.95, "ema_overwrite_frequency": 5, "loss_scale_factor": 4.0}
    named = {**arguments, "name": f"opt_{name.lower()}"}
    ours, theirs = getattr(optimizers, name)(**named), getattr(keras.optimizers, name)(**named)
    config, expected = ours.get_config(), theirs.get_config()
    assert np.float32(config["learning_rate"]) == np.float32(expected["learning_rate"])
    assert config == {**expected, "learning_rate": config["learning_rate"]}
    defaults = getattr(optimizers, name)().get_config()
    assert {k: defaults[k] for k in arguments} == {"use_ema": False, "ema_momentum": 0.99,
                                                   "ema_overwrite_frequency": None, "loss_scale_factor": None}
    rebuilt = optimizers.deserialize(optimizers.serialize(ours))
    assert rebuilt.get_config() == config and rebuilt.use_ema is True and rebuilt.loss_scale_factor == 4.0


@pytest.mark.parametrize("arguments, message", [
    ({"use_ema": True, "ema_momentum": 1.5}, r"`ema_momentum` must be in the range \[0, 1\]"),
    ({"use_ema": True, "ema_momentum": -0.1}, r"`ema_momentum` must be in the range \[0, 1\]"),
    ({"use_ema": True, "ema_overwrite_frequency": -2}, "`ema_overwrite_frequency` must be an integer >= 1 or None"),
    ({"use_ema": True, "ema_overwrite_frequency": 2.5},
     "`ema_overwrite_frequency` must be an integer >= 1 or None"),
])
def test_argument_errors_as_keras(arguments, message):
    with pytest.raises(ValueError, match=message):
        keras.optimizers.SGD(**arguments)
    with pytest.raises(ValueError, match=message):
        optimizers.SGD(**arguments)


def test_ema_arguments_are_not_checked_without_use_ema_and_a_bad_loss_scale_factor_is_refused():
    assert optimizers.Adam(ema_momentum=5.0).ema_momentum == 5.0  # as Keras: checked only with use_ema
    assert keras.optimizers.Adam(ema_momentum=5.0).ema_momentum == 5.0
    assert optimizers.SGD(use_ema=True, ema_overwrite_frequency=0).ema_overwrite_frequency == 0  # as None
    assert keras.optimizers.SGD(use_ema=True, ema_overwrite_frequency=0).ema_overwrite_frequency == 0
    for factor in (0.0, -2.0, "big", float("inf")):
        with pytest.raises(ValueError, match="`loss_scale_factor` must be a positive number or None"):
            optimizers.SGD(loss_scale_factor=factor)
    with pytest.raises(ValueError, match="not recognized"):
        optimizers.SGD(use_average=True)


def test_no_averages_without_use_ema():
    optimizer = optimizers.Adam()
    variables = _kgraph_variables()
    optimizer.apply([GRADS[0][v.path] for v in variables], variables)
    assert not hasattr(optimizer, "_model_variables_moving_average")
    assert not any(v.path.endswith("_average") for v in optimizer.variables)
    before = [v.numpy() for v in variables]
    optimizer.finalize_variable_values(variables)
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, variables))


def _ours(optimizer):
    kgraph.utils.set_random_seed(1)
    model = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(4, activation="tanh", name="hidden"),
                               layers.Dense(2, name="head")])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _theirs(optimizer):
    """The Keras model of ``_ours``, with the same starting weights."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="hidden"),
                              keras.layers.Dense(2, name="head")])
    model.set_weights(_ours("sgd").get_weights())
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _max_difference(left, right):
    assert len(left) == len(right)
    return max(float(np.abs(np.asarray(a, "float64") - np.asarray(b, "float64")).max()) for a, b in zip(left, right))


@pytest.mark.parametrize("frequency", [None, 2])
def test_fit_ends_with_the_averages_as_keras(frequency):
    arguments = {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.7, "ema_overwrite_frequency": frequency}
    ours, theirs = _ours(optimizers.Adam(**arguments)), _theirs(keras.optimizers.Adam(**arguments))
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) == 0.0
    seen = []
    last_step = kgraph.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(ours.get_weights()))
    ours.fit(X, Y, epochs=2, callbacks=[last_step], **FIT)
    theirs.fit(X, Y, epochs=2, **FIT)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    averages = [v.numpy() for v in ours.optimizer._model_variables_moving_average]
    assert _max_difference(ours.get_weights(), averages) == 0.0  # finalize_variable_values ran
    if frequency is None:
        assert _max_difference(seen[-1], averages) > 1e-4  # before it, the weights were the trained ones
    else:
        assert _max_difference(seen[-1], averages) == 0.0  # the 6th step overwrote them already
    assert _max_difference(optimizer_variables(ours), _numpy(theirs.optimizer.variables)) < 1e-5


def test_loss_scale_factor_scales_the_loss_and_unscales_the_gradients_as_keras():
    arguments = {"learning_rate": 0.05, "loss_scale_factor": 64.0}
    ours, theirs = _ours(optimizers.SGD(**arguments)), _theirs(keras.optimizers.SGD(**arguments))
    plain = _ours(optimizers.SGD(learning_rate=0.05))
    loss = kgraph.ops.convert_to_tensor(np.float32(0.25))
    assert float(ours.optimizer.scale_loss(loss)) == 16.0 and float(plain.optimizer.scale_loss(loss)) == 0.25
    history = ours.fit(X, Y, epochs=2, **FIT).history
    keras_history = theirs.fit(X, Y, epochs=2, **FIT).history
    plain.fit(X, Y, epochs=2, **FIT)
    np.testing.assert_allclose(history["loss"], keras_history["loss"], rtol=1e-5)  # the logged loss is unscaled
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    assert _max_difference(ours.get_weights(), plain.get_weights()) < 1e-5
    assert _max_difference(_ours("sgd").get_weights(), ours.get_weights()) > 1e-3  # it trained


def test_loss_scale_factor_with_multi_and_loss_scale_optimizers_as_keras():
    inner = optimizers.Adam(loss_scale_factor=8.0)
    wrapped = optimizers.LossScaleOptimizer(inner)
    assert inner.loss_scale_factor is None and keras.optimizers.LossScaleOptimizer(
        keras.optimizers.Adam(loss_scale_factor=8.0)).inner_optimizer.loss_scale_factor is None
    assert wrapped.get_config()["inner_optimizer"]["config"]["loss_scale_factor"] is None
    mapping = optimizers.OptimizerMap(optimizers.SGD(0.1), {"dense/.*": optimizers.Adam(loss_scale_factor=2.0)})
    multi = optimizers.MultiOptimizer(mapping, loss_scale_factor=4.0)
    assert [o.loss_scale_factor for o in multi.optimizers] == [4.0, 4.0] and multi.loss_scale_factor == 4.0
    multi.loss_scale_factor = 16.0
    assert [o.loss_scale_factor for o in multi.optimizers] == [16.0, 16.0]
    assert multi.get_config()["loss_scale_factor"] == 16.0
    restored = optimizers.MultiOptimizer.from_config(multi.get_config())
    assert [o.loss_scale_factor for o in restored.optimizers] == [16.0, 16.0]
    ours = _ours(optimizers.MultiOptimizer(optimizers.OptimizerMap(optimizers.SGD(0.05)), loss_scale_factor=32.0))
    theirs = _theirs(keras.optimizers.MultiOptimizer(keras.optimizers.OptimizerMap(keras.optimizers.SGD(0.05)),
                                                     loss_scale_factor=32.0))
    ours.fit(X, Y, epochs=1, **FIT)
    theirs.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5


def test_multi_and_loss_scale_optimizers_finalize_with_their_inner_averages_as_keras():
    def build(module, wrap):
        mapping = module.OptimizerMap(module.SGD(0.1))
        mapping[".*head.*"] = module.Adam(0.05, use_ema=True, ema_momentum=0.6)
        multi = module.MultiOptimizer(mapping)
        return multi if not wrap else module.LossScaleOptimizer(module.Adam(0.05, use_ema=True, ema_momentum=0.6))
    for wrap in (False, True):
        ours, theirs = _ours(build(optimizers, wrap)), _theirs(build(keras.optimizers, wrap))
        ours.fit(X, Y, epochs=2, **FIT)
        theirs.fit(X, Y, epochs=2, **FIT)
        assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
        assert _max_difference(optimizer_variables(ours), _numpy(theirs.optimizer.variables)) < 1e-5


def test_keras_reads_kgraph_files_with_averages(tmp_path):
    arguments = {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.8, "ema_overwrite_frequency": 4}
    ours = _ours(optimizers.Adam(**arguments))
    ours.fit(X, Y, epochs=2, **FIT)
    ours.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    assert theirs.optimizer.use_ema and theirs.optimizer.ema_overwrite_frequency == 4
    assert any(v.path.endswith("_average") for v in theirs.optimizer.variables)
    assert _max_difference(_numpy(theirs.optimizer.variables), optimizer_variables(ours)) < 1e-6
    theirs.fit(X, Y, epochs=1, **FIT)
    ours.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(_numpy(theirs.weights), ours.get_weights()) < 1e-5
    assert _max_difference(_numpy(theirs.optimizer.variables), optimizer_variables(ours)) < 1e-5


def test_kgraph_reads_keras_files_with_averages(tmp_path):
    arguments = {"learning_rate": 0.05, "momentum": 0.4, "use_ema": True, "ema_momentum": 0.8}
    theirs = _theirs(keras.optimizers.SGD(**arguments))
    theirs.fit(X, Y, epochs=2, **FIT)
    theirs.save(tmp_path / "theirs.keras")
    ours = kgraph.load_model(tmp_path / "theirs.keras")
    assert type(ours.optimizer) is optimizers.SGD and ours.optimizer.use_ema and ours.optimizer.ema_momentum == 0.8
    assert _max_difference(optimizer_variables(ours), _numpy(theirs.optimizer.variables)) < 1e-6
    theirs.fit(X, Y, epochs=1, **FIT)
    ours.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(ours.get_weights(), _numpy(theirs.weights)) < 1e-5
    ours.save(tmp_path / "again.keras")
    again = kgraph.load_model(tmp_path / "again.keras")
    assert _max_difference(optimizer_variables(again), optimizer_variables(ours)) == 0.0


def test_pickle_files_keep_the_averages_and_resume_exactly(tmp_path):
    model = _ours(optimizers.RMSprop(0.01, use_ema=True, ema_momentum=0.9, loss_scale_factor=4.0))
    model.fit(X, Y, epochs=1, **FIT)
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert _max_difference(optimizer_variables(loaded), optimizer_variables(model)) == 0.0
    model.fit(X, Y, epochs=1, **FIT)
    loaded.fit(X, Y, epochs=1, **FIT)
    assert _max_difference(loaded.get_weights(), model.get_weights()) == 0.0
