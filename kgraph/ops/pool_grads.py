"""Max pooling's gradient as a differentiable op, for gradients of gradients.

Max pooling's VJP routes each window's cotangent to the window's first maximum (in row-major order): a linear
map ``R_x`` of the cotangent that depends on ``x`` only through which cell is largest. So its own VJP is
``R_x^T`` for the cotangent (each window reads the incoming cotangent at that same cell) and zero, though
connected, for ``x``. The fused convolution and pooling (``conv_max_pool``) is differentiated through its two
ops, ``_conv`` and ``_max_pool``.
"""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.ops.conv import _conv
from kgraph.ops.conv_pool import _conv_max_pool
from kgraph.ops.kernels.windows import pad
from kgraph.ops.pooling import _geometry, _max_pool

_max_pool_fn = _max_pool._kgraph_primitive.fn
_NAMES = ("pool_size", "strides", "pads")


def _gather_first_max(u, x, pool_size, strides, pads):
    """``R_x^T u``: each window's value of ``u`` at the first maximum of ``x`` in the window."""
    _, _, regions, _ = _geometry(x, pool_size, strides, pads)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp, up = pad(x, pads, lowest), pad(u, pads)
    best = xp[regions[0]].copy()
    for region in regions[1:]:
        np.maximum(best, xp[region], out=best)
    taken = np.zeros(best.shape, dtype=bool)
    result = np.zeros(best.shape, dtype=u.dtype)
    for region in regions:
        hit = np.equal(xp[region], best) & ~taken
        taken |= hit
        result += np.where(hit, up[region], 0)
    return result


@primitive(num_inputs=2)
def _max_pool_route(g, x, pool_size, strides, pads):
    """``R_x g``: max pooling's input cotangent for output cotangent ``g``."""
    def vjp(u):
        return (lambda: _gather_first_max(u, x, pool_size, strides, pads),
                lambda: np.zeros(x.shape, x.dtype))
    return np.array(_max_pool_fn(x, pool_size, strides, pads)[1](g)), vjp


def _max_pool_rule(g, out, x, *rest, **kwargs):
    return (_max_pool_route(g, x, **dict(zip(_NAMES, rest), **kwargs)),)


def _conv_max_pool_ops(x, kernel, bias, strides, pads, dilation, pool, relu):
    groups = x.shape[-1] // kernel.shape[-2]
    y = _conv(x, kernel, bias, strides=strides, pads=pads, dilation=dilation, groups=groups, relu=relu)
    return _max_pool(y, pool_size=pool, strides=pool, pads=tuple((0, 0) for _ in pool))


def _conv_max_pool_rule(g, out, x, kernel, bias=None, *rest, **kwargs):
    from kgraph.ops.second_order import _vjp_by
    config = dict(zip(("strides", "pads", "dilation", "pool", "relu"), rest), **kwargs)
    return _vjp_by(lambda *inputs: _conv_max_pool_ops(*inputs, **config), g, (x, kernel, bias))


RULES = {_max_pool: _max_pool_rule, _conv_max_pool: _conv_max_pool_rule}
