"""Fused elementwise loops compiled by numba (imported only through ``kernels.compiled``, which checks for numba).

Each loop does, element by element, the operations of the NumPy code it
replaces in the same order and precision, so the results are equal (one
exception: the recurrent kernels' float32 ``tanh``, ``fused_tanh``, where a
machine's timing prefers it, is correctly rounded where NumPy's is within one
unit in the last place): constants
arrive typed as the arrays (numba would widen a float32 expression with a
Python number to float64), divisions are not checked for zero (NumPy's
``error_model``: a zero gives inf or nan as in NumPy, and the loops vectorize),
and no ``fastmath`` (which would reassociate and fuse multiply-adds). They
release the GIL, so ``kernels.threads`` can run two halves of a job at once.
"""
import numpy as np

from kgraph.ops.kernels.fused_calls import gemm_rows, tanh_into, ufunc_rows
from kgraph.ops.kernels.fused_conv import conv3x3_max_pool, conv3x3_max_pool_grads
from kgraph.ops.kernels.fused_gru import (
    gru_backward_carry,
    gru_backward_step,
    gru_backward_steps,
    gru_candidate,
    gru_forward_steps,
    gru_gates,
    gru_hidden,
)
from kgraph.ops.kernels.fused_pool import pool_argmax, pool_route
from kgraph.ops.kernels.fused_tanh import preferred as tanh_preferred
from kgraph.ops.kernels.fused_tanh import tanh_rows
from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["adam", "bias_relu", "conv3x3_max_pool", "conv3x3_max_pool_grads", "gemm_rows", "gru_backward_carry",
           "gru_backward_step", "gru_backward_steps", "gru_candidate", "gru_forward_steps", "gru_gates", "gru_hidden",
           "lstm_backward_step", "lstm_backward_steps", "lstm_carry", "lstm_cells", "lstm_forward_steps", "lstm_gates",
           "lstm_restore", "lstm_step_head", "picked_gradient", "picked_ratios", "pool_argmax", "pool_route", "relu",
           "relu_gradient", "relu_gradient_rows", "rmsprop", "sgd",
           "tanh_into", "tanh_preferred", "tanh_rows", "ufunc_rows"]


_compile = compile_kernel


@_compile
def adam(value, gradient, m, v, rate_m, rate_v, alpha, epsilon):
    """Adam on flat arrays: ``m += (g - m) * rate_m``; ``v += (g^2 - v) * rate_v``;
    ``value -= m / (sqrt(v) + epsilon) * alpha`` (``optimizers.Adam.update_step``)."""
    for i in range(value.shape[0]):
        g = gradient[i]
        mi = m[i] + (g - m[i]) * rate_m
        m[i] = mi
        vi = v[i] + (g * g - v[i]) * rate_v
        v[i] = vi
        value[i] = value[i] - mi / (np.sqrt(vi) + epsilon) * alpha


@_compile
def sgd(value, gradient, m, learning_rate, momentum, nesterov):
    """SGD on flat arrays (``optimizers.SGD.update_step``): ``step = g * lr``; without momentum (``m`` empty)
    ``value -= step``; else ``m = m * momentum - step`` and ``value += m``, or with ``nesterov``
    ``value = (value - step) + m * momentum``."""
    plain = m.shape[0] == 0
    for i in range(value.shape[0]):
        step = gradient[i] * learning_rate
        if plain:
            value[i] = value[i] - step
            continue
        mi = m[i] * momentum - step
        m[i] = mi
        if nesterov:
            value[i] = (value[i] - step) + mi * momentum
        else:
            value[i] = value[i] + mi


@_compile
def rmsprop(value, gradient, velocity, average, velocity_momentum, rho, rate, epsilon, learning_rate, momentum):
    """RMSprop on flat arrays (``optimizers.RMSprop.update_step``; ``rate = 1 - rho``): ``v = v * rho + g^2 * rate``;
    centered (``average`` not empty): ``a = a * rho + g * rate`` and ``d = (v - a^2) + epsilon``, else
    ``d = v + epsilon``; ``s = g / sqrt(d) * lr``; with momentum (``velocity_momentum`` not empty)
    ``mo = mo * momentum + s`` and ``value -= mo``, else ``value -= s``."""
    centered = average.shape[0] > 0
    with_momentum = velocity_momentum.shape[0] > 0
    for i in range(value.shape[0]):
        g = gradient[i]
        v = velocity[i] * rho + g * g * rate
        velocity[i] = v
        if centered:
            a = average[i] * rho + g * rate
            average[i] = a
            d = (v - a * a) + epsilon
        else:
            d = v + epsilon
        step = g / np.sqrt(d) * learning_rate
        if with_momentum:
            mo = velocity_momentum[i] * momentum + step
            velocity_momentum[i] = mo
            value[i] = value[i] - mo
        else:
            value[i] = value[i] - step


@_compile
def relu(x, out, zero):
    """``out = maximum(x, 0)`` on flat arrays, as NumPy's: a NaN stays itself, -0.0 gives 0.0."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v if v > zero or v != v else zero


@_compile
def bias_relu(z, bias, out, zero):
    """``z += bias`` (rows of ``z``, one bias per column), then ``out = maximum(z, 0)``, in one pass over 2-D
    arrays: NumPy's in-place add, then ``relu``."""
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            v = z[i, j] + bias[j]
            z[i, j] = v
            out[i, j] = v if v > zero or v != v else zero


@_compile
def relu_gradient_rows(g, x, out, column_sums, zero, one):
    """``out = g * (x > 0)`` on 2-D arrays (``relu_gradient``), and ``column_sums`` the sum of ``out``'s rows, added
    row after row from the first as NumPy reduces the leading axis of a C-ordered array of two or more columns
    (a Dense layer's bias gradient; whoever calls this checks that order once against NumPy's)."""
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = g[i, j] * (one if x[i, j] > zero else zero)
            out[i, j] = v
            column_sums[j] = v if i == 0 else column_sums[j] + v


@_compile
def picked_ratios(y_pred, labels, total, eps, top, ratio, clipped):
    """Each row's entry at its label over the row's sum (``total``), and that ratio clipped to ``[eps, top]`` as
    ``minimum(maximum(ratio, eps), top)`` (a NaN stays NaN); False, with nothing written past it, at a label
    outside the row."""
    classes = y_pred.shape[1]
    for i in range(y_pred.shape[0]):
        label = labels[i]
        if label < 0 or label >= classes:
            return False
        r = y_pred[i, label] / total[i]
        ratio[i] = r
        c = r if r >= eps or r != r else eps
        clipped[i] = c if c <= top or c != c else top
    return True


@_compile
def picked_gradient(g, clipped, ratio, total, labels, eps, top, zero, out):
    """The gradient of ``-log(clipped)`` (``picked_ratios``) for the rows of ``out``: ``d = -g / clipped``, 0
    outside ``[eps, top]``; each entry of a row ``-d * ratio / total``, and at its label that plus ``d / total``
    (``losses.functions._picked_rows``'s VJP, operation for operation)."""
    for i in range(out.shape[0]):
        r = ratio[i]
        d = -g[i] / clipped[i]
        if r < eps or r > top:
            d = zero
        d_total = -d * r / total[i]
        for j in range(out.shape[1]):
            out[i, j] = d_total
        out[i, labels[i]] = d_total + d / total[i]


@_compile
def relu_gradient(g, x, out, zero, one):
    """``out = g * (x > 0)`` on flat arrays, as NumPy's (the mask as 1.0 or 0.0: ``-g * 0`` is -0.0, ``inf * 0``
    NaN)."""
    for i in range(x.shape[0]):
        out[i] = g[i] * (one if x[i] > zero else zero)


@_compile
def lstm_gates(gates, s, projection, t, time_major, scale, r0, r1, bias):
    """Rows ``r0:r1`` of step ``s``: ``z = (z + projection_t) * scale``, the argument of the gates' one tanh;
    with a ``bias`` (not empty) ``z = (z + (projection_t + bias)) * scale``, as if the projection held it.

    ``projection`` is C-contiguous, indexed ``[t, row]`` when ``time_major`` else ``[row, t]``."""
    with_bias = bias.shape[0] > 0
    for r in range(r0, r1):
        z = gates[s, r]
        p = projection[t, r] if time_major else projection[r, t]
        if with_bias:
            for j in range(z.shape[0]):
                z[j] = (z[j] + (p[j] + bias[j])) * scale[j]
        else:
            for j in range(z.shape[0]):
                z[j] = (z[j] + p[j]) * scale[j]


@_compile
def lstm_cells(gates, s, cells, scale, offset, r0, r1):
    """Rows ``r0:r1`` of step ``s`` after the tanh: the gates ``z = z * scale + offset`` (i, f, o sigmoids, c a
    tanh), then the new cell state ``cells[s + 1] = f * cells[s] + i * c``."""
    u = cells.shape[2]
    for r in range(r0, r1):
        z = gates[s, r]
        for j in range(z.shape[0]):
            z[j] = z[j] * scale[j] + offset[j]
        previous = cells[s, r]
        c = cells[s + 1, r]
        for j in range(u):
            c[j] = z[u + j] * previous[j] + z[j] * z[2 * u + j]


@_compile
def lstm_carry(cells, hidden, s, keep, r0, r1):
    """Rows ``r0:r1`` masked at step ``s`` (``keep[s, row] == 0``) keep the states they had before it."""
    for r in range(r0, r1):
        if keep[s, r] == 0:
            cells[s + 1, r] = cells[s, r]
            hidden[s + 1, r] = hidden[s, r]


@_compile
def lstm_backward_step(s, t, time_major, g_sequence, dh, dc, gates, cells, act_cells, d_projection, one, r0, r1,
                       keep, zero_output, skip):
    """Rows ``r0:r1`` of BPTT step ``s`` (input timestep ``t``), before the product with the recurrent kernel.

    ``dh += g_sequence[:, s]`` (when it has steps); ``dc += dh * o * (1 - tanh(c)^2)``; the gates' cotangents
    ``(dc * c~, dc * c_prev, dc * i, dh * tanh(c))`` times their activations' slopes into ``d_projection``
    (indexed as ``projection`` in ``lstm_gates``); ``dc *= f``. With a step mask (``keep`` not empty), a masked
    row's cotangents pass through: its ``d_projection`` is zero, ``dc`` stays, and ``dh`` is kept in ``skip``
    for ``lstm_restore`` (``zero_output``: its sequence cotangent is not added).
    """
    u = dh.shape[1]
    masks = keep.shape[0] > 0
    for r in range(r0, r1):
        z = gates[s, r]
        tc = act_cells[s, r]
        previous = cells[s, r]
        dz = d_projection[t, r] if time_major else d_projection[r, t]
        h = dh[r]
        c = dc[r]
        masked = masks and keep[s, r] == 0
        if g_sequence.shape[1] > 0 and not (masked and zero_output):
            g = g_sequence[r, s]
            for j in range(u):
                h[j] = h[j] + g[j]
        if masked:
            kept = skip[r]
            for j in range(u):
                kept[j] = h[j]
            for j in range(4 * u):
                dz[j] = 0
            continue
        for j in range(u):
            i = z[j]
            f = z[u + j]
            cc = z[2 * u + j]
            o = z[3 * u + j]
            cj = c[j] + (one - tc[j] * tc[j]) * o * h[j]
            dz[j] = cj * cc * ((one - i) * i)
            dz[u + j] = cj * previous[j] * ((one - f) * f)
            dz[2 * u + j] = cj * i * (one - cc * cc)
            dz[3 * u + j] = h[j] * tc[j] * ((one - o) * o)
            c[j] = cj * f


@_compile
def lstm_restore(dh, skip, keep, s, r0, r1):
    """After the product: rows masked at step ``s`` take back the ``dh`` they carried through it."""
    for r in range(r0, r1):
        if keep[s, r] == 0:
            dh[r] = skip[r]


@_compile
def lstm_step_head(gemm, s, t, time_major, projection, kernel, hidden, cells, gates, act_cells, scale, r0, r1, bias,
                   keep, one, zero):
    """Rows ``r0:r1`` of step ``s`` up to the gates' tanh, in one call without the GIL: the previous step's end
    (``hidden[s] = o * tanh(c)``, then ``lstm_carry`` where ``keep`` is not empty), the product
    ``gates[s] = hidden[s] @ kernel`` by ``gemm`` and ``lstm_gates``; ``s == len(gates)`` ends the last step only."""
    if s > 0:
        u = hidden.shape[2]
        for r in range(r0, r1):
            z = gates[s - 1, r]
            a = act_cells[s - 1, r]
            h = hidden[s, r]
            for j in range(u):
                h[j] = z[3 * u + j] * a[j]
        if keep.shape[0] > 0:
            lstm_carry(cells, hidden, s - 1, keep, r0, r1)
    if s == gates.shape[0]:
        return
    gemm_rows(gemm, hidden[s, r0:r1], kernel, gates[s, r0:r1], one, zero)
    lstm_gates(gates, s, projection, t, time_major, scale, r0, r1, bias)


@_compile
def lstm_forward_steps(gemm, loop, loop_context, loop_auxdata, times, time_major, projection, kernel, hidden, cells,
                       gates, act_cells, scale, offset, r0, r1, bias, keep, one, zero):
    """The whole forward loop of rows ``r0:r1`` in one call without the GIL: each step's ``lstm_step_head``, the
    gates' tanh by ``tanh_into`` (``loop`` 0 for float32's ``tanh_rows``, else ``np.tanh``'s own loop and its
    context and auxdata, ``kernels.native``), ``lstm_cells`` and the new cell state's tanh; then the last step's
    end. ``times[s]`` is step ``s``'s input timestep."""
    scratch = np.empty(5, dtype=np.int64)
    steps = times.shape[0]
    for s in range(steps):
        lstm_step_head(gemm, s, times[s], time_major, projection, kernel, hidden, cells, gates, act_cells, scale, r0,
                       r1, bias, keep, one, zero)
        z = gates[s, r0:r1]
        tanh_into(loop, loop_context, loop_auxdata, z, z, scratch)
        lstm_cells(gates, s, cells, scale, offset, r0, r1)
        tanh_into(loop, loop_context, loop_auxdata, cells[s + 1, r0:r1], act_cells[s, r0:r1], scratch)
    lstm_step_head(gemm, steps, 0, time_major, projection, kernel, hidden, cells, gates, act_cells, scale, r0, r1,
                   bias, keep, one, zero)


@_compile
def lstm_backward_steps(gemm, times, time_major, g_sequence, dh, dc, gates, cells, act_cells, d_projection,
                        kernel_t, one, zero, r0, r1, keep, zero_output, skip, initial_dh):
    """The whole BPTT loop of rows ``r0:r1`` in one call without the GIL: each step's ``lstm_backward_step``, its
    product ``dh = dz @ kernel_t`` by ``gemm`` (skipped at the first step without ``initial_dh``) and, with a
    step mask (``keep`` not empty), ``lstm_restore``; ``times[s]`` is step ``s``'s input timestep."""
    masks = keep.shape[0] > 0
    for s in range(times.shape[0] - 1, -1, -1):
        t = times[s]
        lstm_backward_step(s, t, time_major, g_sequence, dh, dc, gates, cells, act_cells, d_projection, one, r0, r1,
                           keep, zero_output, skip)
        if s == 0 and not initial_dh:
            break
        if time_major:
            gemm_rows(gemm, d_projection[t, r0:r1], kernel_t, dh[r0:r1], one, zero)
        else:
            gemm_rows(gemm, d_projection[r0:r1, t], kernel_t, dh[r0:r1], one, zero)
        if masks:
            lstm_restore(dh, skip, keep, s, r0, r1)
