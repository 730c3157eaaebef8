"""The recurrent ops' ``bias`` argument (the input bias added as each step reads the projection, as the LSTM and
GRU layers pass it) against the same call on a projection that holds the bias: equal bit for bit."""
import numpy as np
import pytest

from kgraph import ops
from kgraph.backend.autodiff import GradientTape

BATCH, TIMESTEPS, UNITS = 6, 5, 4


def _gru_runs(monkeypatch, compiled_on, go_backwards=False, **options):
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "1" if compiled_on else "0")
    rng = np.random.default_rng(11)
    width = 3 * UNITS
    # Time-major memory seen batch-major, as the GRU layer makes its projection.
    projection = np.ascontiguousarray(rng.standard_normal((TIMESTEPS, BATCH, width)).astype(np.float32))
    projection = projection.swapaxes(0, 1)
    kernel = (rng.standard_normal((UNITS, width)) * 0.5).astype(np.float32)
    recurrent_bias = rng.standard_normal(width).astype(np.float32)
    h0 = (rng.standard_normal((BATCH, UNITS)) * 0.5).astype(np.float32)
    bias = rng.standard_normal(width).astype(np.float32)
    weights = rng.standard_normal((BATCH, TIMESTEPS, UNITS))
    runs = []
    for folded in (True, False):
        xs = [projection, kernel, recurrent_bias, h0, bias]
        with GradientTape() as tape:
            tape.watch(xs)
            if folded:
                sequence, h = ops.gru(*xs, go_backwards=go_backwards, **options)
            else:
                held = ops.swapaxes(ops.add(ops.swapaxes(xs[0], 0, 1), xs[4]), 0, 1)
                sequence, h = ops.gru(held, *xs[1:4], go_backwards=go_backwards, **options)
            loss = ops.sum(sequence * weights) + ops.sum(h * h)
        runs.append([np.asarray(sequence), np.asarray(h)] + tape.gradient(loss, xs))
    return runs


@pytest.mark.parametrize("compiled_on", [False, True])
@pytest.mark.parametrize("go_backwards, masked, activation", [(False, False, "tanh"), (True, False, "tanh"),
                                                                (False, True, "tanh"), (False, False, "relu")])
def test_gru_bias_given_to_the_op_equals_one_held_by_the_projection(monkeypatch, compiled_on, go_backwards, masked,
                                                                   activation):
    if compiled_on:  # these arrays are too small to load numba themselves
        pytest.importorskip("numba")
        from kgraph.ops.kernels import compiled
        assert compiled.kernels(compiled.LOAD_WORK) is not None
    options = {"activation": activation}
    if masked:
        options["step_mask"] = np.random.default_rng(12).random((BATCH, TIMESTEPS)) > 0.3
    folded, held = _gru_runs(monkeypatch, compiled_on, go_backwards, **options)
    names = ["sequence", "h", "d_projection", "d_kernel", "d_recurrent_bias", "d_h0", "d_bias"]
    for name, a, b in zip(names, folded, held):
        np.testing.assert_array_equal(a, b, err_msg=name)
    assert folded[-1].shape == (3 * UNITS,) and held[-1] is not None


def test_gru_bias_of_the_wrong_shape_is_named():
    projection = np.zeros((2, 3, 3 * UNITS), np.float32)
    kernel = np.zeros((UNITS, 3 * UNITS), np.float32)
    with pytest.raises(ValueError, match=r"gru expects bias of shape \(3 \* units,\) = \(12,\)"):
        ops.gru(projection, kernel, bias=np.zeros(4 * UNITS, np.float32))


def test_the_compiled_gru_steps_add_the_bias(monkeypatch):
    pytest.importorskip("numba")
    from kgraph.ops.kernels import compiled, gru
    assert compiled.kernels(compiled.LOAD_WORK) is not None
    seen = []
    original = gru.run
    monkeypatch.setattr(gru, "run", lambda *args: seen.append(args[-1]) or original(*args))
    _gru_runs(monkeypatch, True)
    assert seen[0] is not None and seen[0].shape == (3 * UNITS,) and seen[1] is None  # folded, then held
