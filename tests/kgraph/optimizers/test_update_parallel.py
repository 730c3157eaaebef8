"""Optimizer updates shared with a worker thread give the same values as one thread, element for element."""
import numpy as np
import pytest

from kgraph import optimizers
from kgraph.backend.variable import Variable
from kgraph.ops.kernels import threads
from kgraph.optimizers import update_parallel


def _train(optimizer, split, steps=3):
    rng = np.random.default_rng(0)
    shapes = [(300, 257), (257,), (64, 3), (5,)]  # two above the piece size (one of odd length), two below
    variables = [Variable(rng.standard_normal(s).astype(np.float32), name=f"w{i}") for i, s in enumerate(shapes)]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]
    previous = update_parallel.SPLIT_ELEMENTS, update_parallel.FUSED_SPLIT_ELEMENTS
    # Both thresholds: NumPy updates and compiled ones (Adam's, with numba installed) split alike.
    update_parallel.SPLIT_ELEMENTS = update_parallel.FUSED_SPLIT_ELEMENTS = 1 if split else 1 << 62
    try:
        for step in grads:
            optimizer.apply(step, variables)
    finally:
        update_parallel.SPLIT_ELEMENTS, update_parallel.FUSED_SPLIT_ELEMENTS = previous
    return [v.numpy() for v in variables] + [s.numpy() for s in optimizer.variables]


@pytest.mark.parametrize("make", [
    lambda: optimizers.Adam(learning_rate=0.01), lambda: optimizers.Adam(amsgrad=True),
    lambda: optimizers.AdamW(weight_decay=0.1), lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    lambda: optimizers.RMSprop(centered=True, momentum=0.5), lambda: optimizers.Adagrad(0.1),
    lambda: optimizers.Adadelta(1.0), lambda: optimizers.Adamax(0.01), lambda: optimizers.Nadam(0.01),
    lambda: optimizers.Lion(0.01), lambda: optimizers.Ftrl(0.1, l1_regularization_strength=0.01, beta=0.1),
    lambda: optimizers.ScheduleFreeAdamW(warmup_steps=2)])
def test_split_updates_equal_single_thread_updates(make):
    for split, whole in zip(_train(make(), split=True), _train(make(), split=False)):
        np.testing.assert_array_equal(split, whole)


def test_split_puts_half_of_each_large_variable_on_the_worker():
    value = np.zeros(20000, np.float32)
    jobs = [(np.ones_like(value), value, [np.zeros_like(value)], np.empty_like(value)),
            (np.ones(10, np.float32), np.zeros(10, np.float32), [np.zeros(10, np.float32)], np.empty(10, np.float32))]
    worker, own = update_parallel._split(jobs)
    assert [job[1].size for job in worker] == [10000]
    assert [job[1].size for job in own] == [10000, 10]
    assert np.shares_memory(worker[0][1], value) and np.shares_memory(own[0][1], value)


class _NormScaled(optimizers.SGD):
    """An update that is not elementwise (it reads the whole gradient's norm)."""

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        value -= learning_rate * gradient / np.linalg.norm(gradient)


def test_a_subclass_overriding_update_step_updates_whole_variables():
    optimizer = _NormScaled(0.5)
    assert not optimizer._elementwise() and optimizers.SGD()._elementwise()
    variable = Variable(np.zeros(100000, np.float32), name="w")
    gradient = np.ones(100000, np.float32)
    optimizer.apply([gradient], [variable])
    np.testing.assert_allclose(variable.numpy(), -0.5 / np.sqrt(100000), rtol=1e-5)


def test_timing_tries_both_ways_then_keeps_the_faster_and_retimes_the_other():
    timing = threads.Timing()
    # Each way's first run only warms up (one-time costs): it runs again before it is timed.
    order = []
    for seconds in (50.0, 2.0, 50.0, 1.0):
        order.append(timing.choose())
        timing.record(order[-1], seconds)
    assert order == [True, True, False, False]
    assert timing.seconds == {True: 2.0, False: 1.0}
    choices = [timing.choose() for _ in range(2 * timing.RETRY)]
    assert choices.count(True) == 2 and all(c is (i % timing.RETRY == timing.RETRY - 5) for i, c in enumerate(choices))
    timing.record(True, 1.0)  # ties go to splitting
    assert timing.choose() is True


def test_timing_is_not_swayed_by_one_slow_run_but_follows_a_lasting_change():
    timing = threads.Timing()
    for split, seconds in ((True, 9.0), (True, 1.0), (False, 9.0), (False, 2.0)):
        timing.choose()
        timing.record(split, seconds)
    timing.record(True, 50.0)  # a busy moment of the machine
    assert timing.choose() is True and timing.seconds == {True: 1.0, False: 2.0}
    for _ in range(timing.WINDOW):  # splitting stays slower: its fast run ages out of the window
        timing.record(True, 3.0)
    assert timing.seconds[True] == 3.0 and timing.choose() is False
    timing.add(False, 0.5)  # a later part of the last run of that way
    assert timing.recent[False] == [2.5]


def test_optimizer_state_leaves_out_the_timing():
    import pickle
    optimizer = optimizers.Adam()
    size = max(update_parallel.SPLIT_ELEMENTS, update_parallel.FUSED_SPLIT_ELEMENTS)
    variable = Variable(np.zeros(size, np.float32), name="w")
    for _ in range(4):  # each way warms up, then is timed
        optimizer.apply([np.ones(size, np.float32)], [variable])
    assert None not in optimizer._update_timing.seconds.values()
    restored = pickle.loads(pickle.dumps(optimizer))
    assert restored._update_timing.seconds == {True: None, False: None}
