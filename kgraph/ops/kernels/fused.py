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
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from kgraph.ops.kernels.fused_pool import pool_argmax, pool_route
from kgraph.ops.kernels.fused_tanh import preferred as tanh_preferred
from kgraph.ops.kernels.fused_tanh import tanh_rows
from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["adam", "gemm_rows", "gru_backward_carry", "gru_backward_step",
           "gru_candidate", "gru_gates", "gru_hidden", "lstm_backward_step", "lstm_backward_steps", "lstm_carry",
           "lstm_cells", "lstm_forward_steps", "lstm_gates", "lstm_restore", "lstm_step_head", "pool_argmax",
           "pool_route", "relu", "relu_gradient", "rmsprop", "sgd", "tanh_into", "tanh_preferred", "tanh_rows",
           "ufunc_rows"]


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


@intrinsic
def _call_gemm(typingctx, address, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Call the ``cblas_?gemm`` at ``address`` (an integer: a typed argument would cost the kernel's caller a
    microsecond of dispatch per call) as ``cblas_?gemm(RowMajor, NoTrans, NoTrans, m, n, k, alpha, a, lda, b,
    ldb, beta, c, ldc)`` with 64-bit integers; ``a``, ``b``, ``c`` are data addresses, ``alpha`` and ``beta`` of
    the matrices' float type."""
    if not isinstance(alpha, types.Float) or beta != alpha:
        return None
    signature = types.void(address, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context, builder, signature, args):
        i32, i64, pointer = ir.IntType(32), ir.IntType(64), ir.IntType(8).as_pointer()
        scalar = context.get_value_type(alpha)
        function_type = ir.FunctionType(ir.VoidType(), [i32] * 3 + [i64] * 3 + [scalar, pointer, i64, pointer, i64,
                                                                                 scalar, pointer, i64])
        values = [context.cast(builder, value, kind, types.int64) if isinstance(kind, types.Integer) else value
                  for value, kind in zip(args, signature.args)]
        (address_, m_, n_, k_, alpha_, a_, lda_, b_, ldb_, beta_, c_, ldc_) = values
        function = builder.inttoptr(address_, function_type.as_pointer())
        row_major, no_transpose = ir.Constant(i32, 101), ir.Constant(i32, 111)
        builder.call(function, [row_major, no_transpose, no_transpose, m_, n_, k_, alpha_,
                                builder.inttoptr(a_, pointer), lda_, builder.inttoptr(b_, pointer), ldb_, beta_,
                                builder.inttoptr(c_, pointer), ldc_])
        return context.get_dummy_value()
    return signature, codegen


@_compile
def gemm_rows(gemm, a, b, out, one, zero):
    """``out = a @ b`` by the BLAS ``cblas_?gemm`` at address ``gemm`` (NumPy's, ``kernels.native``), called as
    NumPy's ``matmul`` calls it: row-major, the rows of ``a``, ``b`` and ``out`` of unit stride (their leading
    dimensions the row strides), ``alpha`` one and ``beta`` zero."""
    size = a.itemsize
    _call_gemm(gemm, a.shape[0], b.shape[1], a.shape[1], one, a.ctypes.data, a.strides[0] // size,
               b.ctypes.data, b.strides[0] // size, zero, out.ctypes.data, out.strides[0] // size)


@intrinsic
def _call_loop(typingctx, loop, context, data, dimensions, strides, auxdata):
    """Call the NumPy strided loop at ``loop``: ``loop(context, data, dimensions, strides, auxdata)``, every
    argument an address (an integer); returns the loop's status (0 on success)."""
    signature = types.int32(loop, context, data, dimensions, strides, auxdata)

    def codegen(ctx, builder, signature, args):
        pointer = ir.IntType(8).as_pointer()
        function_type = ir.FunctionType(ir.IntType(32), [pointer] * 5)
        values = [ctx.cast(builder, value, kind, types.int64) for value, kind in zip(args, signature.args)]
        function = builder.inttoptr(values[0], function_type.as_pointer())
        return builder.call(function, [builder.inttoptr(value, pointer) for value in values[1:]])
    return signature, codegen


@_compile
def ufunc_rows(loop, context, auxdata, a, out, scratch):
    """``out = f(a)`` by the strided loop of a one-input ufunc ``f`` (``kernels.native``): one call over all of
    C-contiguous ``a`` and ``out`` (one size; ``out`` may be ``a``), as NumPy calls it on contiguous arrays.
    ``scratch``: five int64 for the call's pointers, size and strides. Returns the loop's status."""
    scratch[0] = a.ctypes.data
    scratch[1] = out.ctypes.data
    scratch[2] = a.size
    scratch[3] = a.itemsize
    scratch[4] = out.itemsize
    base = scratch.ctypes.data
    return _call_loop(loop, context, base, base + 16, base + 24, auxdata)


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
def tanh_into(loop, loop_context, loop_auxdata, a, out, scratch):
    """``out = tanh(a)`` (rows of unit stride, C-contiguous): ``fused_tanh.tanh_rows`` where ``loop`` is 0 (float32),
    else ``np.tanh``'s own loop by ``ufunc_rows`` (``scratch`` as there)."""
    if loop == 0:
        tanh_rows(a, out)
    else:
        ufunc_rows(loop, loop_context, loop_auxdata, a, out, scratch)


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


@_compile
def gru_gates(gates, s, recurrent, bias, projection, t, time_major, half, input_bias):
    """Step ``s`` of ``kernels.gru``: ``recurrent += bias`` (when ``bias`` is not empty), then the update and
    reset gates' argument ``(projection_zr + recurrent_zr) * half`` for their tanh (``ops.recurrent.gru``'s
    sigmoid is ``0.5 * tanh(x / 2) + 0.5``), the projection with ``input_bias`` added first when that is not
    empty. (The GRU loops touch few arrays each: with many, LLVM's checks that they do not overlap give up on
    vectorizing; measured 94 against 16 µs a backward step.)"""
    u = recurrent.shape[1] // 3
    with_bias = bias.shape[0] > 0
    with_input_bias = input_bias.shape[0] > 0
    for r in range(recurrent.shape[0]):
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
def gru_candidate(gates, kept, s, recurrent, projection, t, time_major, half, input_bias):
    """After the gates' tanh: ``z = z * half + half`` (update and reset gates), ``kept[s]`` the recurrent
    candidate, and the candidate's argument ``reset * kept + projection_h`` for its tanh (``projection_h +
    input_bias_h`` when ``input_bias`` is not empty)."""
    u = recurrent.shape[1] // 3
    for r in range(recurrent.shape[0]):
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
def gru_hidden(gates, hidden, s, keep):
    """``hidden[s + 1] = (hidden[s] - candidate) * update + candidate``; rows masked at step ``s`` (``keep`` not
    empty and 0 there) keep ``hidden[s]``."""
    u = hidden.shape[2]
    masks = keep.shape[0] > 0
    for r in range(hidden.shape[1]):
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
def gru_backward_step(s, g_sequence, dh, gates, hidden, kept, d_pre, d_recurrent, one, keep, zero_output, skip):
    """BPTT step ``s`` of ``kernels.gru`` before the product with the recurrent kernel, as ``ops.recurrent.gru``'s
    VJP computes it: ``dh += g_sequence[:, s]``; the update, candidate and reset cotangents into ``d_pre[s]`` and
    ``d_recurrent[s]`` (whose candidate block is times the reset gate). A masked row (``keep`` not empty and 0)
    passes ``dh`` through ``skip`` (``zero_output``: its sequence cotangent is not added) with zero cotangents."""
    u = dh.shape[1]
    masks = keep.shape[0] > 0
    for r in range(dh.shape[0]):
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
def gru_backward_carry(dh, gates, s, product, keep, skip, zero):
    """After the product: ``dh = dh * update + product``; with a step mask (``keep`` not empty) plus the carried
    cotangent, as ``ops.recurrent.gru``: a masked row's ``dh`` is what ``skip`` kept, an unmasked one's adds
    ``dh * 0``."""
    u = dh.shape[1]
    masks = keep.shape[0] > 0
    for r in range(dh.shape[0]):
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
