"""A convolution's two gradients as differentiable ops, for gradients of gradients.

``conv(x, K)`` is linear in ``x`` (the map ``A_K``) and in ``K`` (the map ``B_x``). Its VJP is
``input_grad(g, K) = A_K^T g`` and ``kernel_grad(x, g) = B_x^T g``. Both are bilinear, and their own VJPs close
over the same three maps: for ``input_grad``, ``d/dg <u, A_K^T g> = conv(u, K)`` and ``d/dK = kernel_grad(u, g)``;
for ``kernel_grad``, ``d/dg <V, B_x^T g> = conv(x, V)`` and ``d/dx = input_grad(g, V)``. Each is computed with the
convolution's own first-order machinery (``_conv``'s VJP, run on a zero operand), so strides, padding, dilation
and groups follow ``conv`` exactly.
"""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.backend.higher_order import piecewise_constant
from kgraph.ops.conv import _conv

_conv_fn = _conv._kgraph_primitive.fn


def _forward(x, kernel, geometry):
    return _conv_fn(x, kernel, None, *geometry, False)[0]


def _input_grad_value(g, kernel, x_shape, geometry):
    dtype = np.result_type(g.dtype, kernel.dtype)
    d_x = _conv_fn(np.zeros(x_shape, dtype), kernel, None, *geometry, False)[1](g)[0]
    return d_x()


def _kernel_grad_value(x, g, kernel_shape, geometry):
    dtype = np.result_type(x.dtype, g.dtype)
    d_kernel = _conv_fn(x, np.zeros(kernel_shape, dtype), None, *geometry, False)[1](g)[1]
    return d_kernel()


@primitive(num_inputs=2)
def _conv_input_grad(g, kernel, x_shape, geometry):
    """``A_K^T g``: the cotangent of a convolution's input for output cotangent ``g``."""
    def vjp(u):
        return lambda: _forward(u, kernel, geometry), lambda: _kernel_grad_value(u, g, kernel.shape, geometry)
    return _input_grad_value(g, kernel, x_shape, geometry), vjp


@primitive(num_inputs=2)
def _conv_kernel_grad(x, g, kernel_shape, geometry):
    """``B_x^T g``: the cotangent of a convolution's kernel for output cotangent ``g``."""
    def vjp(v):
        return lambda: _input_grad_value(g, v, x.shape, geometry), lambda: _forward(x, v, geometry)
    return _kernel_grad_value(x, g, kernel_shape, geometry), vjp


def _conv_rule(g, out, x, kernel, bias, strides, pads, dilation, groups, relu):
    from kgraph.ops import math
    if relu:
        plain = out.view(np.ndarray)
        g = math.multiply(g, piecewise_constant(plain > 0, plain, out))
    geometry = (strides, pads, dilation, groups)
    return (_conv_input_grad(g, kernel, x_shape=x.shape, geometry=geometry),
            _conv_kernel_grad(x, g, kernel_shape=kernel.shape, geometry=geometry),
            None if bias is None else g)


def _conv_rule_kw(g, out, x, kernel, bias=None, *rest, **kwargs):
    names = ("strides", "pads", "dilation", "groups", "relu")
    config = dict(zip(names, rest), **kwargs)
    return _conv_rule(g, out, x, kernel, bias, **config)


RULES = {_conv: _conv_rule_kw}
