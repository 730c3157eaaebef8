"""The LSTM recurrence with Keras's default activations (tanh, sigmoid) and no dropout: forward and BPTT.

The same math as the general loop of ``kgraph.ops.recurrent.lstm`` (gate order
i, f, c, o; the sigmoid as ``0.5 * tanh(x / 2) + 0.5``), arranged so that each
step runs few, contiguous NumPy calls into buffers allocated once per call:

- the four gates activate together: scaling by ``(0.5, 0.5, 1, 0.5)`` per gate
  block, one ``tanh`` over the whole row, then ``* scale + offset`` turns the
  blocks i, f, o into sigmoids and leaves c a tanh, element for element what
  the separate calls compute (the factors are powers of two and ones);
- the gate derivatives are ``(a - y) * y + b`` with ``a = (1, 1, 0, 1)`` and
  ``b = (0, 0, 1, 0)``: ``y (1 - y)`` for a sigmoid, ``1 - y^2`` for tanh;
- the projection's cotangent is written batch-major in input order, the layout
  of the projection itself, so the input projection's VJP takes it without a
  copy, and the recurrent kernel's gradient is one product over all steps;
- a step mask (Keras's masked timesteps, from ``Masking`` or ``mask_zero``)
  carries a masked row's states over its step, with the general loop's
  operations in the general loop's order;
- with the compiled kernels (``kernels.compiled``), float32's tanh is
  ``kernels.fused_tanh``'s where that is timed faster than NumPy's (about
  twice as fast on an AVX2 machine whose NumPy tanh is slow), correctly
  rounded where NumPy's is within one unit in the last place: there the
  compiled steps' values may differ from the NumPy steps' by such units;
  float64's tanh is NumPy's in both;
- the rows of the batch recur independently: a large batch may run as two
  halves in two threads, with BLAS on one thread each (``kernels.threads``);
  whether that beats one thread driving BLAS's own threads depends on the
  machine and its load, so the forward and the backward pass each time both
  ways and keep the faster.
"""
import time

import numpy as np

from kgraph.backend.cotangents import all_zero
from kgraph.ops.kernels import compiled, native, threads
from kgraph.ops.kernels.projection import bias_gradient, with_bias

__all__ = ["applies", "run"]

# Each thread's half of the batch has at least this many rows, and a call this many elements of gates.
MIN_ROWS = 8
MIN_WORK = 1 << 16
# Per (batch, timesteps, 4 * units): whether two threads have been faster than one with BLAS's threads.
_TIMINGS = {}


def applies(activation, recurrent_activation, recurrent_masks, step_mask=None):
    """Whether ``run`` computes this call (Keras's default activations, no recurrent dropout)."""
    del step_mask  # masked steps are computed here too
    return activation == "tanh" and recurrent_activation == "sigmoid" and recurrent_masks is None


def _gate_constants(units, dtype):
    """Per-column ``scale`` and ``offset`` of the activation and ``a``, ``b`` of the derivative."""
    def row(i, f, c, o):
        return np.repeat(np.array([i, f, c, o], dtype=dtype), units)
    return row(0.5, 0.5, 1.0, 0.5), row(0.5, 0.5, 0.0, 0.5), row(1, 1, 0, 1), row(0, 0, 1, 0)


def _initial(buffer, value, argument):
    if value is None:
        buffer[...] = 0
        return
    if np.shape(value) != buffer.shape:
        raise ValueError(f"lstm expects `{argument}` of shape (batch, units) = {buffer.shape}. "
                         f"Received: shape={np.shape(value)}")
    buffer[...] = value


def _forward(projection, kernel, hidden, cells, gates, act_cells, times, keep):
    """Run the steps; ``hidden[s + 1]`` and ``cells[s + 1]`` receive the states after step ``s``; ``keep`` as in
    ``_backward``."""
    u = kernel.shape[0]
    scale, offset, _, _ = _gate_constants(u, projection.dtype)
    product = np.empty((projection.shape[0], u), dtype=projection.dtype)
    for s, t in enumerate(times):
        z = gates[s]
        np.matmul(hidden[s], kernel, out=z)
        z += projection[:, t]
        z *= scale
        np.tanh(z, out=z)
        z *= scale
        z += offset
        c = cells[s + 1]
        np.multiply(z[:, u:2 * u], cells[s], out=c)
        np.multiply(z[:, :u], z[:, 2 * u:3 * u], out=product)
        c += product
        np.tanh(c, out=act_cells[s])
        np.multiply(z[:, 3 * u:], act_cells[s], out=hidden[s + 1])
        if keep is not None:  # masked rows keep their states (as the general loop's _carry)
            np.copyto(c, cells[s], where=keep[s] == 0)
            np.copyto(hidden[s + 1], hidden[s], where=keep[s] == 0)


def _backward(g_sequence, dh, dc, kernel, cells, gates, act_cells, d_projection, times, keep, zero_output,
              initial_dh=True):
    """BPTT from the last step: fills ``d_projection`` (input order); ``dh``, ``dc`` end as the initial
    states' cotangents (``dh`` only with ``initial_dh``: without, the first step's product is skipped);
    ``g_sequence`` is None where the sequence's cotangent is zero; ``keep`` (processing order, ``(T, rows, 1)``,
    0 at masked steps) or None."""
    u = kernel.shape[0]
    _, _, a, b = _gate_constants(u, gates.dtype)
    to_c = np.empty_like(dh)
    slope = np.empty(gates.shape[1:], dtype=gates.dtype)
    kernel_t = np.ascontiguousarray(kernel.T)  # a transposed view's products ran 1.6x slower each step
    for s in range(len(times) - 1, -1, -1):
        z, tc = gates[s], act_cells[s]
        dz = d_projection[:, times[s]]
        if g_sequence is not None:
            dh += g_sequence[:, s] * keep[s] if keep is not None and zero_output else g_sequence[:, s]
        if keep is not None:  # a masked step passes the cotangents through (as the general loop)
            skip_h, skip_c = dh * (1 - keep[s]), dc * (1 - keep[s])
            dh *= keep[s]
            dc *= keep[s]
        # dc += dh * o * (1 - tanh(c)^2)
        np.multiply(tc, tc, out=to_c)
        np.subtract(1, to_c, out=to_c)
        to_c *= z[:, 3 * u:]
        to_c *= dh
        dc += to_c
        np.multiply(dc, z[:, 2 * u:3 * u], out=dz[:, :u])
        np.multiply(dc, cells[s], out=dz[:, u:2 * u])
        np.multiply(dc, z[:, :u], out=dz[:, 2 * u:3 * u])
        np.multiply(dh, tc, out=dz[:, 3 * u:])
        np.subtract(a, z, out=slope)
        slope *= z
        slope += b
        dz *= slope
        dc *= z[:, u:2 * u]
        if s or initial_dh:  # the first step's product only makes the initial h's cotangent
            np.matmul(dz, kernel_t, out=dh)
            if keep is not None:
                dh += skip_h
        if keep is not None:
            dc += skip_c


def _forward_fused(fused, base, time_major, kernel, hidden, cells, gates, act_cells, times, keep, rows, bias,
                   gemm=None):
    """``_forward`` for rows ``rows`` of the whole arrays, the elementwise runs fused by ``kernels.fused``;
    ``keep`` as ``_backward``'s without its last axis, or None; ``bias`` added to the projection (or empty);
    ``gemm`` NumPy's BLAS product (``kernels.native``) for ``_forward_gemm``, or None."""
    u = kernel.shape[0]
    scale, offset, _, _ = _gate_constants(u, gates.dtype)
    r0, r1 = rows.start, rows.stop
    if gemm is not None:
        _forward_gemm(fused, gemm, base, time_major, kernel, hidden, cells, gates, act_cells, times, keep, rows,
                      bias, scale, offset)
        return
    for s, t in enumerate(times):
        z = gates[s, rows]
        np.matmul(hidden[s, rows], kernel, out=z)
        fused.lstm_gates(gates, s, base, t, time_major, scale, r0, r1, bias)
        _tanh(fused, z, z)
        fused.lstm_cells(gates, s, cells, scale, offset, r0, r1)
        _tanh(fused, cells[s + 1, rows], act_cells[s, rows])
        np.multiply(z[:, 3 * u:], act_cells[s, rows], out=hidden[s + 1, rows])
        if keep is not None:
            fused.lstm_carry(cells, hidden, s, keep, r0, r1)


def _own_tanh(fused, dtype):
    """Whether the compiled steps take ``fused.tanh_rows`` (float32, where timed faster than ``np.tanh``)."""
    return dtype == np.float32 and fused.tanh_preferred()


def _tanh(fused, a, out):
    """``out = tanh(a)`` in a compiled step: ``fused.tanh_rows`` where ``_own_tanh``, else NumPy's."""
    if _own_tanh(fused, a.dtype):
        fused.tanh_rows(a, out)
    else:
        np.tanh(a, out=out)


def _forward_gemm(fused, gemm, base, time_major, kernel, hidden, cells, gates, act_cells, times, keep, rows, bias,
                  scale, offset):
    """``_forward_fused``'s steps with the product inside a compiled call: all of them in one call where the tanh is
    compiled too (``_own_tanh``) or ``np.tanh``'s own loop is at hand (``kernels.native``), else four calls a step
    (``fused.lstm_step_head`` also ends the step before), between which only the two tanh of NumPy take the GIL."""
    r0, r1 = rows.start, rows.stop
    one, zero = gates.dtype.type(1), gates.dtype.type(0)
    masks = np.empty((0, 0), dtype=gates.dtype) if keep is None else keep
    tanh = (0, 0, 0) if _own_tanh(fused, gates.dtype) else native.tanh_loop(gates.dtype, fused)  # 0: tanh_rows
    if tanh is not None:
        fused.lstm_forward_steps(gemm, *tanh, np.asarray(times, dtype=np.int64), time_major, base, kernel, hidden,
                                 cells, gates, act_cells, scale, offset, r0, r1, bias, masks, one, zero)
        return
    for s, t in enumerate(times):
        fused.lstm_step_head(gemm, s, t, time_major, base, kernel, hidden, cells, gates, act_cells, scale, r0, r1,
                             bias, masks, one, zero)
        z = gates[s, rows]
        np.tanh(z, out=z)
        fused.lstm_cells(gates, s, cells, scale, offset, r0, r1)
        np.tanh(cells[s + 1, rows], out=act_cells[s, rows])
    fused.lstm_step_head(gemm, len(times), 0, time_major, base, kernel, hidden, cells, gates, act_cells, scale, r0,
                         r1, bias, masks, one, zero)


def _backward_fused(fused, g_sequence, dh, dc, kernel, cells, gates, act_cells, d_base, time_major, times, keep,
                    zero_output, rows, initial_dh, gemm=None):
    """``_backward`` for rows ``rows`` of the whole arrays (``g_sequence`` C-contiguous, of no steps where
    ``_backward`` has None); ``d_base`` is ``d_projection``'s C-contiguous form, as ``base`` in the forward;
    ``keep`` as in ``_forward_fused``; ``gemm`` as there."""
    one = gates.dtype.type(1)
    kernel_t = np.ascontiguousarray(kernel.T)  # a transposed view's products ran 1.6x slower each step
    r0, r1 = rows.start, rows.stop
    masks = np.empty((0, 0), dtype=gates.dtype) if keep is None else keep
    skip = np.empty(dh.shape if keep is not None else (0, 0), dtype=dh.dtype)
    if gemm is not None:  # the whole loop in one compiled call, the products by NumPy's BLAS
        fused.lstm_backward_steps(gemm, np.asarray(times, dtype=np.int64), time_major, g_sequence, dh, dc, gates,
                                  cells, act_cells, d_base, kernel_t, one, gates.dtype.type(0), r0, r1, masks,
                                  zero_output, skip, initial_dh)
        return
    for s in range(len(times) - 1, -1, -1):
        t = times[s]
        fused.lstm_backward_step(s, t, time_major, g_sequence, dh, dc, gates, cells, act_cells, d_base, one, r0, r1,
                                 masks, zero_output, skip)
        if not (s or initial_dh):
            break  # the first step's product only makes the initial h's cotangent
        dz = d_base[t, rows] if time_major else d_base[rows, t]
        np.matmul(dz, kernel_t, out=dh[rows])
        if keep is not None:
            fused.lstm_restore(dh, skip, masks, s, r0, r1)


def _contiguous_base(projection):
    """``(base, time_major)``: the projection as a C-contiguous array indexed [t, row] or [row, t], or None."""
    if projection.flags.c_contiguous:
        return projection, False
    swapped = projection.transpose(1, 0, 2)
    return (swapped, True) if swapped.flags.c_contiguous else (None, False)


def _halves(batch, work_per_row):
    """Two row ranges for two threads (each row's recurrence is independent of the others), or None when
    the batch is too small for a hand-off to pay."""
    if batch < 2 * MIN_ROWS or batch * work_per_row < MIN_WORK or not threads.can_split():
        return None
    half = batch // 2
    return slice(0, half), slice(half, batch)


def _run(job, halves):
    if halves is None:
        job(slice(None))
    else:
        threads.in_halves(job, *halves)


def run(projection, recurrent_kernel, initial_h=None, initial_c=None, go_backwards=False, step_mask=None,
        zero_output_for_mask=False, bias=None):
    """``((sequence, last_h, last_c), vjp)`` as ``kgraph.ops.recurrent.lstm`` returns them (see ``applies``);
    ``bias``, when given, is added to every step's projection."""
    batch, timesteps, width = projection.shape
    u = width // 4
    dtype = projection.dtype
    times = list(range(timesteps - 1, -1, -1)) if go_backwards else list(range(timesteps))
    # Time-major states in processing order (each step's rows contiguous); the sequence output is the
    # batch-major view of hidden[1:].
    hidden = np.empty((timesteps + 1, batch, u), dtype=dtype)
    cells = np.empty((timesteps + 1, batch, u), dtype=dtype)
    _initial(hidden[0], initial_h, "initial_h")
    _initial(cells[0], initial_c, "initial_c")
    gates = np.empty((timesteps, batch, width), dtype=dtype)
    act_cells = np.empty((timesteps, batch, u), dtype=dtype)
    # (T, batch): 1 where a processing step is unmasked, 0 where masked; None without a mask.
    keep = None if step_mask is None else np.ascontiguousarray(np.asarray(step_mask)[:, times].T.astype(dtype))
    split = _halves(batch, width * timesteps)
    timings = None if split is None else threads.timings(_TIMINGS, (batch, timesteps, width), 2)
    halves = split if timings is not None and timings[0].choose() else None
    fused = compiled.kernels(projection.size) if dtype.kind == "f" and dtype.itemsize in (4, 8) else None
    base, time_major = _contiguous_base(projection) if fused is not None else (None, False)
    if fused is not None:
        _own_tanh(fused, dtype)  # its one timing, if not done yet: here, before a split runs the steps in threads
    step_bias = np.empty(0, dtype=dtype)
    if bias is not None:
        if base is not None and np.asarray(bias).dtype == dtype:
            step_bias = np.ascontiguousarray(bias)  # added in the gates' loop: no pass over the projection
        else:
            projection = with_bias(projection, bias)
            base, time_major = _contiguous_base(projection) if fused is not None else (None, False)
    gemm = native.kernel_gemm(fused if base is not None else None, recurrent_kernel, batch, dtype)
    start = time.perf_counter()

    def forward(rows):
        if base is not None:
            _forward_fused(fused, base, time_major, recurrent_kernel, hidden, cells, gates, act_cells, times, keep,
                           slice(*rows.indices(batch)[:2]), step_bias, gemm)
        else:
            _forward(projection[rows], recurrent_kernel, hidden[:, rows], cells[:, rows], gates[:, rows],
                     act_cells[:, rows], times, None if keep is None else keep[:, rows, None])
    _run(forward, halves)
    if timings is not None:
        timings[0].record(halves is not None, time.perf_counter() - start)
    state = {"projection": projection, "kernel": recurrent_kernel, "hidden": hidden, "cells": cells, "gates": gates,
             "act_cells": act_cells, "times": times, "keep": keep, "zero_output": bool(zero_output_for_mask),
             "fused": fused if base is not None else None, "time_major": time_major, "split": split,
             "timings": timings, "go_backwards": go_backwards, "initial": (initial_h, initial_c),
             "bias": bias is not None, "gemm": gemm}
    sequence = hidden[1:] * keep[..., None] if keep is not None and zero_output_for_mask else hidden[1:]
    return (sequence.transpose(1, 0, 2), hidden[-1].copy(), cells[-1].copy()), lambda g: _vjp(state, g)


def _backward_job(st, g_sequence, dh, dc, d_projection):
    """The BPTT job over rows (``_run`` calls it with the whole batch or one half)."""
    batch, u = dh.shape
    keep, fused = st["keep"], st["fused"]
    initial_dh = st["initial"][0] is not None
    d_base = None if fused is None else _contiguous_base(d_projection)
    if d_base is not None and d_base[0] is not None and d_base[1] == st["time_major"]:
        steps = g_sequence.shape[1] if g_sequence is not None else 0
        sequence = np.ascontiguousarray(g_sequence if steps else np.empty((batch, 0, u)), dtype=dh.dtype)

        def backward(rows):
            _backward_fused(fused, sequence, dh, dc, st["kernel"], st["cells"], st["gates"], st["act_cells"],
                            d_base[0], st["time_major"], st["times"], keep, st["zero_output"],
                            slice(*rows.indices(batch)[:2]), initial_dh, st["gemm"])
        return backward

    def backward(rows):
        sequence_rows = None if g_sequence is None else g_sequence[rows]
        _backward(sequence_rows, dh[rows], dc[rows], st["kernel"], st["cells"][:, rows], st["gates"][:, rows],
                  st["act_cells"][:, rows], d_projection[rows], st["times"],
                  None if keep is None else keep[:, rows, None], st["zero_output"], initial_dh)
    return backward


def _vjp(st, cotangents):
    g_sequence, g_h, g_c = cotangents
    projection, hidden = st["projection"], st["hidden"]
    dtype, width = projection.dtype, projection.shape[2]
    u = width // 4
    if all_zero(g_sequence):  # only the last states are read: no zeros to add at every step
        g_sequence = None
    dh = np.array(g_h, dtype=dtype)
    dc = np.array(g_c, dtype=dtype)
    # In the projection's own memory order, so that its producer's VJP reads it as it wrote it.
    d_projection = np.empty_like(projection)
    timings = st["timings"]
    back = st["split"] if timings is not None and timings[1].choose() else None
    start = time.perf_counter()
    _run(_backward_job(st, g_sequence, dh, dc, d_projection), back)
    if timings is not None:
        timings[1].record(back is not None, time.perf_counter() - start)
    # Each step's incoming h beside its gate cotangents, rows in d_projection's memory order (time-major
    # when the projection is, as the recurrent layers make it).
    previous = hidden[-2::-1] if st["go_backwards"] else hidden[:-1]
    if _time_major(projection):
        rows = d_projection.transpose(1, 0, 2)
    else:
        previous, rows = previous.transpose(1, 0, 2), d_projection
    previous = np.ascontiguousarray(previous).reshape(-1, u)
    d_kernel = previous.T @ np.ascontiguousarray(rows).reshape(-1, width)
    initial_h, initial_c = st["initial"]
    return (d_projection, d_kernel, None if initial_h is None else dh, None if initial_c is None else dc,
            bias_gradient(d_projection) if st["bias"] else None)


def _time_major(projection):
    """Whether the projection's timesteps are its outer memory axis (each step's rows contiguous)."""
    return projection.shape[1] > 1 and projection.strides[1] > projection.strides[0]
