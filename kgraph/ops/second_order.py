"""Second-order rules: each op's VJP written with ops, so that an outer ``GradientTape`` records it.

``kgraph.backend.higher_order`` uses these when ``gradient()`` runs while another tape records (a gradient
penalty's gradient). Ops linear in their float inputs need no rule: their VJP is transposed generically
(``LINEAR``). Every other op a gradient of a gradient goes through has a rule here; an op with neither raises a
``NotImplementedError`` naming it. A rule is ``rule(g, out, *inputs, *config, **config) -> cotangents``, one per
input (``None`` for none; a broadcast shape is summed back by the tape), and uses only ``kgraph.ops`` on
``g``, ``out`` and the inputs (never NumPy syntax on them: a plain array the outer tape tracks by identity would
lose its tracking). Masks and other piecewise-constant factors are computed on plain values: their derivative
is zero.

Ops whose VJP is long (normalizations, moments, GELU) are differentiated through a decomposition into ops with
rules, re-run under a temporary tape.
"""
import importlib
import math as _pymath

import numpy as np

from kgraph.backend.higher_order import piecewise_constant as _const

# By module path: the package's attributes ``shape`` and ``nn`` are an op and a namespace.
(conv_grads, core, m, nn, normalization, numpy_index, numpy_shape, pool_grads, pooling, r, sh) = (
    importlib.import_module(f"kgraph.ops.{name}") for name in (
        "conv_grads", "core", "math", "nn", "normalization", "numpy_index", "numpy_shape", "pool_grads",
        "pooling", "reductions", "shape"))



def _plain(x):
    return x.view(np.ndarray) if isinstance(x, np.ndarray) else np.asarray(x)


# ----- elementwise ---------------------------------------------------------------------------------------------
def _unary(derivative):
    """A rule ``g * derivative(x, out)`` for a one-input elementwise op."""
    def rule(g, out, x, *config, **kwargs):
        return (m.multiply(g, derivative(x, out, *config, **kwargs)),)
    return rule


def _elu_derivative(x, out, alpha=1.0):
    positive = _plain(x) > 0
    return m.where(positive, np.ones((), out.dtype), m.add(out, np.asarray(alpha, out.dtype)))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805


def _selu_derivative(x, out):
    positive = _plain(x) > 0
    return m.where(positive, np.asarray(_SELU_SCALE, out.dtype), m.add(out, np.asarray(_SELU_SCALE * _SELU_ALPHA,
                                                                                         out.dtype)))


def _silu_derivative(x, out):
    s = nn.sigmoid(x)
    return m.multiply(s, m.add(1.0, m.multiply(x, m.subtract(1.0, s))))


def _hard_silu_derivative(x, out):
    plain = _plain(x)
    return m.add(nn.hard_sigmoid(x), m.multiply(x, _const((plain > -3) & (plain < 3), plain, x) / 6))


UNARY = {
    m.square: lambda x, out: m.multiply(x, 2.0),
    m.sqrt: lambda x, out: m.divide(0.5, out),
    m.rsqrt: lambda x, out: m.multiply(-0.5, m.multiply(out, m.square(out))),
    m.reciprocal: lambda x, out: m.negative(m.square(out)),
    m.exp: lambda x, out: out,
    m.expm1: lambda x, out: m.add(out, 1.0),
    m.log: lambda x, out: m.reciprocal(x),
    m.log1p: lambda x, out: m.reciprocal(m.add(x, 1.0)),
    m.abs: lambda x, out: _const(np.sign(_plain(x)), _plain(out), x),
    m.tanh: lambda x, out: m.subtract(1.0, m.square(out)),
    m.sin: lambda x, out: m.cos(x),
    m.cos: lambda x, out: m.negative(m.sin(x)),
    m.erf: lambda x, out: m.multiply(2 / _pymath.sqrt(_pymath.pi), m.exp(m.negative(m.square(x)))),
    nn.relu: lambda x, out: _const(_plain(x) > 0, _plain(out), x),
    nn.relu6: lambda x, out: _const((_plain(x) > 0) & (_plain(x) < 6), _plain(out), x),
    nn.sigmoid: lambda x, out: m.multiply(out, m.subtract(1.0, out)),
    nn.softplus: lambda x, out: nn.sigmoid(x),
    nn.log_sigmoid: lambda x, out: nn.sigmoid(m.negative(x)),
    nn.softsign: lambda x, out: m.reciprocal(m.square(m.add(1.0, m.abs(x)))),
    nn.silu: _silu_derivative,
    nn.leaky_relu: lambda x, out, negative_slope=0.2: _const(np.where(_plain(x) >= 0, 1.0, negative_slope),
                                                             _plain(out), x),
    nn.elu: _elu_derivative,
    nn.selu: _selu_derivative,
    nn.hard_sigmoid: lambda x, out: _const(((_plain(x) > -3) & (_plain(x) < 3)) / 6, _plain(out), x),
    nn.hard_silu: _hard_silu_derivative,
}


def _multiply(g, out, x1, x2):
    return m.multiply(g, x2), m.multiply(g, x1)


def _divide(g, out, x1, x2):
    return m.divide(g, x2), m.negative(m.divide(m.multiply(g, out), x2))


def _power(g, out, x1, x2):
    if not isinstance(x2, np.ndarray):
        lowered = x2 - 1
        return m.multiply(g, m.multiply(x2, m.power(x1, lowered))), None
    d1 = m.multiply(g, m.multiply(x2, m.power(x1, m.subtract(x2, 1))))
    positive = _plain(x1) > 0
    safe = m.where(positive, x1, np.ones((), _plain(x1).dtype))
    d2 = m.multiply(m.multiply(g, out), m.multiply(m.log(safe), _const(positive, _plain(out), x1)))
    return d1, d2


def _maximum_like(weight):
    def rule(g, out, x1, x2):
        w = _const(weight(_plain(x1), _plain(x2)), _plain(out), x1, x2)
        return m.multiply(g, w), m.multiply(g, 1 - w)
    return rule


def _clip(g, out, x, x_min, x_max):
    plain, lo, hi = _plain(x), _plain(x_min), _plain(x_max)
    above = np.greater(np.maximum(plain, lo), hi)
    below = np.less(plain, lo) & ~above
    like = _plain(out)
    return (m.multiply(g, _const(~(below | above), like, x, x_min, x_max)), m.multiply(g, _const(below, like, x, x_min, x_max)),
            m.multiply(g, _const(above, like, x, x_min, x_max)))


def _where(g, out, condition, x1, x2):
    chosen = _const(_plain(condition).astype(bool), _plain(out))
    return None, m.multiply(g, chosen), m.multiply(g, 1 - chosen)


# ----- products ------------------------------------------------------------------------------------------------
def _swap(a):
    return sh.swapaxes(a, -1, -2)


def _matmul(g, out, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return m.multiply(g, b), m.multiply(g, a)
    if b.ndim == 1:
        gcol = sh.expand_dims(g, -1)
        return m.multiply(gcol, b), sh.squeeze(m.matmul(_swap(a), gcol), -1)
    if a.ndim == 1:
        grow = sh.expand_dims(g, -2)
        return sh.squeeze(m.matmul(grow, _swap(b)), -2), m.multiply(sh.expand_dims(a, -1), grow)
    return m.matmul(g, _swap(b)), m.matmul(_swap(a), g)


def _dense(g, out, x, kernel, bias=None):
    d_x = m.matmul(g, sh.transpose(kernel))
    rows_x = sh.reshape(x, (-1, x.shape[-1]))
    rows_g = sh.reshape(g, (-1, g.shape[-1]))
    return d_x, m.matmul(sh.transpose(rows_x), rows_g), (None if bias is None else g)


def _dense_activation(g, out, x, kernel, bias=None, activation=None):
    """The rules of the two ops ``dense_activation`` fuses, in turn: the activation's on the product's value
    (as a constant: these activations' rules read their output, and their input only through piecewise-constant
    masks, as they do after a separate product), then the product's; the same cotangents as the two records."""
    z = nn.dense._kgraph_primitive.fn(_plain(x), _plain(kernel), None if bias is None else _plain(bias))[0]
    (g_z,) = RULES[activation](g, out, z)
    return _dense(g_z if g_z.dtype == z.dtype else m.cast(g_z, z.dtype), z, x, kernel, bias)


def _einsum(g, out, operands, subscripts):
    subs, output = m._parse_einsum(subscripts, operands)
    cts = []
    for i, (sub, target) in enumerate(zip(subs, operands)):
        if not (isinstance(target, np.ndarray) and target.dtype.kind in "fc"):
            cts.append(None)
            continue
        if len(set(sub)) != len(sub):
            raise NotImplementedError(
                f"kgraph cannot take the gradient of a gradient through einsum {subscripts!r}: operand {i} "
                "repeats a letter (a diagonal).")
        others = [s for j, s in enumerate(subs) if j != i]
        available = set(output).union(*others)
        present = "".join(c for c in sub if c in available)
        rest = [o for j, o in enumerate(operands) if j != i]
        grad = m.einsum(",".join([output] + others) + "->" + present, g, *rest)
        if present != sub:
            # Letters summed within this operand alone: the cotangent is constant along them.
            shape = [target.shape[k] if c in present else 1 for k, c in enumerate(sub)]
            grad = sh.broadcast_to(sh.reshape(grad, shape), target.shape)
        cts.append(grad)
    return tuple(cts)


# ----- reductions and normalizations ---------------------------------------------------------------------------
def _extremum(reduce):
    def rule(g, out, x, axis=None, keepdims=False):
        plain = _plain(x)
        axes = r._axis_arg(axis)
        kshape = r._keepdims_shape(plain.shape, axes)
        mask = np.equal(plain, reduce(plain, axis=axes, keepdims=True))
        count = np.sum(mask, axis=r._reduced_axes(axes, plain.ndim), keepdims=True)
        return (m.multiply(sh.reshape(g, kshape), _const(mask / count, plain, x)),)
    return rule


def _logsumexp(g, out, x, axis=None, keepdims=False):
    axes = r._axis_arg(axis)
    kshape = r._keepdims_shape(x.shape, axes)
    return (m.multiply(sh.reshape(g, kshape), m.exp(m.subtract(x, sh.reshape(out, kshape)))),)


def _softmax(g, out, x, axis=-1):
    return (m.multiply(out, m.subtract(g, r.sum(m.multiply(g, out), axis=axis, keepdims=True))),)


def _log_softmax(g, out, x, axis=-1):
    return (m.subtract(g, m.multiply(m.exp(out), r.sum(g, axis=axis, keepdims=True))),)


def _vjp_by(decompose, g, inputs, *config):
    """The input cotangents of ``decompose(*inputs, *config)`` for cotangent ``g``, through its ops."""
    from kgraph.backend.autodiff import GradientTape
    live = [a for a in inputs if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]
    with GradientTape() as tape:
        tape.watch(live)
        y = decompose(*inputs, *config)
    several = isinstance(y, (tuple, list))
    grads = iter(tape.gradient(list(y) if several else y, live,
                               output_gradients=list(g) if several else g))
    return tuple(next(grads) if any(a is b for b in live) else None for a in inputs)


def _moments_ops(x, axes, keepdims=False):
    mu = r.mean(x, axis=axes, keepdims=True)
    variance = r.mean(m.square(m.subtract(x, mu)), axis=axes, keepdims=keepdims)
    return (mu if keepdims else r.mean(x, axis=axes)), variance


def _channel(v, ndim, axis):
    shape = [1] * ndim
    shape[axis] = -1
    return sh.reshape(v, tuple(shape))


def _batch_norm_ops(x, mean, variance, offset, scale, axis, epsilon):
    ax = axis % x.ndim
    factor = m.rsqrt(m.add(variance, epsilon))
    if scale is not None:
        factor = m.multiply(factor, scale)
    out = m.multiply(m.subtract(x, _channel(mean, x.ndim, ax)), _channel(factor, x.ndim, ax))
    return out if offset is None else m.add(out, _channel(offset, x.ndim, ax))


def _layer_norm_ops(x, gamma, beta, axes, epsilon):
    centered = m.subtract(x, r.mean(x, axis=axes, keepdims=True))
    inv = m.rsqrt(m.add(r.mean(m.square(centered), axis=axes, keepdims=True), epsilon))
    out = m.multiply(centered, inv)
    bshape = tuple(d if i in axes else 1 for i, d in enumerate(x.shape))
    if gamma is not None:
        out = m.multiply(out, sh.reshape(gamma, bshape))
    return out if beta is None else m.add(out, sh.reshape(beta, bshape))


def _gelu_ops(x, approximate=True):
    if approximate:
        inner = m.multiply(_pymath.sqrt(2 / _pymath.pi), m.add(x, m.multiply(0.044715, m.power(x, 3))))
        return m.multiply(m.multiply(0.5, x), m.add(1.0, m.tanh(inner)))
    return m.multiply(m.multiply(0.5, x), m.add(1.0, m.erf(m.multiply(x, 1 / _pymath.sqrt(2)))))


def _decomposed(decompose, num_inputs):
    def rule(g, out, *args, **kwargs):
        inputs, config = args[:num_inputs], args[num_inputs:]
        return _vjp_by(lambda *a: decompose(*a, **kwargs), g, inputs, *config)
    return rule


DECOMPOSED = {
    nn.moments: (_moments_ops, 1),
    r.var: (lambda x, axis=None, keepdims=False: r.mean(m.square(m.subtract(x, r.mean(x, axis=axis, keepdims=True))),
                                                       axis=axis, keepdims=keepdims), 1),
    r.std: (lambda x, axis=None, keepdims=False: m.sqrt(r.var(x, axis=axis, keepdims=keepdims)), 1),
    normalization._batch_normalization: (_batch_norm_ops, 5),
    normalization._layer_normalization: (_layer_norm_ops, 3),
    nn.gelu: (_gelu_ops, 1),
}


# ----- registration ------------------------------------------------------------------------------------------------
LINEAR = (
    m.add, m.subtract, m.negative, m.cast, r.sum, r.mean, r.cumsum,
    sh.reshape, sh.split_leading_axes, sh.ravel, sh.expand_dims, sh.squeeze, sh.transpose, sh.swapaxes,
    sh.moveaxis, sh.broadcast_to, sh.flip, sh.roll, sh.concatenate, sh.stack, sh.split, sh.unstack, sh.take,
    sh.take_along_axis, sh.getitem, sh.tile, sh.repeat, sh.pad,
    numpy_index.slice, numpy_index.slice_update, numpy_index.scatter, numpy_shape.copy, core.segment_sum,
    pooling._average_pool,
)

RULES = {
    m.multiply: _multiply, m.divide: _divide, m.power: _power,
    m.maximum: _maximum_like(lambda a, b: (a > b) + 0.5 * (a == b)),
    m.minimum: _maximum_like(lambda a, b: (a < b) + 0.5 * (a == b)),
    m.clip: _clip, m._where: _where, m.matmul: _matmul, nn.dense: _dense, m._einsum: _einsum,
    nn.dense_activation: _dense_activation,
    r.max: _extremum(np.max), r.min: _extremum(np.min), r.logsumexp: _logsumexp,
    nn.softmax: _softmax, nn.log_softmax: _log_softmax,
    **{fn: _unary(d) for fn, d in UNARY.items()},
    **{fn: _decomposed(d, n) for fn, (d, n) in DECOMPOSED.items()},
    **conv_grads.RULES,
    **pool_grads.RULES,
}


def _drop_scalars(args, rest, kwargs):
    """``add``/``subtract`` with a number or an integer array: that operand is an offset."""
    return [a if isinstance(a, np.ndarray) and a.dtype.kind in "fc" else np.zeros_like(a) for a in args], rest, kwargs


def _drop_fill(args, rest, kwargs):
    """``pad``'s fill value (``constant_values``, the fourth argument) is an offset."""
    return args, rest[:2], {k: v for k, v in kwargs.items() if k != "constant_values"}


AFFINE = {m.add: _drop_scalars, m.subtract: _drop_scalars, sh.pad: _drop_fill}


def _register():
    names = set()
    for fn in LINEAR:
        spec = fn._kgraph_primitive
        spec.linear = AFFINE.get(fn, True)
        names.add(spec.name)
    for fn, rule in RULES.items():
        spec = fn._kgraph_primitive
        spec.rule = rule
        names.add(spec.name)
    return frozenset(names)


SUPPORTED = _register()
