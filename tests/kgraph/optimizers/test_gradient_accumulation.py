"""``gradient_accumulation_steps``: the same trajectories, counts and optimizer variables as Keras 3's, and
``.keras`` files read both ways mid-accumulation."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, optimizers
from kgraph.backend.variable import Variable
from kgraph.saving.keras_compile import optimizer_variables

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(3)
SHAPES = {"dense/kernel": (4, 3), "dense/bias": (3,), "conv/kernel": (2, 2, 3, 2)}
INIT = {path: RNG.normal(size=shape).astype("float32") for path, shape in SHAPES.items()}
GRADS = [{path: (RNG.normal(size=shape) * 0.5).astype("float32") for path, shape in SHAPES.items()}
         for _ in range(8)]

CASES = {
    "adam": ("Adam", {"learning_rate": 0.05}),
    "sgd_momentum": ("SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    "nadam": ("Nadam", {"learning_rate": 0.02}),
    "adamw_decay": ("AdamW", {"learning_rate": 0.05, "weight_decay": 0.1}),
    "rmsprop": ("RMSprop", {"learning_rate": 0.01}),
    "adam_ema_clip": ("Adam", {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.8,
                               "ema_overwrite_frequency": 2, "clipnorm": 0.5}),
    "adam_schedule": ("Adam", {"learning_rate": {"class_name": "ExponentialDecay", "config": {
        "initial_learning_rate": 0.1, "decay_steps": 2, "decay_rate": 0.5}}}),
}


def _arguments(framework, arguments):
    arguments = dict(arguments, gradient_accumulation_steps=3)
    lr = arguments["learning_rate"]
    if isinstance(lr, dict):
        arguments["learning_rate"] = getattr(framework.optimizers.schedules, lr["class_name"])(**lr["config"])
    return arguments


def _ours(name, arguments, steps):
    optimizer = getattr(optimizers, name)(**_arguments(kgraph, arguments))
    variables = [Variable(value.copy(), name=path.split("/")[1], path=path) for path, value in INIT.items()]
    for step in GRADS[:steps]:
        optimizer.apply([step[v.path].copy() for v in variables], variables)
    return optimizer, [v.numpy() for v in variables]


def _theirs(name, arguments, steps):
    optimizer = getattr(keras.optimizers, name)(**_arguments(keras, arguments))
    variables = []
    for path, value in INIT.items():
        scope, leaf = path.split("/")
        with keras.name_scope(scope):
            variables.append(keras.Variable(value.copy(), name=leaf))
    for step in GRADS[:steps]:
        optimizer.apply([keras.ops.convert_to_tensor(step[v.path]) for v in variables], variables)
    return optimizer, [keras.ops.convert_to_numpy(v) for v in variables]


def _keras_slots(optimizer):
    """Keras's optimizer variables after ``iterations`` and (a float rate's) ``learning_rate``."""
    values = [np.asarray(keras.ops.convert_to_numpy(v)) for v in optimizer.variables]
    names = [v.name for v in optimizer.variables]
    return [v for v, n in zip(values, names) if n not in ("iteration", "learning_rate")]


@pytest.mark.parametrize("steps", [5, 6])  # mid-accumulation, and right after the second update
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_trajectory_counts_and_state_as_keras(case, steps):
    name, arguments = CASES[case]
    ours, got = _ours(name, arguments, steps)
    theirs, want = _theirs(name, arguments, steps)
    for path, a, b in zip(INIT, got, want):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{case} {path}")
    assert not np.allclose(got[0], INIT["dense/kernel"])  # two updates moved the weights
    assert int(ours.iterations) == int(keras.ops.convert_to_numpy(theirs.iterations)) == steps // 3
    assert int(ours._step_counter().value) == steps
    slots = [v.numpy() for v in ours.variables[1:]] + [np.asarray(v) for v in ours.trailing_variables()]
    expected = _keras_slots(theirs)
    assert len(slots) == len(expected)
    for a, b in zip(slots, expected):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=case)
    config = ours.get_config()
    assert config["gradient_accumulation_steps"] == theirs.get_config()["gradient_accumulation_steps"] == 3


def test_accumulating_steps_leave_the_weights_and_the_update_averages():
    optimizer = optimizers.SGD(learning_rate=1.0, gradient_accumulation_steps=2)
    variable = Variable(np.array([1.0, 2.0], "float32"), name="w")
    optimizer.apply([np.array([1.0, 3.0], "float32")], [variable])
    np.testing.assert_array_equal(variable.numpy(), [1.0, 2.0])
    assert int(optimizer.iterations) == 0
    optimizer.apply([np.array([3.0, 1.0], "float32")], [variable])
    np.testing.assert_array_equal(variable.numpy(), [-1.0, 0.0])  # minus the mean gradient (2, 2)
    assert int(optimizer.iterations) == 1
    np.testing.assert_array_equal(optimizer.variables[1].numpy(), [0.0, 0.0])  # the accumulator starts again


@pytest.mark.parametrize("steps", [1, 2.5, -3, True])
def test_a_count_below_two_or_not_an_integer_is_refused(steps):
    with pytest.raises(ValueError, match=r"`gradient_accumulation_steps` must be an integer >= 2"):
        optimizers.Adam(gradient_accumulation_steps=steps)


def test_none_and_zero_mean_no_accumulation():
    for steps in (None, 0):
        optimizer = optimizers.Adam(gradient_accumulation_steps=steps)
        assert optimizer.gradient_accumulation_steps is None
        assert isinstance(optimizer.iterations, Variable)


X = RNG.normal(size=(16, 3)).astype("float32")
Y = RNG.normal(size=(16, 2)).astype("float32")
FIT = {"batch_size": 8, "shuffle": False, "verbose": 0}


def _model(framework, optimizer):
    framework.utils.set_random_seed(1)
    model = framework.Sequential([framework.Input((3,)), framework.layers.Dense(4, activation="tanh"),
                                  framework.layers.Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def test_keras_files_both_ways_mid_accumulation(tmp_path):
    # 5 steps with 2 per update: two updates made and one step's gradients held in the accumulators.
    ours = _model(kgraph, optimizers.Adam(0.05, gradient_accumulation_steps=2))
    assert isinstance(ours.layers[0], layers.Dense)
    ours.fit(X[:24], Y[:24], epochs=1, **{**FIT, "batch_size": 6})
    ours.fit(X[:8], Y[:8], epochs=1, **FIT)
    ours.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    assert theirs.optimizer.gradient_accumulation_steps == 2
    assert int(keras.ops.convert_to_numpy(theirs.optimizer.iterations)) == int(ours.optimizer.iterations)
    values = [np.asarray(keras.ops.convert_to_numpy(v)) for v in theirs.optimizer.variables]
    mine = optimizer_variables(ours)
    assert len(values) == len(mine) and max(float(np.abs(a - b).max()) for a, b in zip(values, mine)) < 1e-6
    theirs.fit(X, Y, epochs=2, **FIT)
    back = kgraph.load_model(tmp_path / "ours.keras")
    back.fit(X, Y, epochs=2, **FIT)
    for a, b in zip(back.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, keras.ops.convert_to_numpy(b), rtol=1e-5, atol=1e-6)
    assert int(back.optimizer.iterations) == int(keras.ops.convert_to_numpy(theirs.optimizer.iterations))
