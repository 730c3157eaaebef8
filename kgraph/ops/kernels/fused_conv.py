"""Compiled 3x3 single-channel convolution + 2x2 max pooling passes of ``kgraph.ops.conv_pool`` (its ``_Direct``
path: a network's first convolution on grayscale images, as the digits CNN's).

Compiled by numba and imported through ``kernels.compiled`` (``kgraph.ops.kernels.fused`` re-exports them),
which checks for numba. With one input channel each convolution cell is a dot product of nine pixels with a
kernel column: as a matrix product (``_Im2col``) that is a 9-deep product over a window matrix nine times the
image, whose result (the convolution, four times the pooled output) goes through memory once more for the
pooling and twice in the VJP. Here each pooled row's two convolution rows are computed into a small scratch
that stays in cache and pooled at once, and the VJP reads only the pooled cotangent, the winning taps, the
pooled output (the relu's mask) and the image, and sums the bias's gradient on the way.

Values: each cell is ``x0 * w0``, then ``+ x_t * w_t`` for the taps in row-major order, each step a fused
multiply-add where the machine has one (as BLAS's kernels accumulate; float32 values agree with the window-matrix
path's within rounding, about 7 % of them a unit or two in the last place apart); the pooling's
maximum, winning tap (one byte, the first maximum in row-major order), bias and relu are ``fused_pool``'s. The
kernel's gradient sums, per image, the winning cell's window times the cotangent, then adds the images' sums in
order (the bias's likewise): the products of the window-matrix path, summed in another order (float rounding
apart). A window's losing cells take no part (the window-matrix path multiplies them by zero).
"""
import numpy as np

from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["conv3x3_max_pool", "conv3x3_max_pool_grads"]


@compile_kernel(fused_multiply_add=True)
def conv3x3_max_pool(image, weights, out, index, rows, bias, relu, zero, i0, i1):
    """Images ``i0:i1`` of ``image (n, H, W)`` convolved with ``weights (9, F)`` (taps row-major), max-pooled
    over 2x2 windows into ``out (n, PH, PW, F)`` with the winning tap (``2 * dy + dx``) in ``index``; then
    ``+ bias`` where ``bias`` is not empty and ``np.maximum(best, zero)`` when ``relu``. ``rows (2, 2 * PW, F)``:
    scratch for one pooled row's two convolution rows."""
    filters = weights.shape[1]
    w0, w1, w2 = weights[0], weights[1], weights[2]
    w3, w4, w5 = weights[3], weights[4], weights[5]
    w6, w7, w8 = weights[6], weights[7], weights[8]
    with_bias = bias.shape[0] > 0
    for n in range(i0, i1):
        img = image[n]
        for pi in range(out.shape[1]):
            for dy in range(2):
                r0, r1, r2 = img[2 * pi + dy], img[2 * pi + dy + 1], img[2 * pi + dy + 2]
                for x in range(rows.shape[1]):
                    cell = rows[dy, x]
                    x0, x1, x2 = r0[x], r0[x + 1], r0[x + 2]
                    x3, x4, x5 = r1[x], r1[x + 1], r1[x + 2]
                    x6, x7, x8 = r2[x], r2[x + 1], r2[x + 2]
                    for f in range(filters):
                        s = x0 * w0[f]
                        s = s + x1 * w1[f]
                        s = s + x2 * w2[f]
                        s = s + x3 * w3[f]
                        s = s + x4 * w4[f]
                        s = s + x5 * w5[f]
                        s = s + x6 * w6[f]
                        s = s + x7 * w7[f]
                        s = s + x8 * w8[f]
                        cell[f] = s
            for pj in range(out.shape[2]):
                top = out[n, pi, pj]
                won = index[n, pi, pj]
                c0, c1 = rows[0, 2 * pj], rows[0, 2 * pj + 1]
                c2, c3 = rows[1, 2 * pj], rows[1, 2 * pj + 1]
                for f in range(filters):
                    m = c0[f]
                    k = np.uint8(0)
                    v = c1[f]
                    k = k + np.uint8(v > m) * (np.uint8(1) - k)
                    m = np.maximum(m, v)
                    v = c2[f]
                    k = k + np.uint8(v > m) * (np.uint8(2) - k)
                    m = np.maximum(m, v)
                    v = c3[f]
                    k = k + np.uint8(v > m) * (np.uint8(3) - k)
                    m = np.maximum(m, v)
                    top[f] = m
                    won[f] = k
                if with_bias:
                    for f in range(filters):
                        top[f] = top[f] + bias[f]
                if relu:
                    for f in range(filters):
                        top[f] = np.maximum(top[f], zero)


@compile_kernel(fused_multiply_add=True)
def conv3x3_max_pool_grads(image, weights, g, pooled, relu, index, d_weights, part, masked, d_image, i0, i1):
    """The VJP of ``conv3x3_max_pool`` for images ``i0:i1`` and the pooled cotangent ``g (n, PH, PW, F)``.

    With ``relu`` the cotangent first goes through the relu's gradient, ``g * (pooled > 0)`` as
    ``ops.nn.relu_gradient`` computes it, ``pooled`` being the op's output (``masked (F,)``: scratch for one
    pooled cell's). Adds into ``d_weights (10, F)`` the weights' gradient (rows 0-8, the taps row-major) and the
    bias's (row 9: the masked cotangent's sum), each image's summed first in ``part (10, F)``; and, when
    ``d_image`` is not empty, the image's gradient into ``d_image (n, H, W)``."""
    filters = g.shape[3]
    zero, one = g.dtype.type(0), g.dtype.type(1)
    with_image = d_image.shape[0] > 0
    bias_part = part[9]
    for n in range(i0, i1):
        img = image[n]
        for t in range(10):
            for f in range(filters):
                part[t, f] = 0
        for pi in range(g.shape[1]):
            for pj in range(g.shape[2]):
                cell = g[n, pi, pj]
                if relu:
                    top = pooled[n, pi, pj]
                    for f in range(filters):
                        masked[f] = cell[f] * (one if top[f] > zero else zero)
                else:
                    for f in range(filters):
                        masked[f] = cell[f]
                for f in range(filters):
                    bias_part[f] = bias_part[f] + masked[f]
                won = index[n, pi, pj]
                y, x = 2 * pi, 2 * pj
                for ky in range(3):
                    upper, lower = img[y + ky], img[y + ky + 1]
                    for kx in range(3):
                        a0, a1 = upper[x + kx], upper[x + kx + 1]
                        b0, b1 = lower[x + kx], lower[x + kx + 1]
                        acc = part[3 * ky + kx]
                        for f in range(filters):
                            k = won[f]
                            top_cell = a0 if k == 0 else a1
                            bottom_cell = b0 if k == 2 else b1
                            acc[f] = acc[f] + (top_cell if k < 2 else bottom_cell) * masked[f]
                if with_image:
                    _route_to_image(weights, masked, won, d_image[n], y, x)
        for t in range(10):
            for f in range(filters):
                d_weights[t, f] = d_weights[t, f] + part[t, f]


@compile_kernel(fused_multiply_add=True)
def _route_to_image(weights, grad, won, d_image, y, x):
    """Adds into ``d_image (H, W)`` one pooled cell's input gradient: each filter's cotangent ``grad`` through
    the window of its winning cell (``won``), the window at ``(y, x)``."""
    zero = grad.dtype.type(0)
    for tap in range(4):
        cy, cx = y + tap // 2, x + tap % 2
        for t in range(9):
            w = weights[t]
            s = zero
            for f in range(grad.shape[0]):
                s = s + (grad[f] if won[f] == tap else zero) * w[f]
            d_image[cy + t // 3, cx + t % 3] += s
