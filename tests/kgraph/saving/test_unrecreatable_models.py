"""A subclassed Model that its config cannot re-create is refused by ``save("x.keras")`` before anything is
written (Keras raises NotImplementedError too); with ``get_config`` it saves and loads."""
import numpy as np
import pytest

import kgraph
from kgraph import layers


class NeedsUnits(kgraph.Model):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.dense = layers.Dense(units)

    def call(self, x):
        return self.dense(x)


class WithConfig(NeedsUnits):
    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_a_model_its_config_cannot_recreate_is_refused_and_nothing_is_written(tmp_path):
    model = NeedsUnits(2)
    model(np.zeros((1, 3), "float32"))
    with pytest.raises(NotImplementedError, match="requires 'units'.*get_config"):
        model.save(tmp_path / "m.keras")
    assert not (tmp_path / "m.keras").exists()
    model.save_weights(tmp_path / "m.weights.h5")  # its weights still save


def test_with_get_config_it_saves_and_loads(tmp_path):
    model = WithConfig(2)
    x = np.ones((1, 3), "float32")
    expected = model(x)
    model.save(tmp_path / "m.keras")
    back = kgraph.saving.load_model(tmp_path / "m.keras", custom_objects={"WithConfig": WithConfig})
    np.testing.assert_allclose(back(x), expected)


class GraphModel(kgraph.Model):
    """A Model subclass built the functional way, with op nodes (``e + e``) in its graph."""


def test_a_functional_subclass_with_op_nodes_loads_back(tmp_path):
    inputs = kgraph.Input((4, 3))
    hidden = layers.Dense(3)(inputs)
    model = GraphModel(inputs, hidden + hidden)
    model.save(tmp_path / "m.keras")
    back = kgraph.saving.load_model(tmp_path / "m.keras", custom_objects={"GraphModel": GraphModel})
    x = np.ones((2, 4, 3), "float32")
    assert type(back) is GraphModel
    np.testing.assert_allclose(back.predict(x, verbose=0), model.predict(x, verbose=0))
