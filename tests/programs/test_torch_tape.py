"""The ``keras.GradientTape`` that the Keras worker adds to real Keras (torch_tape.py), against plain torch autograd."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.programs.harness import REPO_ROOT, _child_env  # noqa: E402
from tests.programs.torch_tape import GradientTape  # noqa: E402


def _leaf(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def test_first_order_gradients_equal_torch_autograd_and_come_back_detached():
    w, b = _leaf(3, 2).requires_grad_(), _leaf(2, seed=1).requires_grad_()
    x = _leaf(4, 3, seed=2)
    with GradientTape() as tape:
        tape.watch(x)
        loss = torch.tanh(x @ w + b).pow(2).sum()
    gw, gx, gb = tape.gradient(loss, [w, x, b])
    ew, ex, eb = torch.autograd.grad(torch.tanh(x @ w + b).pow(2).sum(), [w, x, b])
    for got, want in ((gw, ew), (gx, ex), (gb, eb)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
        assert not got.requires_grad and got.grad_fn is None


def test_the_answer_has_the_structure_of_the_sources_and_none_where_unconnected():
    w, unused = _leaf(2).requires_grad_(), _leaf(2, seed=1).requires_grad_()
    constant = _leaf(2, seed=2)  # never watched: no gradient
    with GradientTape(persistent=True) as tape:
        y = (w * 3.0).sum()
    assert isinstance(tape.gradient(y, [w, unused]), list)
    as_tuple = tape.gradient(y, (w, unused, constant))
    assert isinstance(as_tuple, tuple) and as_tuple[1] is None and as_tuple[2] is None
    np.testing.assert_allclose(as_tuple[0].numpy(), [3.0, 3.0])
    as_dict = tape.gradient(y, {"w": w, "u": unused})
    assert set(as_dict) == {"w", "u"} and as_dict["u"] is None
    np.testing.assert_allclose(tape.gradient([y, y], w).numpy(), [6.0, 6.0])  # a list target is summed


def test_a_tape_that_is_not_persistent_answers_once():
    w = _leaf(2).requires_grad_()
    with GradientTape() as tape:
        y = (w * w).sum()
    tape.gradient(y, w)
    with pytest.raises(RuntimeError, match="only compute gradients once"):
        tape.gradient(y, w)


def test_nested_tapes_give_the_gradient_of_a_gradient_penalty():
    # The WGAN-GP penalty: the gradient of a critic's output with respect to its input, whose norm enters the
    # loss; the outer tape differentiates it with respect to the weights (a second-order gradient).
    w1, w2 = _leaf(3, 4).requires_grad_(), _leaf(4, 1, seed=1).requires_grad_()
    x = _leaf(5, 3, seed=2)

    def critic(inp):
        return torch.tanh(inp @ w1) @ w2

    with GradientTape() as tape:
        with GradientTape() as gp_tape:
            gp_tape.watch(x)
            pred = critic(x)
        (grads,) = gp_tape.gradient(pred, [x])
        assert grads.requires_grad  # computed with create_graph: the outer tape records
        gp = ((grads.pow(2).sum(dim=1).sqrt() - 1.0) ** 2).mean()
    got = tape.gradient(gp, [w1, w2])

    xx = x.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(critic(xx).sum(), [xx], create_graph=True)
    want = torch.autograd.grad(((g.pow(2).sum(dim=1).sqrt() - 1.0) ** 2).mean(), [w1, w2])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)
        assert np.abs(b.numpy()).max() > 1e-3  # not a trivial zero


def test_watch_refuses_what_it_cannot_track():
    with GradientTape() as tape:
        with pytest.raises(TypeError, match="torch tensor or a Keras Variable"):
            tape.watch(np.ones(3))
        ints = torch.arange(3)
        tape.watch(ints)  # not floating point: never has gradients, as in TensorFlow
        assert not ints.requires_grad
    with pytest.raises(TypeError, match="Gradient sources"):
        tape.gradient(torch.ones(()), [np.ones(3)])
    with pytest.raises(ValueError, match="watch_accessed_variables=False"):
        GradientTape(watch_accessed_variables=False)
    with GradientTape() as tape, pytest.raises(RuntimeError, match="cannot be entered twice"):
        with tape:
            pass


KERAS_PROBE = """
import numpy as np
import torch
import keras
from tests.programs.torch_tape import GradientTape, install
install(keras)
assert keras.GradientTape is GradientTape
keras.utils.set_random_seed(1)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)])
x = torch.tensor(np.random.default_rng(0).normal(size=(8, 3)).astype("float32"))
with keras.GradientTape() as tape:
    loss = keras.ops.mean(keras.ops.square(model(x)))
grads = tape.gradient(loss, model.trainable_weights)
model.zero_grad()
keras.ops.mean(keras.ops.square(model(x))).backward()
for g, v in zip(grads, model.trainable_weights):
    np.testing.assert_allclose(g.numpy(), v.value.grad.numpy(), rtol=1e-6)
twin = keras.models.clone_model(model)
twin.set_weights(model.get_weights())
opt, twin_opt = keras.optimizers.Adam(0.1), keras.optimizers.Adam(0.1)
opt.apply_gradients(zip(grads, model.trainable_weights))            # as the programs call it
with torch.no_grad():                                                # as Keras's own torch train_step does
    twin_opt.apply(list(grads), twin.trainable_weights)
for v, t in zip(model.trainable_weights, twin.trainable_weights):
    assert v.value.is_leaf and v.value.grad_fn is None and v.value.requires_grad
    np.testing.assert_array_equal(v.numpy(), t.numpy())
try:
    with keras.GradientTape() as tape:
        tape.watch(keras.Variable(1.0, trainable=False))
except ValueError as err:
    assert "not trainable" in str(err)
else:
    raise AssertionError("watching a non-trainable Variable was accepted")
print("ok")
"""


def test_with_real_keras_the_gradients_are_those_of_backward_and_the_optimizer_applies_them():
    pytest.importorskip("keras")
    proc = subprocess.run([sys.executable, "-c", KERAS_PROBE], cwd=REPO_ROOT, env=_child_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr
