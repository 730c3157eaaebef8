"""Every ``keras.optimizers.schedules`` schedule against Keras 3's own at many steps, its config, and a model that
trains with it and saves to a ``.keras`` file Keras reads (and the reverse)."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, optimizers
from kgraph.optimizers import schedules

keras = pytest.importorskip("keras")

CASES = [
    ("ExponentialDecay", (0.1, 7, 0.5), {"staircase": True}),
    ("PiecewiseConstantDecay", ([5, 12], [0.1, 0.05, 0.01]), {}),
    ("CosineDecay", (0.1, 20), {"alpha": 0.1, "warmup_target": 0.2, "warmup_steps": 5}),
    ("PolynomialDecay", (0.1, 10), {"end_learning_rate": 0.01, "power": 2.0}),
    ("PolynomialDecay", (0.1, 10), {"end_learning_rate": 0.01, "power": 0.5, "cycle": True}),
    ("InverseTimeDecay", (0.1, 4, 0.5), {}),
    ("InverseTimeDecay", (0.1, 4, 0.5), {"staircase": True}),
    ("CosineDecayRestarts", (0.1, 6), {}),
    ("CosineDecayRestarts", (0.1, 5), {"t_mul": 1.0, "m_mul": 0.5, "alpha": 0.2}),
    ("CosineDecayRestarts", (0.1, 4), {"t_mul": 3.0, "m_mul": 0.8, "alpha": 0.1}),
]


@pytest.mark.parametrize("name, args, kwargs", CASES)
def test_the_same_rates_and_config_as_keras(name, args, kwargs):
    ours = getattr(schedules, name)(*args, **kwargs)
    theirs = getattr(keras.optimizers.schedules, name)(*args, **kwargs)
    steps = list(range(0, 60)) + [97, 250]
    expected = [float(keras.ops.convert_to_numpy(theirs(keras.ops.convert_to_tensor(s, "float32")))) for s in steps]
    np.testing.assert_allclose([ours(s) for s in steps], expected, rtol=2e-6, atol=1e-8)
    assert len({round(v, 6) for v in expected}) >= 3  # the rate really changes over these steps
    assert ours.get_config() == theirs.get_config()
    rebuilt = schedules.deserialize(schedules.serialize(ours))
    assert type(rebuilt) is type(ours) and rebuilt.get_config() == ours.get_config()


def test_decay_steps_must_be_positive():
    for make in (lambda: schedules.PolynomialDecay(0.1, 0), lambda: schedules.InverseTimeDecay(0.1, 0, 0.5)):
        with pytest.raises(ValueError, match="`decay_steps` must be > 0"):
            make()
    with pytest.raises(ValueError, match="`first_decay_steps` must be > 0"):
        schedules.CosineDecayRestarts(0.1, 0)


@pytest.mark.parametrize("name, args, kwargs", [CASES[3], CASES[5], CASES[9]])
def test_training_with_it_and_files_both_ways(tmp_path, name, args, kwargs):
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = np.random.default_rng(1).normal(size=(16, 1)).astype("float32")
    fit = {"batch_size": 4, "epochs": 2, "shuffle": False, "verbose": 0}
    kgraph.utils.set_random_seed(1)
    ours = kgraph.Sequential([kgraph.Input((3,)), layers.Dense(1)])
    ours.compile(optimizer=optimizers.SGD(getattr(schedules, name)(*args, **kwargs), momentum=0.5), loss="mse")
    theirs = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    theirs.set_weights(ours.get_weights())
    theirs.compile(optimizer=keras.optimizers.SGD(getattr(keras.optimizers.schedules, name)(*args, **kwargs),
                                                  momentum=0.5), loss="mse")
    ours.fit(x, y, **fit)
    theirs.fit(x, y, **fit)
    keras_weights = [keras.ops.convert_to_numpy(w) for w in theirs.weights]
    for a, b in zip(ours.get_weights(), keras_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    ours.save(tmp_path / "ours.keras")
    theirs.save(tmp_path / "theirs.keras")
    in_keras = keras.saving.load_model(tmp_path / "ours.keras")
    assert type(in_keras.optimizer._learning_rate).__name__ == name
    assert in_keras.optimizer._learning_rate.get_config() == ours.optimizer._learning_rate.get_config()
    in_kgraph = kgraph.load_model(tmp_path / "theirs.keras")
    assert type(in_kgraph.optimizer._learning_rate) is getattr(schedules, name)
    assert in_kgraph.optimizer.learning_rate == pytest.approx(ours.optimizer.learning_rate, rel=1e-6)
