"""Compiled max-pooling passes of ``kgraph.ops.conv_pool`` (a convolution and the max pooling that reads it).

Compiled by numba and imported through ``kernels.compiled`` (``kgraph.ops.kernels.fused`` re-exports them),
which checks for numba. ``pool_argmax`` and ``pool_route`` are the pooling's two passes in the values of the
NumPy code they replace (``conv_pool._running_max`` and ``_route``): the maximum as ``np.maximum`` takes it (a
NaN propagates), the gradient to the first maximum of each window and 0.0 to the other cells (NumPy's masks
multiply, so there an infinite or NaN gradient makes the window's other cells NaN, and a zero may be -0.0;
every finite value is the same). Where NumPy
keeps one boolean array per later tap, they keep one byte per pooled cell (the winning tap), and each pass
walks tap by tap with arithmetic rather than branches, so the loop over channels vectorizes (branches on
random maxima mispredicted: 13 ms against 0.8 for the digits CNN's first pooling).
"""
import numpy as np

from kgraph.ops.kernels.jit import compile_kernel

__all__ = ["pool_argmax", "pool_route"]


@compile_kernel
def pool_argmax(a, best, index, bias, relu, zero):
    """Max pooling of ``a (A, P, B, Q, C, F)`` over its axes ``P`` and ``Q``: ``best (A, B, C, F)`` the maximum,
    ``index`` the row-major tap ``p * Q + q`` that held it first (the last tap to beat all taps before it).
    Then ``best + bias`` when ``bias`` is not empty, and ``np.maximum(best, zero)`` when ``relu``."""
    taps_q = a.shape[3]
    for i in range(a.shape[0]):
        for j in range(a.shape[2]):
            for k in range(a.shape[4]):
                top = best[i, j, k]
                won = index[i, j, k]
                first = a[i, 0, j, 0, k]
                for f in range(top.shape[0]):
                    top[f] = first[f]
                    won[f] = 0
    for t in range(1, a.shape[1] * taps_q):
        p, q = t // taps_q, t % taps_q
        tap = np.uint8(t)
        for i in range(a.shape[0]):
            for j in range(a.shape[2]):
                for k in range(a.shape[4]):
                    top = best[i, j, k]
                    won = index[i, j, k]
                    cells = a[i, p, j, q, k]
                    for f in range(top.shape[0]):
                        v = cells[f]
                        m = top[f]
                        top[f] = np.maximum(m, v)
                        won[f] = won[f] + np.uint8(v > m) * (tap - won[f])
    with_bias = bias.shape[0] > 0
    if not (with_bias or relu):
        return
    for i in range(best.shape[0]):
        for j in range(best.shape[1]):
            for k in range(best.shape[2]):
                top = best[i, j, k]
                if with_bias:
                    for f in range(top.shape[0]):
                        top[f] = top[f] + bias[f]
                if relu:
                    for f in range(top.shape[0]):
                        top[f] = np.maximum(top[f], zero)


@compile_kernel
def pool_route(g, index, out, zero):
    """The VJP of ``pool_argmax``: ``out (A, P, B, Q, C, F)`` is ``g (A, B, C, F)`` at each window's winning tap
    (``index``) and ``zero`` at the others."""
    taps_q = out.shape[3]
    for t in range(out.shape[1] * taps_q):
        p, q = t // taps_q, t % taps_q
        tap = np.uint8(t)
        for i in range(out.shape[0]):
            for j in range(out.shape[2]):
                for k in range(out.shape[4]):
                    grad = g[i, j, k]
                    won = index[i, j, k]
                    cells = out[i, p, j, q, k]
                    for f in range(grad.shape[0]):
                        cells[f] = grad[f] if won[f] == tap else zero
