"""Adam's planned step (``Adam._planned``): the same values as the general path, and the general path wherever
the plan no longer describes the step (slots restored, weights assigned, options changed, odd gradients)."""
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import optimizers
from kgraph.ops.kernels import compiled

pytestmark = pytest.mark.skipif(compiled.kernels(1 << 30) is None, reason="the plan runs the compiled kernels")


class GeneralAdam(optimizers.Adam):
    """Adam stepped the general way at every step (it overrides ``_update``, which the plan stands for)."""

    def _update(self, grads, trainable_variables):
        super()._update(grads, trainable_variables)


class CountingAdam(optimizers.Adam):
    """Adam counting the steps its plan took."""

    planned = 0

    def _planned(self, grads, variables):
        taken = super()._planned(grads, variables)
        self.planned += taken
        return taken


def _variables(seed=0):
    rng = np.random.default_rng(seed)
    return [kgraph.Variable(rng.standard_normal(s).astype(np.float32)) for s in [(60, 50), (50,), (50, 3), (3,)]]


def _gradients(variables, rng):
    return [rng.standard_normal(v.shape).astype(np.float32) for v in variables]


def _train(optimizer, steps=5, between=None):
    variables, rng = _variables(), np.random.default_rng(1)
    for step in range(steps):
        if between is not None:
            between(step, optimizer, variables)
        optimizer.apply(_gradients(variables, rng), variables)
    return [np.array(v.value) for v in variables] + [np.array(s.value) for s in optimizer.variables]


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_planned_steps_equal_the_general_path():
    planned = CountingAdam(0.01)
    got = _train(planned, steps=6)
    assert planned.planned == 5  # the first step builds the slots the general way, the plan takes the rest
    _assert_same(got, _train(GeneralAdam(0.01), steps=6))


def test_a_learning_rate_schedule_is_read_at_each_planned_step():
    schedule = optimizers.schedules.ExponentialDecay(0.05, decay_steps=1, decay_rate=0.5)
    planned = CountingAdam(schedule)
    got = _train(planned)
    assert planned.planned == 4
    _assert_same(got, _train(GeneralAdam(optimizers.schedules.ExponentialDecay(0.05, 1, 0.5))))


def _restore_slots(step, optimizer, variables):
    if step == 3:  # new slot arrays (as loading a saved optimizer does): the plan is made again
        optimizer.set_slot_state(variables, optimizer.get_slot_state({id(v): i for i, v in enumerate(variables)}))


def _assign_weights(step, optimizer, variables):
    if step == 2:
        variables[0].assign(np.zeros(variables[0].shape))


def _clip_from_step_three(step, optimizer, variables):
    if step == 3:
        optimizer.clipnorm = 0.5


def _constrain_from_step_two(step, optimizer, variables):
    if step == 2:
        variables[2].constraint = kgraph.constraints.NonNeg()


@pytest.mark.parametrize("between", [_restore_slots, _assign_weights, _clip_from_step_three,
                                     _constrain_from_step_two])
def test_changes_between_steps_are_honoured(between):
    planned = CountingAdam(0.01)
    got = _train(planned, steps=6, between=between)
    assert planned.planned >= 1
    _assert_same(got, _train(GeneralAdam(0.01), steps=6, between=between))
    if between is _constrain_from_step_two:
        assert np.all(got[2] >= 0)


def test_odd_gradients_go_the_general_way():
    """A float64 gradient, a Fortran-ordered one, a None: each step as the general path takes it (cast, NumPy's
    loop, skipped with a warning)."""
    def odd(planned):
        variables, rng = _variables(), np.random.default_rng(1)
        for step in range(5):
            grads = _gradients(variables, rng)
            if step == 2:
                grads[0] = grads[0].astype(np.float64)
            if step == 3:
                grads[2] = np.asfortranarray(grads[2])
            if step == 4:
                grads[1] = None
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                planned.apply(grads, variables)
        return [np.array(v.value) for v in variables] + [np.array(s.value) for s in planned.variables]

    planned = CountingAdam(0.01)
    got = odd(planned)
    assert planned.planned == 1  # step 1 only: steps 2 to 4 each had a gradient the plan does not take
    _assert_same(got, odd(GeneralAdam(0.01)))


def test_no_plan_for_amsgrad_decay_or_too_many_elements():
    for options in ({"amsgrad": True}, {"weight_decay": 0.01}, {"global_clipnorm": 1.0}):
        optimizer = CountingAdam(0.01, **options)
        _train(optimizer)
        assert optimizer.planned == 0, options
    big = CountingAdam(0.01)
    variables = [kgraph.Variable(np.zeros((1100, 1000), np.float32))]
    for _ in range(3):
        big.apply([np.ones((1100, 1000), np.float32)], variables)
    assert big.planned == 0 and int(big.iterations.value) == 3


def test_fit_trains_by_plan_with_the_written_steps_values():
    x = np.random.default_rng(0).standard_normal((64, 8)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)

    def fit(optimizer):
        kgraph.utils.set_random_seed(0)
        model = kgraph.Sequential([kgraph.Input((8,)), kgraph.layers.Dense(16, activation="relu"),
                                   kgraph.layers.Dense(2, activation="softmax")])
        model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
        history = model.fit(x, y, batch_size=16, epochs=3, verbose=0, shuffle=False).history
        return history, model.get_weights()

    planned = CountingAdam(0.01)
    (h1, w1), (h2, w2) = fit(planned), fit(GeneralAdam(0.01))
    assert planned.planned == 11 and h1 == h2
    _assert_same(w1, w2)
