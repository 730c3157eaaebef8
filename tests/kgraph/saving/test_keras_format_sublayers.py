""".keras files of user layers and subclassed models that keep sub-layers in attributes (Keras's attribute paths)."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.saving.keras_weights import weight_groups
from tests.custom_layers import ResidualBlock

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None or importlib.util.find_spec("h5py") is None,
                                 reason="keras is not installed")
pytest.importorskip("h5py")
X = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")


def _block_model():
    kgraph.utils.set_random_seed(1)
    inp = kgraph.Input((3, 4))
    return kgraph.Model(inp, layers.Dense(2)(ResidualBlock(4)(inp)))


def test_sub_layers_are_saved_under_their_attribute_names(tmp_path):
    model = _block_model()
    paths = [path for path, variables in weight_groups(model) if variables]
    assert paths == ["layers/residual_block/ffn/layers/dense", "layers/residual_block/ffn/layers/dense_1",
                     "layers/residual_block/norms/layer_normalization",
                     "layers/residual_block/norms/layer_normalization_1", "layers/residual_block/proj",
                     "layers/dense"]
    model.save(tmp_path / "block.keras")
    loaded = kgraph.load_model(tmp_path / "block.keras", custom_objects={"ResidualBlock": ResidualBlock})
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), model.predict(X, verbose=0))


class _Subclassed(kgraph.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = layers.Dense(5, activation="relu")
        self.out = layers.Dense(2)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def test_subclassed_models_save_to_keras_files(tmp_path):
    model = _Subclassed()
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(2).standard_normal((8, 3)).astype("float32")
    model.fit(x, np.zeros((8, 2), "float32"), epochs=1, verbose=0)
    assert [path for path, variables in weight_groups(model) if variables] == ["hidden", "out"]
    model.save(tmp_path / "sub.keras")
    loaded = kgraph.load_model(tmp_path / "sub.keras", custom_objects={"_Subclassed": _Subclassed})
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def _keras_block(keras):
    class ResidualBlock(keras.layers.Layer):
        def __init__(self, units=4, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.proj = keras.layers.Dense(units)
            self.norms = [keras.layers.LayerNormalization(), keras.layers.LayerNormalization()]
            self.ffn = keras.Sequential([keras.layers.Dense(units, activation="relu"), keras.layers.Dense(units)])

        def call(self, x):
            h = self.norms[0](x + self.proj(x))
            return self.norms[1](h + self.ffn(h))

        def get_config(self):
            return {**super().get_config(), "units": self.units}
    return ResidualBlock


@needs_keras
def test_user_layers_with_sub_layers_move_between_keras_and_kgraph(tmp_path):
    import keras
    block = _keras_block(keras)
    inp = keras.Input((3, 4))
    theirs = keras.Model(inp, keras.layers.Dense(2)(block(4)(inp)))
    for weight in theirs.weights:  # non-trivial norms too
        weight.assign(np.random.default_rng(len(weight.path)).standard_normal(weight.shape).astype("float32"))
    theirs.save(tmp_path / "keras.keras")
    ours = kgraph.load_model(tmp_path / "keras.keras", custom_objects={"ResidualBlock": ResidualBlock})
    expected = keras.ops.convert_to_numpy(theirs(X))
    np.testing.assert_allclose(ours.predict(X, verbose=0), expected, rtol=1e-5, atol=1e-5)
    ours.save(tmp_path / "kgraph.keras")
    back = keras.saving.load_model(tmp_path / "kgraph.keras", custom_objects={"ResidualBlock": block})
    np.testing.assert_allclose(keras.ops.convert_to_numpy(back(X)), expected, rtol=1e-5, atol=1e-5)
