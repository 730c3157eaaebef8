"""A user's regularizer (here named as a built-in, as keras-io's PointNet names its own) saves with its module and
registered name and loads back as that class, with `custom_objects` or from its imported module, in kgraph and in
Keras."""
import numpy as np
import pytest

import kgraph


def _regularizer_class(lib):
    class OrthogonalRegularizer(lib.regularizers.Regularizer):
        def __init__(self, num_features, l2reg=0.001):
            self.num_features = num_features
            self.l2reg = l2reg

        def __call__(self, x):
            x = lib.ops.reshape(x, (-1, self.num_features, self.num_features))
            xxt = lib.ops.tensordot(x, x, axes=(2, 2))
            xxt = lib.ops.reshape(xxt, (-1, self.num_features, self.num_features))
            return lib.ops.sum(self.l2reg * lib.ops.square(xxt - lib.ops.eye(self.num_features)))

        def get_config(self):
            return {"num_features": self.num_features, "l2reg": self.l2reg}
    return OrthogonalRegularizer


def _model(lib, cls):
    inputs = lib.Input((4,))
    outputs = lib.layers.Dense(4, activity_regularizer=cls(2), kernel_regularizer=cls(2))(inputs)
    return lib.Model(inputs, outputs)


def test_a_user_regularizer_loads_back_as_its_class(tmp_path):
    cls = _regularizer_class(kgraph)
    _model(kgraph, cls).save(tmp_path / "m.keras")
    # Its module is imported (as `python -m export --import` imports a training script): found there, by module
    # and name, rather than the built-in of that name (which takes no num_features).
    found = kgraph.saving.load_model(tmp_path / "m.keras").layers[1].kernel_regularizer
    assert type(found).__module__ == __name__ and found.num_features == 2
    back = kgraph.saving.load_model(tmp_path / "m.keras", custom_objects={"OrthogonalRegularizer": cls})
    dense = back.layers[1]
    assert type(dense.kernel_regularizer) is cls and dense.kernel_regularizer.num_features == 2
    assert type(dense.activity_regularizer) is cls


def test_files_move_both_ways_with_keras(tmp_path):
    keras = pytest.importorskip("keras")
    ours, theirs = _regularizer_class(kgraph), _regularizer_class(keras)
    _model(kgraph, ours).save(tmp_path / "ours.keras")
    loaded = keras.saving.load_model(tmp_path / "ours.keras", custom_objects={"OrthogonalRegularizer": theirs})
    assert type(loaded.layers[1].kernel_regularizer) is theirs
    _model(keras, theirs).save(tmp_path / "theirs.keras")
    back = kgraph.saving.load_model(tmp_path / "theirs.keras", custom_objects={"OrthogonalRegularizer": ours})
    assert type(back.layers[1].kernel_regularizer) is ours
    x = np.ones((2, 4), "float32")
    assert np.isfinite(back.predict(x, verbose=0)).all()
