"""Keras's rank rule for a model's inputs: a missing or extra trailing axis of size 1 is adjusted."""
import numpy as np
import pytest

import kgraph


def _model():
    x = kgraph.Input((1,), name="age")
    return kgraph.Model(x, kgraph.layers.Dense(2, kernel_initializer="ones")(x))


def test_a_rank_short_input_gains_its_unit_axis():
    model = _model()
    np.testing.assert_allclose(model.predict(np.array([3.0, 4.0], np.float32), verbose=0),
                               model.predict(np.array([[3.0], [4.0]], np.float32), verbose=0))


def test_an_extra_unit_axis_is_dropped_and_other_shapes_are_refused():
    model = _model()
    assert model.predict(np.ones((3, 1, 1), np.float32), verbose=0).shape == (3, 2)
    with pytest.raises(ValueError, match="expected shape=\\(None, 1\\), found shape=\\(3, 2\\)"):
        model.predict(np.ones((3, 2), np.float32), verbose=0)
