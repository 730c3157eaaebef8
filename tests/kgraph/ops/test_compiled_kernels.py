"""The compiled kernels (numba, the `fast` extra) against the NumPy code they replace: equal values, element
for element (Adam, SGD, RMSprop, the LSTM's steps: float32's given NumPy a correctly rounded tanh, as the compiled
steps' is), and the switch KGRAPH_COMPILED_KERNELS."""
import numpy as np
import pytest

import kgraph
from kgraph import optimizers
from kgraph.ops.kernels import compiled, fused_tanh, gru, lstm, native, threads
from kgraph.optimizers import Adam, update_parallel

pytest.importorskip("numba")  # the dev extra installs it, so these run wherever the suite is meant to run


def test_switch_turns_kernels_off_and_rejects_malformed_values(monkeypatch):
    monkeypatch.delenv(compiled.VARIABLE, raising=False)
    assert compiled.kernels() is not None
    for off in ("0", "off", "False"):
        monkeypatch.setenv(compiled.VARIABLE, off)
        assert compiled.kernels() is None
    monkeypatch.setenv(compiled.VARIABLE, " 1 ")
    assert compiled.kernels() is not None
    monkeypatch.setenv(compiled.VARIABLE, "fast")
    with pytest.raises(ValueError, match="KGRAPH_COMPILED_KERNELS='fast'"):
        compiled.kernels()


def test_without_numba_everything_stays_numpy(monkeypatch):
    monkeypatch.delenv(compiled.VARIABLE, raising=False)
    monkeypatch.setattr(compiled, "_loaded", [])
    monkeypatch.setitem(__import__("sys").modules, "numba", None)  # import numba raises ImportError
    for module in ("kgraph.ops.kernels.fused", "kgraph.ops.kernels.fused_pool", "kgraph.ops.kernels.jit"):
        monkeypatch.delitem(__import__("sys").modules, module, raising=False)
    assert compiled.kernels() is None
    # and training still works, through NumPy
    _adam_run(np.float32, contiguous=True)


def _adam_run(dtype, contiguous, amsgrad=False, learning_rate=0.01, steps=4):
    return _optimizer_run(Adam(learning_rate, amsgrad=amsgrad), dtype, contiguous, steps)


def _optimizer_run(optimizer, dtype, contiguous=True, steps=4):
    rng = np.random.default_rng(0)
    variables = [kgraph.Variable(rng.standard_normal(shape).astype(dtype)) for shape in [(300, 70), (70,), (3,)]]
    for _ in range(steps):
        grads = []
        for v in variables:
            g = rng.standard_normal(v.shape[::-1]).astype(dtype)
            grads.append(g.T if not contiguous and g.ndim == 2 else g.T.copy())
        optimizer.apply(grads, variables)
    return [np.array(v.value) for v in variables] + [np.array(s.value) for s in optimizer.variables[1:]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "strided gradient", "amsgrad", "numpy learning rate"])
def test_adam_fused_equals_numpy(switch, dtype, case):
    options = {"contiguous": case != "strided gradient", "amsgrad": case == "amsgrad",
               "learning_rate": np.float64(0.01) if case == "numpy learning rate" else 0.01}
    switch(False)
    expected = _adam_run(dtype, **options)
    switch(True)
    got = _adam_run(dtype, **options)
    assert switch.calls.get("adam", 0) == (0 if case == "amsgrad" else 8 if case == "strided gradient"
                                            else 12)  # strided: only the two 1-D variables fuse
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype == dtype


@pytest.mark.parametrize("kernel, make", [
    ("sgd", lambda: optimizers.SGD(0.1)), ("sgd", lambda: optimizers.SGD(0.1, momentum=0.9)),
    ("sgd", lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True)), ("rmsprop", lambda: optimizers.RMSprop(0.01)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01, momentum=0.5)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01, centered=True)),
    ("rmsprop", lambda: optimizers.RMSprop(0.01, rho=0.8, centered=True, momentum=0.3)),
    ("adam", lambda: optimizers.AdamW(0.01, weight_decay=0.1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_other_optimizers_fused_equal_numpy(switch, kernel, make, dtype):
    switch(False)
    expected = _optimizer_run(make(), dtype)
    switch(True)
    got = _optimizer_run(make(), dtype)
    assert switch.calls == {kernel: 12}
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)


def _relu_values_and_gradient(x, g):
    x = kgraph.Variable(x)
    with kgraph.GradientTape() as tape:
        y = kgraph.ops.relu(x)
        loss = kgraph.ops.sum(y * g)
    return np.asarray(y), np.asarray(tape.gradient(loss, x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(64, 40), (3, 7, 50), (1000,), (16, 8)])
def test_relu_fused_equals_numpy_special_values_included(switch, dtype, shape):
    rng = np.random.default_rng(0)
    special = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e-45, -1e-45, -2.5, 3.0])
    x = rng.standard_normal(shape)
    g = rng.standard_normal(shape)
    x.reshape(-1)[:10], g.reshape(-1)[:10] = special, special[::-1]
    x, g = x.astype(dtype), g.astype(dtype)
    with np.errstate(invalid="ignore"):  # NumPy's inf * 0
        switch(False)
        expected = _relu_values_and_gradient(x, g)
        switch(True)
        got = _relu_values_and_gradient(x, g)
    compiled_path = x.size >= 1024  # below it NumPy's call costs less (the same values either way)
    assert switch.calls.get("relu", 0) == switch.calls.get("relu_gradient", 0) == int(compiled_path)
    for a, b in zip(expected, got):  # bit for bit: NaN payloads, -0.0 from -g * 0
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_relu_fused_skips_what_it_cannot_take(switch):
    x = np.random.default_rng(1).standard_normal((80, 60)).astype(np.float32)
    switch(True)
    strided = kgraph.ops.relu(x[:, ::2].T)
    ints = kgraph.ops.relu(np.arange(-2000, 2000))
    assert "relu" not in switch.calls
    np.testing.assert_array_equal(strided, np.maximum(x[:, ::2].T, 0))
    np.testing.assert_array_equal(ints, np.maximum(np.arange(-2000, 2000), 0))


def test_adam_fused_kernel_splits_in_two_threads_above_its_threshold(switch, monkeypatch):
    switch(True)
    sizes = []
    fused = compiled.kernels().module

    class Spy:
        def adam(self, *args):
            sizes.append(args[0].size)
            fused.adam(*args)
    monkeypatch.setattr(compiled, "kernels", lambda work=None: Spy())
    for threshold in (1 << 20, 1 << 16):
        monkeypatch.setattr(update_parallel, "FUSED_SPLIT_ELEMENTS", threshold)
        sizes.clear()
        big = kgraph.Variable(np.ones((600, 300), np.float32))
        optimizer = Adam(0.1)
        for _ in range(4):
            optimizer.apply([np.full((600, 300), 0.5, np.float32)], [big])
        if threshold > big.value.size:
            assert set(sizes) == {180000}  # below the threshold: whole, in the calling thread
        elif threads.cores() > 1:
            assert 90000 in sizes  # above it, a timed split ran the kernel on halves
        np.testing.assert_allclose(np.asarray(big.value), 1 - 4 * 0.1, rtol=1e-5)


def rounded_tanh(monkeypatch):
    """Make ``np.tanh`` of float32 values correctly rounded (float64's tanh rounded to float32), as the compiled
    recurrent steps' tanh is (``kernels.fused_tanh``), until ``monkeypatch`` undoes it."""
    numpy_tanh = np.tanh

    def tanh(x, out=None):
        x = np.asarray(x)
        if x.dtype != np.float32:
            return numpy_tanh(x, out=out)
        value = numpy_tanh(x.astype(np.float64)).astype(np.float32)
        if out is None:
            return value
        out[...] = value
        return out
    monkeypatch.setattr(np, "tanh", tanh)


def _own_tanh(monkeypatch, own):
    """Make the recurrent kernels take their own float32 tanh (``own``) or NumPy's, whichever this machine's
    timing would choose (``fused_tanh.preferred``); returns the float32 NumPy run they equal: ``rounded`` or
    ``plain`` (see ``_numpy_runs``)."""
    monkeypatch.setattr(fused_tanh, "_choice", [own])
    return 1 if own else 0


def _numpy_runs(monkeypatch, run):
    """``(plain, rounded)``: ``run()`` with NumPy's tanh, and with ``rounded_tanh``'s."""
    plain = run()
    with monkeypatch.context() as patch:
        rounded_tanh(patch)
        return plain, run()


def _lstm_case(time_major, go_backwards, sequence_cotangent, dtype, batch=24, timesteps=7, units=8, masked=None):
    rng = np.random.default_rng(3)
    if time_major:
        projection = rng.standard_normal((timesteps, batch, 4 * units)).astype(dtype).transpose(1, 0, 2)
    else:
        projection = rng.standard_normal((batch, timesteps, 4 * units)).astype(dtype)
    kernel = (rng.standard_normal((units, 4 * units)) * 0.3).astype(dtype)
    h0, c0 = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(2))
    g_sequence = rng.standard_normal((batch, timesteps, units)).astype(dtype) if sequence_cotangent else \
        np.zeros((batch, timesteps, units), dtype)
    g_h, g_c = (rng.standard_normal((batch, units)).astype(dtype) for _ in range(2))
    mask = None if masked is None else rng.random((batch, timesteps)) > 0.3
    (sequence, h, c), vjp = lstm.run(projection, kernel, h0, c0, go_backwards, mask, masked == "zero outputs")
    return [np.array(sequence), h, c, *vjp((g_sequence, g_h, g_c))]


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("sequence_cotangent", [True, False])
@pytest.mark.parametrize("masked", [None, "carry", "zero outputs"])
@pytest.mark.parametrize("own_tanh", [True, False])
def test_lstm_fused_equals_numpy(switch, monkeypatch, time_major, go_backwards, sequence_cotangent, masked,
                                 own_tanh):
    names = ["sequence", "h", "c", "d_projection", "d_kernel", "d_h0", "d_c0"]
    same = _own_tanh(monkeypatch, own_tanh)
    for dtype in (np.float32, np.float64):
        switch(False)
        runs = _numpy_runs(monkeypatch, lambda: _lstm_case(time_major, go_backwards, sequence_cotangent, dtype,
                                                           masked=masked))
        plain = runs[0]
        switch(True)
        got = _lstm_case(time_major, go_backwards, sequence_cotangent, dtype, masked=masked)
        # bit for bit: float64's tanh is NumPy's in both; float32's the kernels' own (then correctly rounded) or
        # NumPy's in both
        for name, a, b in zip(names, runs[same] if dtype == np.float32 else plain, got):
            np.testing.assert_array_equal(a, b, err_msg=name)
        for name, a, b in zip(names, plain, got):  # and NumPy's own float32 tanh: units in the last place apart
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6 * np.abs(a).max(), err_msg=name)
    # Per dtype, the compiled calls: with NumPy's BLAS and tanh loop callable from compiled code (kernels.native),
    # one for the whole forward loop and one for the backward; with the BLAS alone, a step head per step (and one
    # to end the last) and the cells per step; else a call per step of each kernel.
    expected = {}
    module = compiled.kernels()
    for dtype in (np.float32, np.float64):
        if native.gemm(dtype, module) is None:
            counts = {"lstm_gates": 7, "lstm_cells": 7, "lstm_backward_step": 7}
            counts.update({"lstm_carry": 7, "lstm_restore": 7} if masked else {})
        elif native.tanh_loop(dtype, module) is None and not (own_tanh and dtype == np.float32):
            counts = {"lstm_step_head": 8, "lstm_cells": 7, "lstm_backward_steps": 1}
        else:
            counts = {"lstm_forward_steps": 1, "lstm_backward_steps": 1}
        for name, count in counts.items():
            expected[name] = expected.get(name, 0) + count
    # (kernels.native's one-time checks of what it found may count too: only the LSTM's kernels are compared)
    assert {name: n for name, n in switch.calls.items() if name.startswith("lstm_")} == expected


@pytest.mark.parametrize("own_tanh", [True, False])
def test_lstm_fused_in_two_halves_equals_numpy(switch, monkeypatch, own_tanh):
    if not threads.can_split():
        pytest.skip("one core or no threadpoolctl: no split to test")
    monkeypatch.setattr(lstm, "MIN_WORK", 1)
    monkeypatch.setattr(lstm, "_TIMINGS", {})
    _own_tanh(monkeypatch, own_tanh)
    outs = {}
    for on in (False, True):
        switch(on)
        lstm._TIMINGS.clear()
        with monkeypatch.context() as patch:
            if not on and own_tanh:
                rounded_tanh(patch)  # float32: the compiled steps' tanh (see test_lstm_fused_equals_numpy)
            # The first two calls of a shape time the split and the whole way: every run below covers both.
            outs[on] = [_lstm_case(True, False, True, np.float32, batch=40, masked="carry") for _ in range(3)]
    for expected, got in zip(outs[False], outs[True]):
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(a, b)
    # every call, and two halves in one of them at least (see test_lstm_fused_equals_numpy for the calls per part)
    module = compiled.kernels()
    if native.gemm(np.float32, module) is None:
        assert switch.calls["lstm_gates"] >= 3 * 7 + 7
    elif native.tanh_loop(np.float32, module) is None and not own_tanh:
        assert switch.calls["lstm_step_head"] >= 3 * 8 + 8 and switch.calls["lstm_backward_steps"] >= 3 + 1
    else:
        assert switch.calls["lstm_forward_steps"] >= 3 + 1 and switch.calls["lstm_backward_steps"] >= 3 + 1


def _masked_lstm_training():
    """``(losses, weights)`` of a masked LSTM model's three epochs (float32)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 6, 5)).astype(np.float32)
    x[::3, 4:] = 0  # padded tails: masked steps
    y = rng.integers(0, 3, 64)
    kgraph.utils.set_random_seed(1)
    model = kgraph.Sequential([kgraph.Input((6, 5)), kgraph.layers.Masking(0.0), kgraph.layers.LSTM(16),
                               kgraph.layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0, shuffle=False)
    return history.history["loss"], model.get_weights()


@pytest.mark.parametrize("own_tanh", [True, False])
def test_training_trajectory_is_the_same_with_and_without_compiled_kernels(switch, monkeypatch, own_tanh):
    """The same trajectory, bit for bit, given NumPy the compiled steps' float32 tanh (their own, correctly
    rounded, or NumPy's); with NumPy's own tanh (within one unit in the last place) as close as float32 allows."""
    same = _own_tanh(monkeypatch, own_tanh)
    switch(False)
    runs = _numpy_runs(monkeypatch, _masked_lstm_training)
    plain = runs[0]
    switch(True)
    got = _masked_lstm_training()
    assert runs[same][0] == got[0]
    assert switch.calls["adam"] and (switch.calls.get("lstm_backward_step") or switch.calls.get("lstm_backward_steps"))
    for a, b in zip(runs[same][1], got[1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(plain[0], got[0], rtol=1e-6)
    for a, b in zip(plain[1], got[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_the_recurrent_tanh_is_chosen_by_one_timing_per_process(monkeypatch):
    assert isinstance(fused_tanh._time_both(), bool)  # a real timing of both: whichever this machine prefers
    timed = []
    monkeypatch.setattr(fused_tanh, "_choice", [])
    monkeypatch.setattr(fused_tanh, "_time_both", lambda: timed.append(1) or True)
    assert fused_tanh.preferred() and fused_tanh.preferred()
    assert timed == [1]


def test_numba_loads_only_for_work_worth_it():
    """A fresh process: small models train in NumPy without importing numba; a large enough update loads it."""
    probe = """
import sys
import numpy as np
import kgraph
from kgraph.ops.kernels import compiled
small = kgraph.Sequential([kgraph.Input((4,)), kgraph.layers.Dense(3)])
small.compile(optimizer="adam", loss="mse")
small.fit(np.ones((8, 4), np.float32), np.ones((8, 3), np.float32), epochs=2, verbose=0)
recurrent = kgraph.Sequential([kgraph.Input((5, 4)), kgraph.layers.LSTM(8)])
recurrent(np.ones((2, 5, 4), np.float32))
print("numba" in sys.modules, compiled.loaded() is None)
big = kgraph.Sequential([kgraph.Input((512,)), kgraph.layers.Dense(512)])
big.compile(optimizer="adam", loss="mse")
big.fit(np.ones((8, 512), np.float32), np.ones((8, 512), np.float32), epochs=1, verbose=0)
print("numba" in sys.modules, compiled.loaded() is not None)
"""
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != compiled.VARIABLE}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True", "True"]


def _gru_case(time_major, go_backwards, masked, bias, initial, dtype, batch=24, timesteps=7, units=8, read=True):
    from kgraph import ops
    from kgraph.backend.autodiff import GradientTape
    rng = np.random.default_rng(4)
    if time_major:
        projection = rng.standard_normal((timesteps, batch, 3 * units)).astype(dtype).transpose(1, 0, 2)
    else:
        projection = rng.standard_normal((batch, timesteps, 3 * units)).astype(dtype)
    xs = [projection, (rng.standard_normal((units, 3 * units)) * 0.3).astype(dtype),
          (rng.standard_normal(3 * units) * 0.1).astype(dtype) if bias else None,
          rng.standard_normal((batch, units)).astype(dtype) if initial else None]
    mask = None if masked is None else rng.random((batch, timesteps)) > 0.3
    weights = rng.standard_normal((batch, timesteps, units)).astype(dtype)
    watched = [x for x in xs if x is not None]
    with GradientTape() as tape:
        tape.watch(watched)
        sequence, h = ops.gru(*xs, go_backwards=go_backwards, step_mask=mask,
                              zero_output_for_mask=masked == "zero outputs")
        # read: the sequence weighed (True), read with zero weights ("zeros"), or not read at all (False).
        loss = (ops.sum(sequence * (weights if read is True else 0 * weights)) if read else 0.0) + ops.sum(h * h)
    return [np.asarray(sequence), np.asarray(h)] + tape.gradient(loss, watched)


@pytest.mark.parametrize("time_major", [True, False])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("masked", [None, "carry", "zero outputs"])
@pytest.mark.parametrize("bias, initial", [(True, True), (False, False)])
@pytest.mark.parametrize("own_tanh", [True, False])
def test_gru_fused_equals_numpy(switch, monkeypatch, time_major, go_backwards, masked, bias, initial, own_tanh):
    same = _own_tanh(monkeypatch, own_tanh)
    for dtype in (np.float32, np.float64):
        switch(False)
        runs = _numpy_runs(monkeypatch, lambda: _gru_case(time_major, go_backwards, masked, bias, initial, dtype))
        plain = runs[0]
        switch(True)
        got = _gru_case(time_major, go_backwards, masked, bias, initial, dtype)
        assert len(plain) == len(got)
        # bit for bit given the same tanh (as in test_lstm_fused_equals_numpy)
        for a, b in zip(runs[same] if dtype == np.float32 else plain, got):
            assert a.dtype == b.dtype == dtype
            np.testing.assert_array_equal(a, b)
        for a, b in zip(plain, got):
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=2e-6 * np.abs(a).max())
    assert _gru_calls(switch) == _gru_expected_calls(own_tanh, (np.float32, np.float64))


def _gru_calls(switch):
    return {name: n for name, n in switch.calls.items() if name.startswith("gru_")}


def _gru_expected_calls(own_tanh, dtypes, runs=1, steps=7):
    """The GRU kernels' calls for ``runs`` calls per dtype: with NumPy's BLAS and tanh loop callable from compiled
    code (``kernels.native``; float32's own tanh needs no loop), one call for the whole forward loop and one for
    the backward; else each step's phases."""
    expected = {}
    module = compiled.kernels()
    for dtype in dtypes:
        if native.gemm(dtype, module) is None or \
                (native.tanh_loop(dtype, module) is None and not (own_tanh and dtype == np.float32)):
            counts = dict.fromkeys(["gru_gates", "gru_candidate", "gru_hidden", "gru_backward_step",
                                    "gru_backward_carry"], steps)
        else:
            counts = {"gru_forward_steps": 1, "gru_backward_steps": 1}
        for name, count in counts.items():
            expected[name] = expected.get(name, 0) + count * runs
    return expected


@pytest.mark.parametrize("own_tanh", [True, False])
@pytest.mark.parametrize("masked, go_backwards, dtype", [(None, False, np.float32), ("carry", True, np.float32),
                                                         ("zero outputs", False, np.float32),
                                                         ("carry", False, np.float64)])
def test_gru_fused_in_two_halves_matches_numpy(switch, monkeypatch, own_tanh, masked, go_backwards, dtype):
    if not threads.can_split():
        pytest.skip("one core or no threadpoolctl: no split to test")
    monkeypatch.setattr(gru, "MIN_WORK", 1)
    monkeypatch.setattr(gru, "_TIMINGS", {})
    _own_tanh(monkeypatch, own_tanh)
    switch(False)
    with monkeypatch.context() as patch:
        if own_tanh:
            rounded_tanh(patch)  # float32: the compiled steps' tanh (see test_gru_fused_equals_numpy)
        expected = _gru_case(True, go_backwards, masked, True, True, dtype, batch=40)
    switch(True)
    # The first two calls of a shape time the split and the whole way: the three runs cover both.
    runs = [_gru_case(True, go_backwards, masked, True, True, dtype, batch=40) for _ in range(3)]
    (timing_forward, timing_backward), = gru._TIMINGS.values() or [(None, None)]
    whole = _gru_expected_calls(own_tanh, (dtype,), runs=3)
    if "gru_forward_steps" not in whole:  # no whole-loop calls here: nothing splits
        assert _gru_calls(switch) == whole and timing_forward is None
        return
    assert timing_forward.runs[True] >= 1 and timing_backward.runs[True] >= 1
    assert switch.calls["gru_forward_steps"] >= 3 + 1 and switch.calls["gru_backward_steps"] >= 3 + 1
    for got in runs:
        for a, b in zip(expected, got):
            # a half's products are BLAS's on fewer rows and one thread: their sums may round otherwise (as in
            # the LSTM's halves); within the dtype's rounding over 7 steps
            tolerance = 1e-5 if dtype == np.float32 else 1e-12
            np.testing.assert_allclose(b, a, rtol=tolerance, atol=tolerance / 10 * np.abs(a).max())


@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("masked", [None, "carry", "zero outputs"])
def test_gru_with_its_sequence_unread_equals_a_zero_sequence_cotangent(switch, monkeypatch, go_backwards, masked):
    # Only h read: the tape gives the VJP a zero view for the sequence and the compiled steps add nothing for it;
    # the same cotangents, bit for bit, as the NumPy loop and as reading the sequence with zero weights.
    _own_tanh(monkeypatch, True)
    runs = []
    for on, read in ((True, False), (False, False), (True, "zeros")):
        switch(on)
        with pytest.MonkeyPatch.context() as patch:
            if not on:
                rounded_tanh(patch)  # the compiled steps' float32 tanh
            runs.append(_gru_case(True, go_backwards, masked, True, True, np.float32, read=read))
    for got in runs[1:]:
        for a, b in zip(runs[0], got):
            np.testing.assert_array_equal(a, b)
    assert _gru_calls(switch) == _gru_expected_calls(True, (np.float32,), runs=2)


def test_gru_without_reset_after_or_with_dropout_keeps_the_loop(switch):
    from kgraph import ops
    switch(True)
    rng = np.random.default_rng(0)
    projection = rng.standard_normal((4, 3, 6)).astype(np.float32)
    kernel = rng.standard_normal((2, 6)).astype(np.float32)
    ops.gru(projection, kernel, None, None, reset_after=False)
    ops.gru(projection, kernel, None, None, recurrent_masks=np.ones((3, 4, 2), np.float32))
    ops.gru(projection, kernel, None, None, recurrent_activation="hard_sigmoid")
    assert not _gru_calls(switch)
