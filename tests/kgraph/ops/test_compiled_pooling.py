"""The compiled max-pooling passes of the fused convolution + pooling op (numba, the `fast` extra) against the
NumPy code they replace: the same maxima and winners (ties, NaN, infinities, signed zeros), the same gradients,
in every layout the op's paths give them."""
import importlib

import numpy as np
import pytest

from tests.kgraph.ops.test_conv_pool import CASES, case_arrays, fused, values_and_gradients

pytest.importorskip("numba")  # the dev extra installs it, so these run wherever the suite is meant to run

conv_pool = importlib.import_module("kgraph.ops.conv_pool")
threads = importlib.import_module("kgraph.ops.kernels.threads")


@pytest.fixture(autouse=True)
def _image_blocks_in_one_thread(monkeypatch):
    """The op's image blocks stay in this thread in every test here: which way runs is timed, and two threads'
    BLAS calls may round in another order than one thread's (the comparisons are bit for bit; a loaded machine
    flipped the choice between two runs of one test, 9 of 2,704 values 1 ulp apart)."""
    monkeypatch.setattr(threads.Timing, "choose", lambda self: False)


@pytest.fixture(autouse=True)
def _single_channel_as_window_matrix(monkeypatch):
    """A single-channel 3x3 convolution takes its window-matrix path here too: with the kernels on it would run
    as the direct compiled pass, which computes the convolution itself (its values are the two ops' within
    rounding, tested in test_conv_pool.py), while these tests compare the pooling passes bit for bit."""
    monkeypatch.setattr(conv_pool._Direct, "applicable", staticmethod(lambda *args: False))


def _layouts(rng, dtype):
    """Arrays ``(A, P, B, Q, C, F)`` as the paths give them: im2col's contiguous taps, Winograd's tiles, image
    windows as a strided view, and a 3x3 window."""
    im2col = rng.standard_normal((1, 4, 1, 1, 60, 8)).astype(dtype)
    tiles = rng.standard_normal((2, 2, 2, 2, 30, 16)).astype(dtype)
    images = rng.standard_normal((3, 10, 12, 9)).astype(dtype).reshape(15, 2, 6, 2, 1, 9)
    wide = rng.standard_normal((4, 9, 9, 5)).astype(dtype).reshape(12, 3, 3, 3, 1, 5)
    return [im2col, tiles, images, wide, images[:, :, ::2]]


def _special(a, rng):
    """``a`` with ties, NaNs, infinities and signed zeros sprinkled in (in place)."""
    flat = a.reshape(-1) if a.flags.c_contiguous else None
    if flat is None:
        return a
    picks = rng.integers(0, flat.size, size=(6, max(1, flat.size // 20)))
    flat[picks[0]] = 1.0
    flat[picks[1]] = 1.0
    flat[picks[2]] = np.nan
    flat[picks[3]] = np.inf
    flat[picks[4]] = -np.inf
    flat[picks[5]] = -0.0
    return a


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True])
def test_compiled_pooling_equals_numpy_in_every_layout(switch, dtype, special):
    rng = np.random.default_rng(4)
    for a in _layouts(rng, dtype):
        if special:
            _special(a, rng)
        switch(False)
        want_best, beats, _ = conv_pool._pool(a)
        switch(True)
        best, winners, _ = conv_pool._pool(a)
        assert isinstance(winners, tuple) and isinstance(beats, list)
        np.testing.assert_array_equal(best, want_best)  # NaN where NumPy has NaN
        g = rng.standard_normal(best.shape).astype(dtype)
        want_out = np.full(a.shape, 99, dtype=dtype)
        conv_pool._unpool(g, beats, want_out)
        out = np.full(a.shape, 99, dtype=dtype)
        conv_pool._unpool(g, winners, out)
        np.testing.assert_array_equal(out, want_out)  # finite gradients: the same values (zeros of either sign)
        if special:  # the winner gets the gradient as it is, the other cells zero (NumPy's masks multiply)
            g.reshape(-1)[::7] = np.inf
            g.reshape(-1)[1::7] = np.nan
            conv_pool._unpool(g, winners, out)
            index = winners[1]
            for tap, cells in enumerate(conv_pool._taps(out)):
                np.testing.assert_array_equal(cells, np.where(index == tap, g, 0))
    assert switch.calls["pool_argmax"] == 5 and switch.calls["pool_route"] == (10 if special else 5)


def test_compiled_winner_is_the_first_maximum_in_row_major_order(switch):
    switch(True)
    a = np.zeros((1, 2, 1, 3, 1, 4), dtype=np.float32)
    a[0, :, 0, :, 0, 0] = [[1, 5, 5], [5, 2, 2]]  # ties: the first 5 (tap 1)
    a[0, :, 0, :, 0, 1] = [[7, 1, 1], [1, 1, 7]]  # the first cell
    a[0, :, 0, :, 0, 2] = [[1, 1, 1], [1, 1, 9]]  # the last cell
    a[0, :, 0, :, 0, 3] = [[1, np.nan, 3], [4, 5, 6]]  # NaN propagates; the winner stays the one before it
    best, (_, index), _ = conv_pool._pool(a)
    np.testing.assert_array_equal(best.reshape(-1), [5, 7, 9, np.nan])
    np.testing.assert_array_equal(index.reshape(-1), [1, 0, 5, 0])


def test_windows_of_more_taps_than_a_byte_counts_stay_numpy(switch):
    switch(True)
    a = np.random.default_rng(0).standard_normal((1, 16, 1, 16, 2, 3)).astype(np.float32)
    best, winners, _ = conv_pool._pool(a)
    assert isinstance(winners, list) and "pool_argmax" not in switch.calls
    np.testing.assert_array_equal(best, a.max(axis=(1, 3)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_fused_op_with_compiled_pooling_equals_numpy(switch, case, dtype, with_bias):
    # Every path of the op (im2col, Winograd with windows inside tiles or across them, 1-d), the bias and relu
    # finished in the pooling pass or after it, values and gradients element for element.
    x, kernel, bias = case_arrays(case, dtype, with_bias)
    runs = []
    for on in (False, True):
        switch(on)
        runs.append(values_and_gradients(lambda *a: fused(*a, *case[2:]), [x, kernel, bias]))
    (want, want_grads), (got, got_grads) = runs
    np.testing.assert_array_equal(got, want)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_array_equal(g, w)
    assert switch.calls["pool_argmax"] >= 1 and switch.calls["pool_route"] >= 1


def test_a_bias_of_another_dtype_is_added_after_the_pooling_pass(switch):
    case = CASES[0]
    x, kernel, bias = case_arrays(case, "float32", True)
    bias = bias.astype("float64")
    runs = []
    for on in (False, True):
        switch(on)
        runs.append(fused(x, kernel, bias, *case[2:]))
    np.testing.assert_array_equal(runs[1], runs[0])
    assert runs[1].dtype == runs[0].dtype


def test_cnn_training_trajectory_is_the_same_with_and_without_compiled_pooling(switch):
    # Both convolutions of a small CNN fuse with their pooling (im2col for the first, Winograd for the second);
    # losses and weights after three epochs are equal bit for bit (image blocks in one thread: the fixture above).
    import kgraph
    from kgraph import layers
    rng = np.random.default_rng(0)
    x = rng.random((48, 16, 16, 1), dtype=np.float32)
    y = rng.integers(0, 4, 48)
    runs = {}
    for on in (False, True):
        switch(on)
        kgraph.utils.set_random_seed(2)
        model = kgraph.Sequential([kgraph.Input((16, 16, 1)), layers.Conv2D(16, 3, activation="relu"),
                                   layers.MaxPooling2D(2), layers.Conv2D(16, 3, activation="relu"),
                                   layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(4, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        history = model.fit(x, y, epochs=3, batch_size=16, verbose=0, shuffle=False)
        runs[on] = (history.history["loss"], model.get_weights())
    assert switch.calls["pool_argmax"] >= 2 * 9 and switch.calls["pool_route"] >= 2 * 9
    assert runs[False][0] == runs[True][0]
    for a, b in zip(runs[False][1], runs[True][1]):
        np.testing.assert_array_equal(a, b)
