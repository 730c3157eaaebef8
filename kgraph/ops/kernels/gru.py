"""The GRU recurrence (``reset_after``, Keras's default activations, no recurrent dropout) with compiled loops.

``kgraph.ops.recurrent.gru``'s loop makes about fourteen NumPy calls a step
forward, on column blocks of each step's gates, and its VJP as many a step
plus whole-sequence temporaries; with numba installed (``kernels.compiled``)
this module runs the same operations in the same order as a few compiled loops
a step around NumPy's products and ``tanh`` (the sigmoid is ``0.5 * tanh(x / 2)
+ 0.5`` there too), so outputs and gradients are those of the loop, element for
element, but for float32's tanh where a machine's timing prefers
``kernels.fused_tanh``'s: correctly rounded where NumPy's is within one unit in
the last place, and about twice as fast where NumPy's is slow.
Each step's product is NumPy's BLAS on the step's rows, as in the loop. Where
that BLAS and ``np.tanh``'s loop can be called from compiled code
(``kernels.native``), the whole forward loop is one compiled call and so is
the whole backward loop, and the batch's rows (which recur independently) may
run as two halves in two threads, BLAS on one thread each
(``kernels.threads``), the forward and backward pass each timing both ways and
keeping the faster, as the LSTM's kernel does. A half's products are BLAS's on
half the rows, whose sums OpenBLAS may round otherwise than the whole batch's:
there float values may move in their last bits (as for the LSTM's halves).
"""
import time

import numpy as np

from kgraph.backend.cotangents import all_zero
from kgraph.ops.kernels import compiled, native, threads

__all__ = ["applies", "run", "vjp"]

# Each thread's half of the batch has at least this many rows, and a call this many elements of gates.
MIN_ROWS = 8
MIN_WORK = 1 << 16
# Per (batch, timesteps, 3 * units): the forward's and the backward's timings of two threads against one.
_TIMINGS = {}


def applies(reset_after, recurrent_masks, activation, recurrent_activation, projection, recurrent_kernel,
            recurrent_bias):
    """The compiled kernels, when they compute this call (else None: ``ops.recurrent.gru``'s own loop runs)."""
    dtype = projection.dtype
    if not reset_after or recurrent_masks is not None or activation != "tanh" or \
            recurrent_activation != "sigmoid" or dtype.kind != "f" or dtype.itemsize not in (4, 8) or \
            np.asarray(recurrent_kernel).dtype != dtype or \
            (recurrent_bias is not None and np.asarray(recurrent_bias).dtype != dtype):
        return None
    return compiled.kernels(projection.size)


def _contiguous(projection):
    """``(base, time_major)``: the projection as a C-contiguous array indexed [t, row] or [row, t], copied when
    it is neither (its values are only read)."""
    if projection.flags.c_contiguous:
        return projection, False
    swapped = projection.transpose(1, 0, 2)
    if swapped.flags.c_contiguous:
        return swapped, True
    return np.ascontiguousarray(projection), False


def _halves(batch, work):
    """Two row ranges for two threads, or None where the batch is too small for a hand-off to pay."""
    if batch < 2 * MIN_ROWS or work < MIN_WORK or not threads.can_split():
        return None
    return (0, batch // 2), (batch // 2, batch)


def _in_rows(job, batch, which, split):
    """``job(r0, r1)`` over the ``batch`` rows: in two threads where the ``which`` timing (0 forward, 1 backward) of
    ``split`` (``(halves, timings)`` or None) chooses it, else whole; the timing records the way taken."""
    halves, timings = split if split is not None else (None, None)
    two = timings is not None and timings[which].choose()
    start = time.perf_counter()
    if two:
        threads.in_halves(lambda rows: job(*rows), *halves)
    else:
        job(0, batch)
    if timings is not None:
        timings[which].record(two, time.perf_counter() - start)


def _tanh_loop(fused, dtype, own):
    """``(loop, context, auxdata)`` of the gates' tanh for ``fused.tanh_columns``: ``(0, 0, 0)`` for the
    kernels' own float32 tanh, else ``np.tanh``'s loop, or None where that cannot be called from compiled code."""
    return (0, 0, 0) if own else native.tanh_loop(dtype, fused)


def run(fused, projection, recurrent_kernel, recurrent_bias, hidden, gates, kept, keep, steps, input_bias=None):
    """The forward steps into ``hidden`` (``(T + 1, batch, units)``, ``hidden[0]`` the initial state), ``gates``
    and ``kept`` (the loop's arrays), with the loop's ``keep`` ((T, batch, 1) or None); ``input_bias`` (of the
    projection's dtype) is added to the projection as each step reads it. Returns what ``vjp`` needs of the
    call: how its rows were split (None: whole)."""
    timesteps, batch, width = gates.shape
    u = width // 3
    dtype = projection.dtype
    base, time_major = _contiguous(projection)
    bias = np.empty(0, dtype) if recurrent_bias is None else np.ascontiguousarray(recurrent_bias, dtype=dtype)
    step_bias = np.empty(0, dtype) if input_bias is None else np.ascontiguousarray(input_bias)
    masks = np.empty((0, 0), dtype) if keep is None else np.ascontiguousarray(keep[..., 0])
    half, one, zero = dtype.type(0.5), dtype.type(1), dtype.type(0)
    recurrent = np.empty((batch, 3 * u), dtype=dtype)
    # float32's tanh compiled and correctly rounded where timed faster (kernels.fused_tanh), else NumPy's;
    # timed here (once per process) before any split runs the steps in two threads
    own = dtype == np.float32 and fused.tanh_preferred()
    gemm = native.kernel_gemm(fused, recurrent_kernel, batch, dtype)
    loop = None if gemm is None else _tanh_loop(fused, dtype, own)
    if loop is None:  # a step's product and tanh by NumPy, the rest compiled, all rows at once
        tanh = fused.tanh_rows if own else lambda a, out: np.tanh(a, out=out)
        for s, t in steps:
            np.matmul(hidden[s], recurrent_kernel, out=recurrent)
            fused.gru_gates(gates, s, recurrent, bias, base, t, time_major, half, step_bias, 0, batch)
            z = gates[s]
            tanh(z[:, :2 * u], z[:, :2 * u])
            fused.gru_candidate(gates, kept, s, recurrent, base, t, time_major, half, step_bias, 0, batch)
            tanh(z[:, 2 * u:], z[:, 2 * u:])
            fused.gru_hidden(gates, hidden, s, masks, 0, batch)
        return None
    times = np.array([t for _, t in steps], dtype=np.int64)
    kernel = recurrent_kernel

    def forward(r0, r1):
        fused.gru_forward_steps(gemm, *loop, times, time_major, base, kernel, hidden, gates, kept, recurrent, bias,
                                step_bias, masks, half, one, zero, r0, r1)
    halves = _halves(batch, batch * timesteps * width)
    split = None if halves is None else (halves, threads.timings(_TIMINGS, (batch, timesteps, width), 2))
    _in_rows(forward, batch, 0, split)
    return {"gemm": gemm, "split": split}


def vjp(fused, cotangents, recurrent_kernel, gates, kept, hidden, keep, steps, zero_output, state=None):
    """``(d_pre, d_recurrent, dh)`` of the loop's VJP: the projection's cotangent in processing order, the
    recurrent product's (for the kernel's and bias's gradients) and the initial state's; ``state``: what
    ``run`` returned."""
    g_sequence, g_h = cotangents
    timesteps, batch, width = gates.shape
    u = width // 3
    dtype = gates.dtype
    # Only the last state read (the tape's zero view, or zeros): no sequence cotangent to add at every step.
    sequence = np.empty((batch, 0, u), dtype) if all_zero(g_sequence) else np.ascontiguousarray(g_sequence, dtype)
    masks = np.empty((0, 0), dtype) if keep is None else np.ascontiguousarray(keep[..., 0])
    d_pre = np.empty_like(gates)
    d_recurrent = np.empty((timesteps, batch, width), dtype=dtype)
    dh = np.array(g_h, dtype=dtype)
    skip = np.empty((batch, u) if keep is not None else (0, 0), dtype=dtype)
    product = np.empty((batch, u), dtype=dtype)
    one, zero = dtype.type(1), dtype.type(0)
    kernel_t = np.ascontiguousarray(recurrent_kernel.T)  # faster products each step than a transposed view
    zero_output = bool(zero_output)
    if state is None:  # the steps' products by NumPy (as the forward's)
        for s, _ in reversed(steps):
            fused.gru_backward_step(s, sequence, dh, gates, hidden, kept, d_pre, d_recurrent, one, masks,
                                    zero_output, skip, 0, batch)
            np.matmul(d_recurrent[s], kernel_t, out=product)
            fused.gru_backward_carry(dh, gates, s, product, masks, skip, zero, 0, batch)
        return d_pre, d_recurrent, dh

    def backward(r0, r1):
        fused.gru_backward_steps(state["gemm"], len(steps), sequence, dh, gates, hidden, kept, d_pre, d_recurrent,
                                 kernel_t, product, one, zero, masks, zero_output, skip, r0, r1)
    _in_rows(backward, batch, 1, state["split"])
    return d_pre, d_recurrent, dh
