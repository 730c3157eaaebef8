"""A Lambda whose function is registered with ``register_keras_serializable`` saves, clones and loads in safe
mode, by its registered name (Keras's form: config "package>name"), both ways with Keras."""
import numpy as np
import pytest

import kgraph
from kgraph import layers, ops


@kgraph.saving.register_keras_serializable(package="Programs")
def sinusoidal(x):
    return ops.concatenate([ops.sin(x), ops.cos(x)], axis=-1)


def _model():
    inputs = kgraph.Input((3,))
    return kgraph.Model(inputs, layers.Lambda(sinusoidal)(inputs))


def test_a_registered_function_saves_clones_and_loads_in_safe_mode(tmp_path):
    model = _model()
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype("float32")
    np.testing.assert_allclose(kgraph.models.clone_model(model).predict(x, verbose=0), model.predict(x, verbose=0))
    model.save(tmp_path / "m.keras")
    back = kgraph.saving.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), model.predict(x, verbose=0))
    function = back.layers[1].get_config()["function"]
    assert function["config"] == "Programs>sinusoidal" and function["registered_name"] == "function"


def test_keras_reads_the_file_and_kgraph_reads_keras_s(tmp_path):
    keras = pytest.importorskip("keras")

    def sinusoidal(x):  # the same function, in Keras's registry
        return keras.ops.concatenate([keras.ops.sin(x), keras.ops.cos(x)], axis=-1)
    theirs_fn = keras.saving.register_keras_serializable(package="Programs")(sinusoidal)
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype("float32")
    _model().save(tmp_path / "ours.keras")
    np.testing.assert_allclose(keras.saving.load_model(tmp_path / "ours.keras").predict(x, verbose=0),
                               _model().predict(x, verbose=0), rtol=1e-6)
    inputs = keras.Input((3,))
    keras.Model(inputs, keras.layers.Lambda(theirs_fn)(inputs)).save(tmp_path / "theirs.keras")
    np.testing.assert_allclose(kgraph.saving.load_model(tmp_path / "theirs.keras").predict(x, verbose=0),
                               _model().predict(x, verbose=0), rtol=1e-6)
