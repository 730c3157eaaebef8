"""Learning-rate schedules at several steps, and their configs."""
import math

import pytest

from kgraph.optimizers import schedules


def test_exponential_decay():
    smooth = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    stairs = schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)
    for step in (0, 5, 10, 25):
        assert smooth(step) == pytest.approx(0.1 * 0.5 ** (step / 10))
        assert stairs(step) == pytest.approx(0.1 * 0.5 ** (step // 10))
    with pytest.raises(ValueError, match="decay_steps"):
        schedules.ExponentialDecay(0.1, decay_steps=0, decay_rate=0.5)


def test_piecewise_constant_decay_boundaries_are_inclusive():
    schedule = schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
    assert [schedule(s) for s in (0, 10, 11, 20, 21, 1000)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]
    with pytest.raises(ValueError, match="1 less than"):
        schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5])


def test_cosine_decay_without_and_with_warmup():
    schedule = schedules.CosineDecay(0.1, decay_steps=100, alpha=0.1)
    for step in (0, 25, 50, 100, 150):
        fraction = min(step, 100) / 100
        expected = 0.1 * (0.9 * 0.5 * (1 + math.cos(math.pi * fraction)) + 0.1)
        assert schedule(step) == pytest.approx(expected)
    warm = schedules.CosineDecay(0.0, decay_steps=10, warmup_target=1.0, warmup_steps=4)
    assert [warm(s) for s in (0, 1, 2)] == pytest.approx([0.0, 0.25, 0.5])
    assert warm(4) == pytest.approx(1.0)
    assert warm(9) == pytest.approx(0.5)
    assert warm(14) == pytest.approx(0.0, abs=1e-12)
    assert warm(100) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("schedule", [
    schedules.ExponentialDecay(0.1, 10, 0.9, staircase=True),
    schedules.PiecewiseConstantDecay([5], [0.1, 0.01]),
    schedules.CosineDecay(0.1, 10, alpha=0.2, warmup_target=0.3, warmup_steps=2),
])
def test_serialize_round_trip(schedule):
    rebuilt = schedules.deserialize(schedules.serialize(schedule))
    assert type(rebuilt) is type(schedule) and rebuilt.get_config() == schedule.get_config()
    assert [rebuilt(s) for s in range(15)] == [schedule(s) for s in range(15)]
