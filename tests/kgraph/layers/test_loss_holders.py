"""A model's call and ``losses`` skip walking the layers while no live layer holds a loss or a regularized weight;
every way a layer comes to hold one (``add_loss``, a regularizer, a loaded or copied model) still counts."""
import copy
import subprocess
import sys
import textwrap

import numpy as np

import kgraph
from kgraph import layers, regularizers
from kgraph.layers import layer as layer_module


def _regularized_model():
    inputs = kgraph.Input((3,))
    out = layers.Dense(2, kernel_regularizer=regularizers.L2(0.5), kernel_initializer="ones")(inputs)
    return kgraph.Model(inputs, out)


def test_a_loaded_model_keeps_its_regularization_in_a_fresh_process(tmp_path):
    """Loading restores layers without add_weight: the loss they hold is noticed all the same."""
    path = tmp_path / "model.pkl"
    _regularized_model().save(path)
    code = textwrap.dedent(f"""
        import numpy as np, kgraph
        from kgraph.layers import layer
        assert not layer._LOSS_HOLDERS, "a fresh process holds no losses before loading"
        model = kgraph.saving.load_model({str(path)!r})
        losses = [float(np.asarray(v)) for v in model.losses]
        print(losses)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[3.0]"  # 0.5 * sum(ones(3, 2) ** 2)


def test_a_copied_model_keeps_its_regularization(monkeypatch):
    model = _regularized_model()
    monkeypatch.setattr(layer_module, "_LOSS_HOLDERS", type(layer_module._LOSS_HOLDERS)())
    assert model.losses == []  # nothing registered: the walk is skipped (what a fresh process would see)
    clone = copy.deepcopy(model)
    np.testing.assert_allclose([float(np.asarray(v)) for v in clone.losses], [3.0])
    assert len(model.losses) == 1  # the copy's layers registered; the original's are found by the walk again


def test_added_losses_are_cleared_at_each_call_and_other_models_are_unaffected():
    class Penalty(layers.Layer):
        def call(self, x):
            self.add_loss(kgraph.ops.sum(x))
            return x

    inputs = kgraph.Input((2,))
    with_loss = kgraph.Model(inputs, Penalty()(inputs))
    plain = kgraph.Sequential([kgraph.Input((2,)), layers.Dense(1)])
    x = np.ones((4, 2), "float32")
    with_loss(x)
    with_loss(x)
    assert [float(np.asarray(v)) for v in with_loss.losses] == [8.0]  # the last call's only
    assert plain.losses == []
    plain(x)
    assert [float(np.asarray(v)) for v in with_loss.losses] == [8.0]  # another model's call clears its own only
    with_loss(2 * x)
    assert [float(np.asarray(v)) for v in with_loss.losses] == [16.0]


def test_training_adds_the_regularization_to_the_loss():
    model = _regularized_model()
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")
    assert abs(model.evaluate(x, y, verbose=0) - 3.0) < 1e-6
