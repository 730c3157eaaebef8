"""A Model subclass built the functional way (``CustomModel(inputs, outputs)``, as the custom train/test step
guides write it) saves to .keras under its own name and loads back as that class, both ways with Keras."""
import numpy as np
import pytest

import kgraph


class StepModel(kgraph.Model):
    """A user's model that only overrides a step, built from inputs and outputs."""

    def test_step(self, data):
        return super().test_step(data)


def _model(lib, cls):
    inp = lib.Input((4,))
    out = lib.layers.Dense(2, name="head")(lib.layers.Dense(3, activation="relu", name="body")(inp))
    return cls(inp, out)


def test_round_trip_keeps_the_class_and_the_numbers(tmp_path):
    model = _model(kgraph, StepModel)
    model.save(str(tmp_path / "m.keras"))
    restored = kgraph.models.load_model(str(tmp_path / "m.keras"), custom_objects={"StepModel": StepModel})
    assert type(restored) is StepModel and isinstance(restored, kgraph.models.Functional)
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    np.testing.assert_array_equal(restored.predict(x, verbose=0), model.predict(x, verbose=0))


def test_both_ways_with_keras(tmp_path):
    keras = pytest.importorskip("keras")

    class KerasStepModel(keras.Model):
        def test_step(self, data):
            return super().test_step(data)

    x = np.random.default_rng(1).standard_normal((3, 4)).astype("float32")
    theirs = _model(keras, KerasStepModel)
    theirs.save(str(tmp_path / "keras.keras"))
    ours = kgraph.models.load_model(str(tmp_path / "keras.keras"), custom_objects={"KerasStepModel": StepModel})
    assert type(ours) is StepModel
    np.testing.assert_allclose(ours.predict(x, verbose=0), keras.ops.convert_to_numpy(theirs(x)), rtol=1e-5,
                               atol=1e-6)
    ours.save(str(tmp_path / "kgraph.keras"))
    back = keras.models.load_model(str(tmp_path / "kgraph.keras"), custom_objects={"StepModel": KerasStepModel})
    assert type(back) is KerasStepModel
    np.testing.assert_allclose(keras.ops.convert_to_numpy(back(x)), ours.predict(x, verbose=0), rtol=1e-5,
                               atol=1e-6)
