"""The GRU's compiled loops (``kernels.gru``): each step's phases over a range of rows, and whole forward and
backward loops that call NumPy's BLAS themselves (``kernels.native``), so that two threads can each run half of
the batch's rows through every step without the GIL. Imported only through ``kernels.compiled``
(``kernels.fused`` re-exports them), which checks for numba.
"""
import numpy as np

from kgraph.ops.kernels.fused_calls import gemm_rows, ufunc_rows
from kgraph.ops.kernels.fused_tanh import tanh_rows
from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["gru_backward_carry", "gru_backward_step", "gru_backward_steps", "gru_candidate", "gru_forward_steps",
           "gru_gates", "gru_hidden", "tanh_columns"]

_compile = compile_kernel


@_compile
def gru_gates(gates, s, recurrent, bias, projection, t, time_major, half, input_bias, r0, r1):
    """Rows ``r0:r1`` of step ``s`` of ``kernels.gru``: ``recurrent += bias`` (when ``bias`` is not empty), then the update and
    reset gates' argument ``(projection_zr + recurrent_zr) * half`` for their tanh (``ops.recurrent.gru``'s
    sigmoid is ``0.5 * tanh(x / 2) + 0.5``), the projection with ``input_bias`` added first when that is not
    empty. (The GRU loops touch few arrays each: with many, LLVM's checks that they do not overlap give up on
    vectorizing; measured 94 against 16 µs a backward step.)"""
    u = recurrent.shape[1] // 3
    with_bias = bias.shape[0] > 0
    with_input_bias = input_bias.shape[0] > 0
    for r in range(r0, r1):
        rec = recurrent[r]
        if with_bias:
            for j in range(3 * u):
                rec[j] = rec[j] + bias[j]
        p = projection[t, r] if time_major else projection[r, t]
        z = gates[s, r]
        if with_input_bias:
            for j in range(2 * u):
                z[j] = ((p[j] + input_bias[j]) + rec[j]) * half
        else:
            for j in range(2 * u):
                z[j] = (p[j] + rec[j]) * half


@_compile
def gru_candidate(gates, kept, s, recurrent, projection, t, time_major, half, input_bias, r0, r1):
    """Rows ``r0:r1``, after the gates' tanh: ``z = z * half + half`` (update and reset gates), ``kept[s]`` the recurrent
    candidate, and the candidate's argument ``reset * kept + projection_h`` for its tanh (``projection_h +
    input_bias_h`` when ``input_bias`` is not empty)."""
    u = recurrent.shape[1] // 3
    for r in range(r0, r1):
        z = gates[s, r]
        zr = z[:2 * u]
        for j in range(2 * u):
            zr[j] = zr[j] * half + half
        k = kept[s, r]
        rec = recurrent[r, 2 * u:]
        for j in range(u):
            k[j] = rec[j]
        reset = z[u:2 * u]
        candidate = z[2 * u:]
        p = projection[t, r, 2 * u:] if time_major else projection[r, t, 2 * u:]
        if input_bias.shape[0] > 0:
            b = input_bias[2 * u:]
            for j in range(u):
                candidate[j] = reset[j] * k[j] + (p[j] + b[j])
        else:
            for j in range(u):
                candidate[j] = reset[j] * k[j] + p[j]


@_compile
def gru_hidden(gates, hidden, s, keep, r0, r1):
    """Rows ``r0:r1``: ``hidden[s + 1] = (hidden[s] - candidate) * update + candidate``; rows masked at step ``s`` (``keep`` not
    empty and 0 there) keep ``hidden[s]``."""
    u = hidden.shape[2]
    masks = keep.shape[0] > 0
    for r in range(r0, r1):
        previous = hidden[s, r]
        h = hidden[s + 1, r]
        if masks and keep[s, r] == 0:
            for j in range(u):
                h[j] = previous[j]
            continue
        update = gates[s, r, :u]
        candidate = gates[s, r, 2 * u:]
        for j in range(u):
            h[j] = (previous[j] - candidate[j]) * update[j] + candidate[j]


@_compile
def gru_backward_step(s, g_sequence, dh, gates, hidden, kept, d_pre, d_recurrent, one, keep, zero_output, skip,
                      r0, r1):
    """Rows ``r0:r1`` of BPTT step ``s`` of ``kernels.gru`` before the product with the recurrent kernel, as ``ops.recurrent.gru``'s
    VJP computes it: ``dh += g_sequence[:, s]``; the update, candidate and reset cotangents into ``d_pre[s]`` and
    ``d_recurrent[s]`` (whose candidate block is times the reset gate). A masked row (``keep`` not empty and 0)
    passes ``dh`` through ``skip`` (``zero_output``: its sequence cotangent is not added) with zero cotangents."""
    u = dh.shape[1]
    masks = keep.shape[0] > 0
    for r in range(r0, r1):
        h = dh[r]
        masked = masks and keep[s, r] == 0
        if g_sequence.shape[1] > 0 and not (masked and zero_output):
            g = g_sequence[r, s]
            for j in range(u):
                h[j] = h[j] + g[j]
        dp = d_pre[s, r]
        dr = d_recurrent[s, r]
        if masked:
            kept_h = skip[r]
            for j in range(u):
                kept_h[j] = h[j]
            for j in range(3 * u):
                dp[j] = 0
                dr[j] = 0
            continue
        update = gates[s, r, :u]
        reset = gates[s, r, u:2 * u]
        candidate = gates[s, r, 2 * u:]
        previous = hidden[s, r]
        k = kept[s, r]
        d_update = dp[:u]
        d_reset = dp[u:2 * u]
        d_candidate = dp[2 * u:]
        for j in range(u):
            d_update[j] = h[j] * ((previous[j] - candidate[j]) * (update[j] * (one - update[j])))
        for j in range(u):
            d_candidate[j] = h[j] * ((one - update[j]) * (one - candidate[j] * candidate[j]))
        for j in range(u):
            d_reset[j] = d_candidate[j] * (k[j] * (reset[j] * (one - reset[j])))
        for j in range(2 * u):
            dr[j] = dp[j]
        d_product = dr[2 * u:]
        for j in range(u):
            d_product[j] = d_candidate[j] * reset[j]


@_compile
def gru_backward_carry(dh, gates, s, product, keep, skip, zero, r0, r1):
    """Rows ``r0:r1``, after the product: ``dh = dh * update + product``; with a step mask (``keep`` not empty) plus the carried
    cotangent, as ``ops.recurrent.gru``: a masked row's ``dh`` is what ``skip`` kept, an unmasked one's adds
    ``dh * 0``."""
    u = dh.shape[1]
    masks = keep.shape[0] > 0
    for r in range(r0, r1):
        h = dh[r]
        update = gates[s, r, :u]
        p = product[r]
        if masks and keep[s, r] == 0:
            kept_h = skip[r]
            for j in range(u):
                h[j] = kept_h[j]
        elif masks:
            for j in range(u):
                h[j] = (h[j] * update[j] + p[j]) + h[j] * zero
        else:
            for j in range(u):
                h[j] = h[j] * update[j] + p[j]


@_compile
def tanh_columns(loop, loop_context, loop_auxdata, a, scratch):
    """``a = tanh(a)`` in place for ``a`` of two axes whose rows are of unit stride (a block of columns of a wider
    array): ``fused_tanh.tanh_rows`` where ``loop`` is 0 (float32), else ``np.tanh``'s own loop row by row
    (``fused_calls.ufunc_rows``, ``scratch`` as there)."""
    if loop == 0:
        tanh_rows(a, a)
        return
    for r in range(a.shape[0]):
        ufunc_rows(loop, loop_context, loop_auxdata, a[r], a[r], scratch)


@_compile
def gru_forward_steps(gemm, loop, loop_context, loop_auxdata, times, time_major, projection, kernel, hidden, gates,
                      kept, recurrent, bias, input_bias, keep, half, one, zero, r0, r1):
    """The whole forward loop of rows ``r0:r1`` in one call without the GIL, each step as ``kernels.gru``'s
    steps run it: the product ``recurrent = hidden[s] @ kernel`` by ``gemm``, ``gru_gates``, the update and reset
    gates' tanh by ``tanh_columns`` (``loop`` as there), ``gru_candidate``, the candidate's tanh and
    ``gru_hidden``. ``times[s]`` is step ``s``'s input timestep."""
    scratch = np.empty(5, dtype=np.int64)
    u = hidden.shape[2]
    for s in range(times.shape[0]):
        t = times[s]
        gemm_rows(gemm, hidden[s, r0:r1], kernel, recurrent[r0:r1], one, zero)
        gru_gates(gates, s, recurrent, bias, projection, t, time_major, half, input_bias, r0, r1)
        tanh_columns(loop, loop_context, loop_auxdata, gates[s, r0:r1, :2 * u], scratch)
        gru_candidate(gates, kept, s, recurrent, projection, t, time_major, half, input_bias, r0, r1)
        tanh_columns(loop, loop_context, loop_auxdata, gates[s, r0:r1, 2 * u:], scratch)
        gru_hidden(gates, hidden, s, keep, r0, r1)


@_compile
def gru_backward_steps(gemm, steps, g_sequence, dh, gates, hidden, kept, d_pre, d_recurrent, kernel_t, product, one,
                       zero, keep, zero_output, skip, r0, r1):
    """The whole BPTT loop of rows ``r0:r1`` in one call without the GIL, from step ``steps - 1`` down:
    ``gru_backward_step``, the product ``product = d_recurrent[s] @ kernel_t`` by ``gemm``, then
    ``gru_backward_carry``."""
    for s in range(steps - 1, -1, -1):
        gru_backward_step(s, g_sequence, dh, gates, hidden, kept, d_pre, d_recurrent, one, keep, zero_output, skip,
                          r0, r1)
        gemm_rows(gemm, d_recurrent[s, r0:r1], kernel_t, product[r0:r1], one, zero)
        gru_backward_carry(dh, gates, s, product, keep, skip, zero, r0, r1)
