"""The LSTM kernel (Keras's default activations, no recurrent dropout; step masks included) against finite
differences and the general loop."""
import contextlib

import numpy as np
import pytest

from kgraph import ops
from kgraph.backend.autodiff import GradientTape
from kgraph.ops.kernels import lstm as lstm_kernel
from kgraph.ops.kernels import threads
from tests.gradcheck import check_gradients

BATCH, TIMESTEPS, UNITS = 2, 3, 2


def _inputs(seed, dtype=np.float64, batch=BATCH, timesteps=TIMESTEPS, units=UNITS):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) * scale for s, scale in (
        ((batch, timesteps, 4 * units), 1.0), ((units, 4 * units), 0.5), ((batch, units), 0.5),
        ((batch, units), 0.5))]


def _all_outputs(go_backwards, **options):
    """One array holding every output of ops.lstm, so one cotangent weighs them all."""
    def fn(xs):
        sequence, h, c = ops.lstm(*xs, go_backwards=go_backwards, **options)
        return ops.concatenate([ops.reshape(sequence, (BATCH, -1)), h, c], axis=1)
    return fn


# A step mask with a masked step in every row, a fully masked row and an unmasked one (BATCH x TIMESTEPS).
MASK = np.array([[True, False, True], [False, False, False]])


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("options", [{}, {"step_mask": MASK}, {"step_mask": MASK, "zero_output_for_mask": True}])
def test_kernel_gradients_match_finite_differences(go_backwards, options):
    # float64 central differences with eps 1e-6 are good to about 1e-8; 1e-5 relative leaves room.
    assert lstm_kernel.applies("tanh", "sigmoid", None, options.get("step_mask"))
    check_gradients(_all_outputs(go_backwards, **options), _inputs(0))


@contextlib.contextmanager
def _general_loop():
    """Calls of ops.lstm inside take the general loop (the reference the kernel is compared with)."""
    applies = lstm_kernel.applies
    lstm_kernel.applies = lambda *args, **kwargs: False
    try:
        yield
    finally:
        lstm_kernel.applies = applies


def _run(xs, go_backwards, general=False, **options):
    sequence_weights = np.random.default_rng(5).standard_normal((xs[0].shape[0], xs[0].shape[1], xs[1].shape[0]))
    with GradientTape() as tape, (_general_loop() if general else contextlib.nullcontext()):
        tape.watch(xs)
        sequence, h, c = ops.lstm(*xs, go_backwards=go_backwards, **options)
        loss = ops.sum(sequence * sequence_weights) + ops.sum(h * 0.5) + ops.sum(c * c)
    return [np.asarray(sequence), np.asarray(h), np.asarray(c)] + tape.gradient(loss, xs)


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("masked", [None, "carry", "zero outputs"])
def test_kernel_matches_the_general_loop(go_backwards, masked):
    # The kernel computes the general loop's float32 operations (its sigmoid through tanh), so the two agree
    # to float32 rounding (1e-5 of values of order 1 to 10), masked steps included.
    xs = _inputs(1, np.float32, batch=5, timesteps=7, units=6)
    options = {} if masked is None else {"step_mask": np.random.default_rng(2).random((5, 7)) > 0.4,
                                          "zero_output_for_mask": masked == "zero outputs"}
    fast = _run(xs, go_backwards, **options)
    general = _run(xs, go_backwards, general=True, **options)
    for name, a, b in zip(["sequence", "h", "c", "d_projection", "d_kernel", "d_h0", "d_c0"], fast, general):
        assert a.dtype == np.float32, name
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=name)


def test_kernel_needs_no_initial_states():
    xs = _inputs(2, np.float32)[:2]
    with GradientTape() as tape:
        tape.watch(xs)
        sequence, h, c = ops.lstm(*xs)
        loss = ops.sum(h) + ops.sum(c)
    d_projection, d_kernel = tape.gradient(loss, xs)
    assert sequence.shape == (BATCH, TIMESTEPS, UNITS) and d_projection.shape == xs[0].shape
    with _general_loop():
        general = ops.lstm(*xs)
    np.testing.assert_allclose(h, general[1], rtol=1e-6, atol=1e-6)
    assert np.all(np.isfinite(d_kernel)) and np.any(d_kernel != 0)


def test_other_activations_and_recurrent_dropout_take_the_general_loop():
    assert not lstm_kernel.applies("relu", "sigmoid", None, None)
    assert not lstm_kernel.applies("tanh", "hard_sigmoid", None, None)
    assert not lstm_kernel.applies("tanh", "sigmoid", np.ones((4, 1, 1)), None)
    assert lstm_kernel.applies("tanh", "sigmoid", None, np.ones((1, 1), bool))  # step masks: the kernel


def test_wrong_initial_state_shape_is_named():
    xs = _inputs(3, np.float32)
    with pytest.raises(ValueError, match=r"`initial_c` of shape \(batch, units\) = \(2, 2\).*\(2, 3\)"):
        ops.lstm(xs[0], xs[1], xs[2], np.zeros((2, 3), np.float32))


@pytest.mark.parametrize("go_backwards", [False, True])
def test_batch_halves_in_two_threads_match_the_general_loop(go_backwards):
    # Large enough for the kernel to split the batch between two threads (where threadpoolctl is installed;
    # elsewhere the same call runs whole). Each row's recurrence is independent, so results are the same.
    lstm_kernel._TIMINGS.clear()  # a shape's first call runs split (then each way is timed)
    xs = _inputs(4, np.float32, batch=2 * lstm_kernel.MIN_ROWS + 3, timesteps=16, units=64)
    assert xs[0].shape[0] * xs[0].shape[1] * xs[0].shape[2] >= lstm_kernel.MIN_WORK
    assert (lstm_kernel._halves(xs[0].shape[0], xs[0].shape[1] * xs[0].shape[2]) is not None) == \
        threads.can_split()
    mask = np.random.default_rng(3).random(xs[0].shape[:2]) > 0.2
    fast = _run(xs, go_backwards, step_mask=mask)
    general = _run(xs, go_backwards, general=True, step_mask=mask)
    for name, a, b in zip(["sequence", "h", "c", "d_projection", "d_kernel", "d_h0", "d_c0"], fast, general):
        # float32 over 16 steps, with products summed in other orders (BLAS on one thread in each half, the
        # kernel gradient over the rows in another order): within 1e-4 relative or 1e-5 of the array's scale
        # (1e-4 is also the exporter's recurrent tolerance).
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5 * np.abs(b).max(), err_msg=name)


def _with_and_without_bias(general, compiled_on, monkeypatch, go_backwards=False, **options):
    """ops.lstm given its bias, and the same call on a projection holding the bias: outputs and gradients."""
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "1" if compiled_on else "0")
    rng = np.random.default_rng(7)
    projection, kernel, h0, c0 = _inputs(3, np.float32, batch=6, timesteps=5, units=4)
    bias = rng.standard_normal(16).astype(np.float32)
    time_major = np.ascontiguousarray(projection.swapaxes(0, 1)).swapaxes(0, 1)  # as the LSTM layer makes it
    weights = rng.standard_normal((6, 5, 4))
    runs = []
    for folded in (True, False):
        xs = [time_major, kernel, h0, c0, bias]
        with GradientTape() as tape, (_general_loop() if general else contextlib.nullcontext()):
            tape.watch(xs)
            if folded:
                sequence, h, c = ops.lstm(*xs, go_backwards=go_backwards, **options)
            else:
                held = ops.swapaxes(ops.add(ops.swapaxes(xs[0], 0, 1), xs[4]), 0, 1)
                sequence, h, c = ops.lstm(held, *xs[1:4], go_backwards=go_backwards, **options)
            loss = ops.sum(sequence * weights) + ops.sum(h * 0.5) + ops.sum(c * c)
        runs.append([np.asarray(sequence), np.asarray(h), np.asarray(c)] + tape.gradient(loss, xs))
    return runs


@pytest.mark.parametrize("general", [False, True])
@pytest.mark.parametrize("compiled_on", [False, True])
@pytest.mark.parametrize("go_backwards, masked", [(False, False), (True, False), (False, True)])
def test_a_bias_given_to_the_op_equals_one_held_by_the_projection(monkeypatch, general, compiled_on, go_backwards,
                                                                  masked):
    pytest.importorskip("numba") if compiled_on else None
    from kgraph.ops.kernels import compiled
    if compiled_on:
        compiled.kernels(compiled.LOAD_WORK)  # these arrays are too small to load numba themselves
    options = {"step_mask": np.random.default_rng(8).random((6, 5)) > 0.3} if masked else {}
    folded, held = _with_and_without_bias(general, compiled_on, monkeypatch, go_backwards, **options)
    names = ["sequence", "h", "c", "d_projection", "d_kernel", "d_h0", "d_c0", "d_bias"]
    for name, a, b in zip(names, folded, held):
        np.testing.assert_array_equal(a, b, err_msg=name)  # bit for bit: the same float operations
    assert folded[-1].shape == (16,) and held[-1] is not None


def test_a_bias_of_the_wrong_shape_is_named():
    projection, kernel = _inputs(4, np.float32)[:2]
    with pytest.raises(ValueError, match=r"lstm expects bias of shape \(4 \* units,\) = \(8,\)"):
        ops.lstm(projection, kernel, bias=np.zeros(7, np.float32))


def _compiled_kernels(monkeypatch, on):
    """The compiled kernels on (numba loaded, skipping without it) or off for the rest of the test."""
    if on:
        pytest.importorskip("numba")
        from kgraph.ops.kernels import compiled
        compiled.kernels(compiled.LOAD_WORK)  # these arrays are too small to load numba themselves
    monkeypatch.setenv("KGRAPH_COMPILED_KERNELS", "1" if on else "0")


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("compiled_on", [False, True])
def test_without_initial_h_the_last_product_is_skipped_and_the_rest_unchanged(monkeypatch, masked, compiled_on):
    # Without initial_h nobody reads its cotangent, so BPTT skips the first step's product: every other
    # output and cotangent (initial_c's included) equals a run given zeros as initial_h, bit for bit.
    _compiled_kernels(monkeypatch, compiled_on)
    projection, kernel, _, c0 = _inputs(6, np.float32, batch=6, timesteps=5, units=4)
    options = {"step_mask": np.random.default_rng(9).random((6, 5)) > 0.3} if masked else {}
    weights = np.random.default_rng(10).standard_normal((6, 5, 4))
    runs = []
    for h0 in (None, np.zeros((6, 4), np.float32)):
        xs = [projection, kernel, c0]
        with GradientTape() as tape:
            tape.watch(xs)
            sequence, h, c = ops.lstm(xs[0], xs[1], h0, xs[2], **options)
            loss = ops.sum(sequence * weights) + ops.sum(c * c)
        runs.append([np.asarray(sequence), np.asarray(h), np.asarray(c)] + tape.gradient(loss, xs))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("general", [False, True])
@pytest.mark.parametrize("compiled_on", [False, True])
def test_an_unread_sequence_gives_the_gradients_of_a_zero_cotangent(monkeypatch, general, compiled_on):
    # Only h is read: the tape hands the VJP a read-only zero view for the sequence (no zeros written), and
    # every cotangent equals a run whose sequence is read with zero weights, bit for bit.
    _compiled_kernels(monkeypatch, compiled_on)
    xs = _inputs(11, np.float32, batch=6, timesteps=5, units=4)
    options = {"step_mask": np.random.default_rng(12).random((6, 5)) > 0.3}
    runs = []
    for read in (False, True):
        with GradientTape() as tape, (_general_loop() if general else contextlib.nullcontext()):
            tape.watch(xs)
            sequence, h, c = ops.lstm(*xs, **options)
            loss = ops.sum(h * h) + (ops.sum(sequence * np.zeros(sequence.shape, np.float32)) if read else 0.0)
        runs.append(tape.gradient(loss, xs))
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    assert np.abs(runs[0][0]).sum() > 0
