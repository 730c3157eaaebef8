"""Adam updates a step's variables at once (one alpha, one kernel lookup): the same values as per variable."""
import numpy as np
import pytest

import kgraph
from kgraph import optimizers


class PerVariableAdam(optimizers.Adam):
    """Adam whose update_step is its own: the optimizer calls it once per variable."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = 0

    def update_step(self, gradient, value, slots, learning_rate, scratch):
        self.calls += 1
        super().update_step(gradient, value, slots, learning_rate, scratch)


def _run(optimizer, steps=3):
    rng = np.random.default_rng(0)
    shapes_dtypes = [((600, 500), np.float32), ((500,), np.float32), ((7, 3), np.float64), ((4,), np.float16)]
    variables = [kgraph.Variable(rng.standard_normal(s).astype(d)) for s, d in shapes_dtypes]
    for _ in range(steps):
        grads = [rng.standard_normal(v.shape).astype(v.dtype) for v in variables]
        grads[2] = np.asfortranarray(grads[2])  # not C-contiguous: NumPy's update for this one
        optimizer.apply(grads, variables)
    return [np.array(v.value) for v in variables] + [np.array(s.value) for s in optimizer.variables[1:]]


@pytest.mark.parametrize("compiled_on", [True, False])
@pytest.mark.parametrize("options", [{}, {"amsgrad": True}, {"weight_decay": 0.1}])
def test_step_at_once_equals_update_step_per_variable(monkeypatch, compiled_on, options):
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "1" if compiled_on else "0")
    per_variable = PerVariableAdam(0.01, **options)
    expected = _run(per_variable)
    assert per_variable.calls == 3 * 4
    got = _run(optimizers.Adam(0.01, **options))
    for a, b in zip(expected, got):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
