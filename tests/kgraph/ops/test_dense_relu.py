"""``ops.nn.dense_relu``: a Dense layer with the relu activation as one recorded op, the same values as two.

The Functional step of an exact ``Dense(activation="relu")`` runs it; a subclass of Dense takes the generic call
(``relu(dense(...))``, two ops), which is the reference here: forward values, first and second-order gradients
and whole training trajectories are compared bit for bit, with the compiled kernels on and off.
"""
import importlib

import numpy as np
import pytest

import kgraph
from kgraph.backend.autodiff import GradientTape
from kgraph.layers.core import dense as dense_module

nn = importlib.import_module("kgraph.ops.nn")  # the module (the package's attribute ``nn`` is a namespace)


class _TwoOps(kgraph.layers.Dense):
    """Dense by the generic call: its own ``relu(dense(...))`` (a subclass never takes the fused step)."""


def _operands(dtype, special):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 24)).astype(dtype)
    kernel = rng.standard_normal((24, 32)).astype(dtype)
    bias = rng.standard_normal(32).astype(dtype)
    if special:
        x[0, 0], x[1, :], x[2, 3] = np.nan, 0.0, np.inf  # NaN rows, exact zeros (relu's kink), inf
        bias[5], bias[7] = -np.inf, 0.0  # row 1, column 7: a pre-activation of exactly 0 (gradient 0)
    return x, kernel, bias


def _run(fn, x, kernel, bias, weights):
    variables = [kgraph.Variable(kernel), kgraph.Variable(bias)]
    x_in = np.array(x)
    with GradientTape() as tape:
        tape.watch(x_in)
        out = fn(x_in, *variables)
        loss = kgraph.ops.sum(kgraph.ops.multiply(out, weights))
    return np.asarray(out), tape.gradient(loss, [x_in, *variables])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # inf - inf and NaN in the products, on purpose
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True], ids=["finite", "nan-inf-zero"])
@pytest.mark.parametrize("compiled_on", [True, False], ids=["compiled", "numpy"])
def test_values_and_gradients_equal_relu_of_dense(switch, dtype, special, compiled_on):
    switch(compiled_on)
    x, kernel, bias = _operands(dtype, special)
    weights = np.random.default_rng(4).standard_normal((64, 32)).astype(dtype)
    fused = _run(nn.dense_relu, x, kernel, bias, weights)
    two = _run(lambda a, k, b: nn.relu(nn.dense(a, k, b)), x, kernel, bias, weights)
    np.testing.assert_array_equal(fused[0], two[0])
    for got, want in zip(fused[1], two[1]):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    assert ("relu" in switch.calls) == compiled_on  # 2,048 cells: the compiled loop where it is on


def test_without_bias_and_with_leading_axes():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    kernel = rng.standard_normal((7, 4)).astype(np.float32)
    fused = _run(lambda a, k, b: nn.dense_relu(a, k), x, kernel, np.zeros(4, np.float32), np.ones((3, 5, 4)))
    two = _run(lambda a, k, b: nn.relu(nn.dense(a, k)), x, kernel, np.zeros(4, np.float32), np.ones((3, 5, 4)))
    np.testing.assert_array_equal(fused[0], two[0])
    for got, want in zip(fused[1][:2], two[1][:2]):
        np.testing.assert_array_equal(got, want)


def _pair(seed=0):
    """The same small MLP twice: exact Dense layers, and the subclass that calls relu and dense apart."""
    models = []
    for cls in (kgraph.layers.Dense, _TwoOps):
        kgraph.utils.set_random_seed(seed)
        models.append(kgraph.Sequential([kgraph.Input((12,)), cls(48, activation="relu"),
                                         cls(48, activation="relu"), cls(3, activation="softmax")]))
    models[1].set_weights(models[0].get_weights())
    return models


@pytest.mark.parametrize("compiled_on", [True, False], ids=["compiled", "numpy"])
def test_training_trajectory_is_that_of_two_ops(switch, monkeypatch, compiled_on):
    switch(compiled_on)
    calls = []
    real = dense_module.dense_relu
    monkeypatch.setattr(dense_module, "dense_relu", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((96, 12)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0)
    histories = []
    for model in _pair():
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        histories.append(model.fit(x, y, batch_size=32, epochs=3, shuffle=False, verbose=0).history)
    assert calls, "the exact Dense layers did not take the fused op"
    assert histories[0] == histories[1]


def test_trained_weights_equal_bit_for_bit():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 12)).astype(np.float32)
    y = (x[:, 2] > 0).astype(np.int64)
    models = _pair(seed=1)
    for model in models:
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(models[0].get_weights(), models[1].get_weights()):
        np.testing.assert_array_equal(a, b)


def test_gradient_of_a_gradient_through_the_fused_op():
    """A gradient penalty (WGAN-GP's): d/dweights of |d out / d x|^2, through exact and subclassed Dense."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    results = []
    for model in _pair(seed=2):
        inputs = np.array(x)
        with GradientTape() as outer:
            with GradientTape() as inner:
                inner.watch(inputs)
                out = model(inputs, training=True)
            slopes = inner.gradient(out, inputs)
            penalty = kgraph.ops.mean(kgraph.ops.square(slopes))
        results.append([np.asarray(g) for g in outer.gradient(penalty, model.trainable_weights)])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
