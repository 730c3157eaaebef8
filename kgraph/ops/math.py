"""Elementwise and linear-algebra ops, named as in ``keras.ops``."""
import builtins
import functools
import math as _pymath
import string

import numpy as np

from kgraph import backend
from kgraph.backend import step_trace
from kgraph.backend.autodiff import _step_traces, _value, is_recording, primitive
from kgraph.backend.tape_array import TapeArray
from kgraph.backend.variable import Variable
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.ops.operations import op

__all__ = [
    "abs", "absolute", "add", "all", "any", "argmax", "argmin", "cast", "ceil", "clip",
    "convert_to_numpy", "convert_to_tensor", "cos", "divide", "einsum", "equal", "erf",
    "exp", "expm1", "floor", "floor_divide", "greater", "greater_equal", "isfinite",
    "isnan", "less", "less_equal", "log", "log1p", "logical_and", "logical_not", "logical_or",
    "matmul", "maximum", "minimum", "mod", "multiply", "negative",
    "not_equal", "power", "reciprocal", "round", "rsqrt", "sign",
    "sin", "sqrt", "square", "stop_gradient", "subtract", "tanh", "true_divide",
    "where",
]


def _no_gradient(fn):
    """Wrap an op that has no gradient: Variables become arrays, the result is an ndarray."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        out = fn(*(_value(a) for a in args), **kwargs)
        out = out if type(out) is np.ndarray else np.asarray(out)
        if _step_traces:  # a training step being traced for replay sees this op too
            step_trace.capture_plain(fn, args, kwargs, out)
        return out

    return op


# ---------------------------------------------------------------- arithmetic

def _add_vjp(g):
    return g, g


@op
@primitive
def add(x1, x2):
    """Elementwise ``x1 + x2`` with broadcasting."""
    return np.add(x1, x2), _add_vjp


@op
@primitive
def subtract(x1, x2):
    """Elementwise ``x1 - x2`` with broadcasting."""
    return np.subtract(x1, x2), lambda g: (g, lambda: np.negative(g))


@op
@primitive
def multiply(x1, x2):
    """Elementwise ``x1 * x2`` with broadcasting."""
    return np.multiply(x1, x2), lambda g: (lambda: g * x2, lambda: g * x1)


@op
@primitive
def divide(x1, x2):
    """Elementwise true division ``x1 / x2`` with broadcasting."""
    out = np.divide(x1, x2)
    return out, lambda g: (lambda: g / x2, lambda: -g * out / x2)


true_divide = op(divide, name="true_divide")


@op
@primitive
def negative(x):
    """Elementwise ``-x``."""
    return np.negative(x), np.negative


@op
@primitive
def power(x1, x2):
    """Elementwise ``x1 ** x2``; the exponent's gradient is 0 where ``x1 <= 0``."""
    out = np.power(x1, x2)

    def vjp(g):
        def d_exponent():
            positive = np.greater(x1, 0)
            return g * out * np.where(positive, np.log(np.where(positive, x1, 1)), 0)

        # Python scalars stay weakly typed so float32 stays float32.
        lowered = x2 - 1 if isinstance(x2, (int, float)) else np.subtract(x2, 1)
        return lambda: g * x2 * np.power(x1, lowered), d_exponent

    return out, vjp


@op
@primitive
def square(x):
    """Elementwise ``x * x``."""
    return np.square(x), lambda g: g * (2 * x)


@op
@primitive
def sqrt(x):
    """Elementwise square root."""
    out = np.sqrt(x)
    return out, lambda g: g * 0.5 / out


@op
@primitive
def rsqrt(x):
    """Elementwise ``1 / sqrt(x)``."""
    out = 1 / np.sqrt(x)
    return out, lambda g: g * -0.5 * out * out * out


@op
@primitive
def reciprocal(x):
    """Elementwise ``1 / x``."""
    out = np.divide(1, x)
    return out, lambda g: -g * out * out


@op
@primitive
def exp(x):
    """Elementwise exponential."""
    out = np.exp(x)
    return out, lambda g: g * out


@op
@primitive
def expm1(x):
    """Elementwise ``exp(x) - 1``, accurate for small ``x``."""
    out = np.expm1(x)
    return out, lambda g: g * (out + 1)


@op
@primitive
def log(x):
    """Elementwise natural logarithm."""
    return np.log(x), lambda g: g / x


@op
@primitive
def log1p(x):
    """Elementwise ``log(1 + x)``, accurate for small ``x``."""
    return np.log1p(x), lambda g: g / (1 + x)


@op
@primitive
def abs(x):
    """Elementwise absolute value (gradient 0 at 0; ``conj(z) / |z|`` for a complex ``z``)."""
    out = np.abs(x)
    if np.iscomplexobj(x):
        return out, lambda g: g * np.conj(x) / np.where(out == 0, 1, out)
    return out, lambda g: g * np.sign(x)


absolute = op(abs, name="absolute")


@op
@primitive
def tanh(x):
    """Elementwise hyperbolic tangent."""
    out = np.tanh(x)
    return out, lambda g: g * (1 - out * out)


@op
@primitive
def sin(x):
    """Elementwise sine."""
    return np.sin(x), lambda g: g * np.cos(x)


@op
@primitive
def cos(x):
    """Elementwise cosine."""
    return np.cos(x), lambda g: -g * np.sin(x)


_erf_exact = np.frompyfunc(_pymath.erf, 1, 1)
# Numerical Recipes' erfc fit, t * exp(-z^2 + P(t)) with t = 1 / (1 + z/2): relative
# error below 1.2e-7, i.e. float32 precision, at the cost of one exp.
_ERFC_FIT = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
             0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277)
# Maclaurin coefficients of erf(z)/z in z^2, used for |z| < 0.5 where 1 - erfc loses digits.
_ERF_SERIES = tuple(2 / _pymath.sqrt(_pymath.pi) * (-1) ** n / (_pymath.factorial(n) * (2 * n + 1)) for n in range(8))


def _erf_values(x):
    """erf of a float array: exact (libm) for float64, float32-accurate and vectorized otherwise."""
    if x.dtype == np.float64:
        return np.asarray(_erf_exact(x), dtype=np.float64)
    z = np.abs(x).astype(np.float64)
    t = 1 / (1 + 0.5 * z)
    poly = np.zeros_like(t)
    for c in reversed(_ERFC_FIT):
        poly = poly * t + c
    tail = 1 - t * np.exp(poly - z * z)
    z2 = z * z
    series = np.zeros_like(z)
    for c in reversed(_ERF_SERIES):
        series = series * z2 + c
    out = np.where(z < 0.5, z * series, tail)
    return np.copysign(out, x).astype(x.dtype)


@op
@primitive
def erf(x):
    """Elementwise error function."""
    x = np.asarray(x)
    if x.dtype.kind not in "fc":
        x = x.astype(backend.floatx())
    return _erf_values(x), lambda g: g * ((2 / _pymath.sqrt(_pymath.pi)) * np.exp(-x * x))


def _maximum_weight(x1, x2, dtype):
    # Ties split the gradient evenly, as the max/min reductions do.
    return np.greater(x1, x2).astype(dtype) + 0.5 * np.equal(x1, x2).astype(dtype)


@op
@primitive
def maximum(x1, x2):
    """Elementwise maximum (ties split the gradient evenly)."""

    def vjp(g):
        w = _maximum_weight(x1, x2, g.dtype)
        return lambda: g * w, lambda: g * (1 - w)

    return np.maximum(x1, x2), vjp


@op
@primitive
def minimum(x1, x2):
    """Elementwise minimum (ties split the gradient evenly)."""

    def vjp(g):
        w = _maximum_weight(x2, x1, g.dtype)
        return lambda: g * w, lambda: g * (1 - w)

    return np.minimum(x1, x2), vjp


@op
def where(condition, x1=None, x2=None):
    """Pick ``x1`` where ``condition`` is true and ``x2`` elsewhere.

    With only ``condition``, return the indices of its non-zero elements.
    """
    if x1 is None and x2 is None:
        return tuple(np.asarray(i) for i in np.nonzero(_value(condition)))
    if x1 is None or x2 is None:
        raise ValueError(
            f"where() needs both x1 and x2, or neither. Received: x1={x1!r}, x2={x2!r}"
        )
    return _where(condition, x1, x2)


@primitive(name="where")
def _where(condition, x1, x2):
    cond = np.asarray(condition)
    if cond.dtype != np.bool_:
        cond = cond.astype(bool)
    out = np.where(cond, x1, x2)
    return out, lambda g: (None, lambda: np.where(cond, g, 0), lambda: np.where(cond, 0, g))


@op
@primitive
def clip(x, x_min, x_max):
    """Clip ``x`` to ``[x_min, x_max]``; the gradient flows to whichever value is selected."""
    out = np.clip(x, x_min, x_max)

    def vjp(g):
        # np.clip is minimum(maximum(x, x_min), x_max): x_max wins when the bounds cross.
        above = np.greater(np.maximum(x, x_min), x_max)
        below = np.less(x, x_min) & ~above
        return (
            lambda: np.where(below | above, 0, g),
            lambda: np.where(below, g, 0),
            lambda: np.where(above, g, 0),
        )

    return out, vjp


# ------------------------------------------------------------ linear algebra

def _swap(a):
    return np.swapaxes(a, -1, -2)


def _matmul_grad_x1(g, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * b
    if a.ndim == 1:
        return np.matmul(g[..., None, :], _swap(b))[..., 0, :]
    if b.ndim == 1:
        return g[..., :, None] * b
    return np.matmul(g, _swap(b))


def _matmul_grad_x2(g, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * a
    if b.ndim == 1:
        return np.matmul(_swap(a), g[..., :, None])[..., 0]
    if a.ndim == 1:
        return a[:, None] * g[..., None, :]
    if b.ndim == 2 and a.ndim > 2:
        # Fold the batch into the rows: one GEMM instead of a batch then a sum.
        return np.matmul(a.reshape(-1, a.shape[-1]).T, g.reshape(-1, g.shape[-1]))
    return np.matmul(_swap(a), g)


@op
@primitive
def matmul(x1, x2):
    """Matrix product with NumPy ``matmul`` semantics (batched, broadcasting, 1-D cases)."""
    a, b = np.asarray(x1), np.asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul does not accept scalars. Received: x1.shape={a.shape}, x2.shape={b.shape}")
    out = np.matmul(a, b)
    return out, lambda g: (lambda: _matmul_grad_x1(g, a, b), lambda: _matmul_grad_x2(g, a, b))


def _parse_einsum(subscripts, operands):
    """Return explicit per-operand subscripts and the output subscript (ellipses expanded)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    in_subs = inputs.split(",")
    if len(in_subs) != len(operands):
        raise ValueError(
            f"einsum subscripts name {len(in_subs)} operands but {len(operands)} were given. "
            f"Received: subscripts={subscripts!r}"
        )
    free = [c for c in string.ascii_letters if c not in subscripts]
    ranks = [operand.ndim - (len(s) - 3) for s, operand in zip(in_subs, operands) if "..." in s]
    ell_rank = builtins.max(ranks, default=0)
    ellipsis = "".join(free[:ell_rank])
    expanded = []
    for s, operand in zip(in_subs, operands):
        if "..." in s:
            rank = operand.ndim - (len(s) - 3)
            s = s.replace("...", ellipsis[ell_rank - rank:])
        if len(s) != operand.ndim:
            raise ValueError(
                f"einsum subscript {s!r} does not match an operand of rank {operand.ndim}. "
                f"Received: subscripts={subscripts!r}"
            )
        expanded.append(s)
    if arrow:
        output = output.replace("...", ellipsis)
    else:
        letters = "".join(expanded)
        output = ellipsis + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ellipsis))
    return expanded, output


def _contract(expr, *operands):
    # einsum's path optimizer dispatches to BLAS but costs ~10us to plan: worth it
    # beyond a few thousand elements or for three or more operands.
    optimize = len(operands) > 2 or builtins.sum(op.size for op in operands) > 4096
    return np.einsum(expr, *operands, optimize=optimize)


def _einsum_operand_grad(g, i, subs, output, operands):
    """Cotangent of operand ``i``: contract ``g`` with the other operands."""
    target = operands[i]
    sub = subs[i]
    unique = "".join(dict.fromkeys(sub))
    others = [s for j, s in enumerate(subs) if j != i]
    available = set(output).union(*others)
    present = "".join(c for c in unique if c in available)
    expr = ",".join([output] + others) + "->" + present
    rest = [op for j, op in enumerate(operands) if j != i]
    grad = _contract(expr, g, *rest)
    sizes = {c: target.shape[k] for k, c in enumerate(sub)}
    if present != unique:
        # Letters summed within this operand alone: the gradient is constant along them.
        grad = grad.reshape([grad.shape[present.index(c)] if c in present else 1 for c in unique])
        grad = np.broadcast_to(grad, [builtins.max(grad.shape[k], sizes[c]) for k, c in enumerate(unique)])
    if len(unique) == len(sub):
        return np.transpose(grad, [unique.index(c) for c in sub]) if unique != sub else grad
    # Repeated letters select a diagonal: write the gradient back onto it.
    full = np.zeros(target.shape, dtype=np.result_type(grad, target))
    index = tuple(
        np.arange(sizes[c]).reshape([-1 if u == c else 1 for u in unique]) for c in sub
    )
    full[index] = grad
    return full


@op
def einsum(subscripts, *operands):
    """Einstein summation (``numpy.einsum`` subscripts, ellipses included)."""
    return _einsum(list(operands), subscripts=subscripts)


@primitive(list_input=True, name="einsum")
def _einsum(operands, subscripts):
    operands = [np.asarray(op) for op in operands]
    subs, output = _parse_einsum(subscripts, operands)
    out = _contract(",".join(subs) + "->" + output, *operands)

    def vjp(g):
        return tuple(
            functools.partial(_einsum_operand_grad, g, i, subs, output, operands)
            for i in range(len(operands))
        )

    return out, vjp


# ------------------------------------------------------------- type changes

@op
@primitive(num_inputs=1)
def cast(x, dtype):
    """Return ``x`` converted to ``dtype`` (always a new array)."""
    return np.array(x, dtype=backend.standardize_dtype(dtype)), lambda g: g


@op
def stop_gradient(variable):
    """Return the value of ``variable`` as an array that gradients do not flow through."""
    v = _value(variable)
    return v.view() if isinstance(v, np.ndarray) else np.asarray(v)


# convert_to_tensor and convert_to_numpy are not ops (no @op): no node records them.
def convert_to_tensor(x, dtype=None):
    """Return ``x`` as an ndarray; Python floats become floatx and Python ints int32.

    A KerasTensor is returned as it is (cast to ``dtype`` if given).
    """
    if isinstance(x, KerasTensor):
        return x if dtype is None or backend.standardize_dtype(dtype) == x.dtype else cast(x, dtype)
    if isinstance(x, (TapeArray, Variable)) and is_recording():
        # Recorded, as Keras's conversion keeps a tensor on the tape: gradients flow through it.
        return cast(x, backend.standardize_dtype(dtype) if dtype is not None else np.dtype(x.dtype).name)
    v = _value(x)
    if dtype is not None:
        return np.asarray(v, dtype=backend.standardize_dtype(dtype))
    if isinstance(v, (np.ndarray, np.generic)):
        return np.asarray(v)
    arr = np.asarray(v)
    if arr.dtype == np.float64:
        return arr.astype(backend.floatx())
    if arr.dtype == np.int64:
        return arr.astype(np.int32)
    return arr


def convert_to_numpy(x):
    """Return ``x`` (an array, Variable or Python value) as a NumPy array."""
    return np.asarray(_value(x))


# ------------------------------------------------- ops without a gradient

@op
@_no_gradient
def sign(x):
    """Elementwise sign (-1, 0 or 1); no gradient."""
    return np.sign(x)


@op
@_no_gradient
def floor(x):
    """Elementwise floor; no gradient."""
    return np.floor(x)


@op
@_no_gradient
def floor_divide(x1, x2):
    """Elementwise ``x1 // x2`` (floor of the quotient); no gradient."""
    return np.floor_divide(x1, x2)


@op
@primitive
def mod(x1, x2):
    """Elementwise ``x1 % x2`` with the sign of ``x2`` (Python's and NumPy's rule)."""
    out = np.mod(x1, x2)
    return out, lambda g: (g, lambda: -g * np.floor_divide(x1, x2))


@op
@_no_gradient
def ceil(x):
    """Elementwise ceiling; no gradient."""
    return np.ceil(x)


@op
@_no_gradient
def round(x, decimals=0):
    """Round half to even to ``decimals`` places; no gradient."""
    return np.round(x, decimals)


@op
@_no_gradient
def argmax(x, axis=None, keepdims=False):
    """Index (int32, as Keras) of the maximum along ``axis`` (of the flattened array when None)."""
    return np.argmax(x, axis=axis, keepdims=keepdims).astype(np.int32)


@op
@_no_gradient
def argmin(x, axis=None, keepdims=False):
    """Index (int32, as Keras) of the minimum along ``axis`` (of the flattened array when None)."""
    return np.argmin(x, axis=axis, keepdims=keepdims).astype(np.int32)


equal = op(_no_gradient(np.equal))
not_equal = op(_no_gradient(np.not_equal))
greater = op(_no_gradient(np.greater))
greater_equal = op(_no_gradient(np.greater_equal))
less = op(_no_gradient(np.less))
less_equal = op(_no_gradient(np.less_equal))
logical_and = op(_no_gradient(np.logical_and))
logical_or = op(_no_gradient(np.logical_or))
logical_not = op(_no_gradient(np.logical_not))
isnan = op(_no_gradient(np.isnan))
isfinite = op(_no_gradient(np.isfinite))


@op
@_no_gradient
def all(x, axis=None, keepdims=False):
    """Whether all elements along ``axis`` are true."""
    return np.all(x, axis=axis, keepdims=keepdims)


@op
@_no_gradient
def any(x, axis=None, keepdims=False):
    """Whether any element along ``axis`` is true."""
    return np.any(x, axis=axis, keepdims=keepdims)
