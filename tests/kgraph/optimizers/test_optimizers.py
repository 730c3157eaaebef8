"""Optimizers: first steps against Keras 3's update formulas written out in NumPy."""
import pickle
import warnings

import numpy as np
import pytest

from kgraph import optimizers
from kgraph.backend.variable import Variable
from kgraph.optimizers import schedules

RNG = np.random.default_rng(0)
INIT = [RNG.normal(size=(3, 2)), RNG.normal(size=(2,))]
GRADS = [[RNG.normal(size=(3, 2)) * 2, RNG.normal(size=(2,)) * 2] for _ in range(4)]


def run(optimizer, grads=GRADS, init=INIT):
    variables = [Variable(w.copy(), name=f"w{i}", dtype="float64") for i, w in enumerate(init)]
    for step_grads in grads:
        optimizer.apply([g.copy() for g in step_grads], variables)
    return [v.value for v in variables]


def reference(update, state_init, grads=GRADS, init=INIT):
    """Apply ``update(w, g, state, t)`` (t = 1, 2, ...) to copies of ``init``."""
    weights = [w.copy() for w in init]
    states = [state_init(w) for w in weights]
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            weights[i] = update(weights[i], g, states[i], t)
    return weights


def assert_weights(actual, expected):
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12)


def test_sgd_plain_momentum_and_nesterov():
    lr = 0.01
    assert_weights(run(optimizers.SGD()), reference(lambda w, g, s, t: w - lr * g, lambda w: None))

    def momentum(nesterov):
        def update(w, g, s, t):
            s["m"] = 0.9 * s["m"] - lr * g
            return w + (0.9 * s["m"] - lr * g if nesterov else s["m"])
        return update

    for nesterov in (False, True):
        expected = reference(momentum(nesterov), lambda w: {"m": np.zeros_like(w)})
        assert_weights(run(optimizers.SGD(momentum=0.9, nesterov=nesterov)), expected)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam(amsgrad):
    lr, b1, b2, eps = 0.01, 0.8, 0.95, 1e-3

    def update(w, g, s, t):
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        s["m"] += (g - s["m"]) * (1 - b1)
        s["v"] += (g * g - s["v"]) * (1 - b2)
        s["vhat"] = np.maximum(s["vhat"], s["v"])
        v = s["vhat"] if amsgrad else s["v"]
        return w - s["m"] * alpha / (np.sqrt(v) + eps)

    expected = reference(update, lambda w: {"m": np.zeros_like(w), "v": np.zeros_like(w), "vhat": np.zeros_like(w)})
    actual = run(optimizers.Adam(learning_rate=lr, beta_1=b1, beta_2=b2, epsilon=eps, amsgrad=amsgrad))
    assert_weights(actual, expected)


def test_adamw_decays_before_the_adam_step():
    lr, wd = 0.01, 0.1

    def update(w, g, s, t):
        w = w - w * wd * lr
        alpha = lr * np.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        s["m"] += (g - s["m"]) * 0.1
        s["v"] += (g * g - s["v"]) * 0.001
        return w - s["m"] * alpha / (np.sqrt(s["v"]) + 1e-7)

    expected = reference(update, lambda w: {"m": np.zeros_like(w), "v": np.zeros_like(w)})
    assert_weights(run(optimizers.AdamW(learning_rate=lr, weight_decay=wd)), expected)
    assert optimizers.AdamW().weight_decay == 0.004
    with pytest.raises(ValueError, match="weight_decay"):
        optimizers.AdamW(weight_decay=None)


@pytest.mark.parametrize("centered,momentum", [(False, 0.0), (True, 0.0), (False, 0.5), (True, 0.5)])
def test_rmsprop(centered, momentum):
    lr, rho, eps = 0.01, 0.8, 1e-7

    def update(w, g, s, t):
        s["v"] = rho * s["v"] + (1 - rho) * g * g
        if centered:
            s["a"] = rho * s["a"] + (1 - rho) * g
            denominator = s["v"] - s["a"] ** 2 + eps
        else:
            denominator = s["v"] + eps
        increment = lr * g / np.sqrt(denominator)
        if momentum:
            s["mom"] = momentum * s["mom"] + increment
            return w - s["mom"]
        return w - increment

    expected = reference(update, lambda w: {"v": np.zeros_like(w), "a": np.zeros_like(w), "mom": np.zeros_like(w)})
    actual = run(optimizers.RMSprop(learning_rate=lr, rho=rho, momentum=momentum, centered=centered))
    assert_weights(actual, expected)


def test_adagrad():
    lr = 0.1

    def update(w, g, s, t):
        s["acc"] += g * g
        return w - lr * g / np.sqrt(s["acc"] + 1e-7)

    expected = reference(update, lambda w: {"acc": np.full_like(w, 0.5)})
    assert_weights(run(optimizers.Adagrad(learning_rate=lr, initial_accumulator_value=0.5)), expected)


def test_clipping_as_keras():
    g = [np.array([3.0, 4.0]), np.array([0.0, 12.0])]
    init = [np.zeros(2), np.zeros(2)]
    clipped = run(optimizers.SGD(learning_rate=1.0, clipnorm=1.0), [g], init)
    assert_weights(clipped, [-np.array([0.6, 0.8]), -np.array([0.0, 1.0])])
    clipped = run(optimizers.SGD(learning_rate=1.0, global_clipnorm=6.5), [g], init)
    assert_weights(clipped, [-g[0] * 0.5, -g[1] * 0.5])
    clipped = run(optimizers.SGD(learning_rate=1.0, clipvalue=3.5), [g], init)
    assert_weights(clipped, [-np.array([3.0, 3.5]), -np.array([0.0, 3.5])])
    nan = run(optimizers.SGD(learning_rate=1.0, global_clipnorm=1.0), [[np.array([np.inf, 1.0]), g[1]]], init)
    assert np.all(np.isnan(nan[0])) and np.all(np.isnan(nan[1]))
    with pytest.raises(ValueError, match="Only one of"):
        optimizers.SGD(clipnorm=1.0, clipvalue=1.0)


def test_weight_decay_exclusion_and_gradients_left_untouched():
    optimizer = optimizers.SGD(learning_rate=0.1, weight_decay=0.5)
    kernel = Variable(np.ones(2), name="kernel", dtype="float64")
    bias = Variable(np.ones(2), name="bias", dtype="float64")
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    grad = np.ones(2)
    optimizer.apply([grad, grad], [kernel, bias])
    np.testing.assert_allclose(kernel.value, 1 - 0.05 - 0.1)
    np.testing.assert_allclose(bias.value, 1 - 0.1)
    np.testing.assert_array_equal(grad, 1.0)


def test_missing_gradients_warn_once_and_skip():
    optimizer = optimizers.Adam()
    a, b = Variable(np.ones(2), name="a"), Variable(np.ones(2), name="b")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer.apply([np.ones(2, np.float32), None], [a, b])
        optimizer.apply([np.ones(2, np.float32), None], [a, b])
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "Gradients do not exist for variables ['b']" in messages[0]
    np.testing.assert_array_equal(b.value, 1.0)
    assert optimizer.iterations == 2
    with pytest.raises(ValueError, match="No gradients provided"):
        optimizer.apply([None, None], [a, b])


def test_update_is_in_place_and_keeps_dtype():
    variable = Variable(np.ones((4, 4), np.float32), name="w")
    array = variable.value
    optimizers.Adam().apply([np.ones((4, 4), np.float64)], [variable])
    assert variable.value is array and array.dtype == np.float32 and np.all(array < 1)


def test_learning_rate_property_schedules_and_setter():
    optimizer = optimizers.SGD(learning_rate=0.5)
    optimizer.learning_rate = 0.25
    assert optimizer.learning_rate == 0.25
    schedule = schedules.PiecewiseConstantDecay([1], [1.0, 0.1])
    scheduled = optimizers.SGD(learning_rate=schedule)
    variable = Variable(np.zeros(1), dtype="float64")
    seen = []
    for _ in range(3):
        seen.append(scheduled.learning_rate)
        scheduled.apply([np.ones(1)], [variable])
    assert seen == [1.0, 1.0, 0.1]
    np.testing.assert_allclose(variable.value, [-2.1])
    with pytest.raises(TypeError, match="not settable"):
        scheduled.learning_rate = 0.1
    with pytest.raises(ValueError, match="learning_rate"):
        optimizers.SGD(learning_rate="fast")


def test_pickles_together_with_its_variables():
    variables = [Variable(w.copy(), name=f"w{i}", dtype="float64") for i, w in enumerate(INIT)]
    optimizer = optimizers.Adam(learning_rate=0.01)
    optimizer.apply(GRADS[0], variables)
    variables2, optimizer2 = pickle.loads(pickle.dumps((variables, optimizer)))
    for opt, vs in ((optimizer, variables), (optimizer2, variables2)):
        for step_grads in GRADS[1:]:
            opt.apply(step_grads, vs)
    assert_weights([v.value for v in variables2], [v.value for v in variables])
    assert optimizer2.iterations == 4 and len(optimizer2.variables) == 1 + 4  # the iteration count, then 4 slots


def test_slot_state_round_trip():
    variables = [Variable(w.copy(), name=f"w{i}", dtype="float64") for i, w in enumerate(INIT)]
    optimizer = optimizers.RMSprop(momentum=0.5)
    optimizer.apply(GRADS[0], variables)
    state = optimizer.get_slot_state({id(v): i for i, v in enumerate(variables)})
    copies = [Variable(v.value.copy(), name=v.name, dtype="float64") for v in variables]
    restored = optimizers.RMSprop(momentum=0.5)
    restored.set_slot_state(copies, state, optimizer.iterations)
    for opt, vs in ((optimizer, variables), (restored, copies)):
        opt.apply(GRADS[1], vs)
    assert_weights([v.value for v in copies], [v.value for v in variables])


def test_get_config_and_serialization():
    for name, cls in [("sgd", optimizers.SGD), ("adam", optimizers.Adam), ("adamw", optimizers.AdamW),
                      ("rmsprop", optimizers.RMSprop), ("adagrad", optimizers.Adagrad), ("Adam", optimizers.Adam)]:
        assert type(optimizers.get(name)) is cls
    adam = optimizers.Adam(learning_rate=0.02, beta_1=0.8, amsgrad=True, clipnorm=1.0)
    assert optimizers.get(adam) is adam
    rebuilt = optimizers.deserialize(optimizers.serialize(adam))
    assert rebuilt.get_config() == adam.get_config()
    cosine = optimizers.SGD(learning_rate=schedules.CosineDecay(0.1, 10), momentum=0.9)
    rebuilt = optimizers.deserialize(optimizers.serialize(cosine))
    assert isinstance(rebuilt._learning_rate, schedules.CosineDecay) and rebuilt.learning_rate == 0.1
    assert optimizers.SGD().get_config()["learning_rate"] == 0.01
    with pytest.raises(ValueError, match="'adamm'.*Valid names"):
        optimizers.get("adamm")
