"""Fused elementwise loops compiled by numba (imported only through ``kernels.compiled``, which checks for numba).

Each loop does, element by element, the operations of the NumPy code it
replaces in the same order and precision, so the results are equal: constants
arrive typed as the arrays (numba would widen a float32 expression with a
Python number to float64), divisions are not checked for zero (NumPy's
``error_model``: a zero gives inf or nan as in NumPy, and the loops vectorize),
and no ``fastmath`` (which would reassociate and fuse multiply-adds). They
release the GIL, so ``kernels.threads`` can run two halves of a job at once.
"""
import numba
import numpy as np

__all__ = ["adam", "lstm_backward_step", "lstm_carry", "lstm_cells", "lstm_gates", "lstm_restore", "rmsprop", "sgd"]


def _compile(function):
    options = {"nogil": True, "error_model": "numpy"}
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # no writable place for numba's cache: compile in each process
        return numba.njit(**options)(function)


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
def lstm_gates(gates, s, projection, t, time_major, scale, r0, r1):
    """Rows ``r0:r1`` of step ``s``: ``z = (z + projection_t) * scale``, the argument of the gates' one tanh.

    ``projection`` is C-contiguous, indexed ``[t, row]`` when ``time_major`` else ``[row, t]``."""
    for r in range(r0, r1):
        z = gates[s, r]
        p = projection[t, r] if time_major else projection[r, t]
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
