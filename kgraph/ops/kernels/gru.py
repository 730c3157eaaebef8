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
Each step's product runs on the whole batch, as in the loop.
"""
import numpy as np

from kgraph.backend.cotangents import all_zero
from kgraph.ops.kernels import compiled

__all__ = ["applies", "run"]


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


def run(fused, projection, recurrent_kernel, recurrent_bias, hidden, gates, kept, keep, steps, input_bias=None):
    """The forward steps into ``hidden`` (``(T + 1, batch, units)``, ``hidden[0]`` the initial state), ``gates``
    and ``kept`` (the loop's arrays), with the loop's ``keep`` ((T, batch, 1) or None); ``input_bias`` (of the
    projection's dtype) is added to the projection as each step reads it."""
    batch, u = hidden.shape[1], hidden.shape[2]
    dtype = projection.dtype
    base, time_major = _contiguous(projection)
    bias = np.empty(0, dtype) if recurrent_bias is None else np.ascontiguousarray(recurrent_bias, dtype=dtype)
    step_bias = np.empty(0, dtype) if input_bias is None else np.ascontiguousarray(input_bias)
    masks = np.empty((0, 0), dtype) if keep is None else np.ascontiguousarray(keep[..., 0])
    half = dtype.type(0.5)
    recurrent = np.empty((batch, 3 * u), dtype=dtype)
    # float32's tanh compiled and correctly rounded where timed faster (kernels.fused_tanh), else NumPy's
    own = dtype == np.float32 and fused.tanh_preferred()
    tanh = fused.tanh_rows if own else lambda a, out: np.tanh(a, out=out)
    for s, t in steps:
        np.matmul(hidden[s], recurrent_kernel, out=recurrent)
        fused.gru_gates(gates, s, recurrent, bias, base, t, time_major, half, step_bias)
        z = gates[s]
        tanh(z[:, :2 * u], z[:, :2 * u])
        fused.gru_candidate(gates, kept, s, recurrent, base, t, time_major, half, step_bias)
        tanh(z[:, 2 * u:], z[:, 2 * u:])
        fused.gru_hidden(gates, hidden, s, masks)


def vjp(fused, cotangents, recurrent_kernel, gates, kept, hidden, keep, steps, zero_output):
    """``(d_pre, d_recurrent, dh)`` of the loop's VJP: the projection's cotangent in processing order, the
    recurrent product's (for the kernel's and bias's gradients) and the initial state's."""
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
    for s, _ in reversed(steps):
        fused.gru_backward_step(s, sequence, dh, gates, hidden, kept, d_pre, d_recurrent, one, masks,
                                bool(zero_output), skip)
        np.matmul(d_recurrent[s], kernel_t, out=product)
        fused.gru_backward_carry(dh, gates, s, product, masks, skip, zero)
    return d_pre, d_recurrent, dh
