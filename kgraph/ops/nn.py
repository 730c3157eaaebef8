"""Activations and fused neural-network ops, named as in ``keras.ops``."""
import math as _pymath

import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import primitive
from kgraph.ops.kernels import compiled
from kgraph.ops.math import _erf_values, _no_gradient
from kgraph.ops.operations import op
from kgraph.ops.reductions import _count, _reduced_axes

__all__ = [
    "dense", "elu", "gelu", "hard_sigmoid", "hard_silu", "hard_swish", "leaky_relu", "log_sigmoid",
    "log_softmax", "moments", "one_hot", "relu", "relu6", "selu", "sigmoid", "silu", "softmax",
    "softplus", "softsign", "swish",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_GELU_C = _pymath.sqrt(2 / _pymath.pi)
_INV_SQRT_2 = 1 / _pymath.sqrt(2)
_INV_SQRT_2PI = 1 / _pymath.sqrt(2 * _pymath.pi)


def _sigmoid(x):
    # exp of a non-positive number never overflows, whatever the sign of x.
    e = np.exp(-np.abs(x))
    r = 1 / (1 + e)
    return np.where(x >= 0, r, e * r)


# Below this many elements NumPy's relu costs less than a compiled loop's call.
_COMPILED_RELU_MIN = 1 << 10


def _relu_kernels(*arrays):
    """The compiled kernels where numba is loaded already (a relu never loads it) and they take ``arrays``
    (ndarrays of one shape and float dtype, C-contiguous, at least ``_COMPILED_RELU_MIN`` elements); else None."""
    fused = compiled.loaded()
    if fused is None:
        return None
    shape = arrays[0].shape
    for a in arrays:  # a loop, not all() over a generator: two calls at every step of every relu layer
        if type(a) is not np.ndarray or a.shape != shape:
            return None
    return fused if arrays[0].size >= _COMPILED_RELU_MIN and compiled.usable(*arrays) else None


@op
@primitive
def relu(x):
    """``max(x, 0)`` (gradient 0 at 0); one compiled loop each way where numba is loaded (the same values)."""
    fused = _relu_kernels(x)
    if fused is None:
        out = np.maximum(x, 0)
    else:
        out = np.empty_like(x)
        fused.relu(x.reshape(-1), out.reshape(-1), x.dtype.type(0))

    return out, lambda g: relu_gradient(g, x)


def relu_gradient(g, x):
    """``g * (x > 0)``, relu's VJP: one compiled loop where numba is loaded (the same values)."""
    fused = _relu_kernels(g, x)
    if fused is None:
        return g * (x > 0)
    d_x = np.empty_like(g)
    fused.relu_gradient(g.reshape(-1), x.reshape(-1), d_x.reshape(-1), x.dtype.type(0), x.dtype.type(1))
    return d_x


@op
@primitive
def relu6(x):
    """``min(max(x, 0), 6)``."""
    return np.clip(x, 0, 6), lambda g: g * ((x > 0) & (x < 6))


@op
@primitive
def sigmoid(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, stable for large ``|x|``."""
    out = _sigmoid(x)
    return out, lambda g: g * out * (1 - out)


@op
@primitive
def softplus(x):
    """``log(1 + exp(x))``, stable for large ``|x|``."""
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))), lambda g: g * _sigmoid(x)


@op
@primitive
def log_sigmoid(x):
    """``log(sigmoid(x))``, stable for large ``|x|``."""
    out = np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))
    return out, lambda g: g * (1 - _sigmoid(x))


@op
@primitive
def softsign(x):
    """``x / (1 + |x|)``."""
    d = 1 + np.abs(x)
    return x / d, lambda g: g / (d * d)


@op
@primitive
def silu(x):
    """``x * sigmoid(x)`` (also called swish)."""
    s = _sigmoid(x)
    return x * s, lambda g: g * (s * (1 + x * (1 - s)))


swish = op(silu, name="swish")


@op
@primitive(num_inputs=1)
def leaky_relu(x, negative_slope=0.2):
    """``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere."""
    positive = x >= 0
    return np.where(positive, x, negative_slope * x), lambda g: np.where(positive, g, negative_slope * g)


def _elu(x, alpha):
    neg = np.minimum(x, 0)
    out = np.where(x > 0, x, alpha * np.expm1(neg))
    return out, lambda g: np.where(x > 0, g, g * (alpha * np.exp(neg)))


@op
@primitive(num_inputs=1)
def elu(x, alpha=1.0):
    """``x`` where ``x > 0``, ``alpha * (exp(x) - 1)`` elsewhere."""
    return _elu(x, alpha)


@op
@primitive
def selu(x):
    """Scaled ELU with the self-normalizing constants."""
    out, vjp = _elu(x, _SELU_ALPHA)
    return out * _SELU_SCALE, lambda g: vjp(g * _SELU_SCALE)


@op
@primitive(num_inputs=1)
def gelu(x, approximate=True):
    """Gaussian error linear unit ``x * Phi(x)``.

    Args:
        approximate: use the tanh approximation (the ``keras.ops`` default);
            False uses the exact erf form (the ``keras.activations`` default).
    """
    x = np.asarray(x)
    if approximate:
        x2 = x * x
        t = np.tanh(_GELU_C * (x + 0.044715 * x2 * x))
        out = 0.5 * x * (1 + t)

        def vjp(g):
            return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _GELU_C * (1 + 3 * 0.044715 * x2))

        return out, vjp
    cdf = 0.5 * (1 + _erf_values(x * _INV_SQRT_2))
    return x * cdf, lambda g: g * (cdf + x * (_INV_SQRT_2PI * np.exp(-0.5 * x * x)))


@op
@primitive
def hard_sigmoid(x):
    """``relu6(x + 3) / 6``."""
    return np.clip(x / 6 + 0.5, 0, 1), lambda g: g * ((x > -3) & (x < 3)) * (1 / 6)


@op
@primitive
def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also called hard swish)."""
    hs = np.clip(x / 6 + 0.5, 0, 1)
    return x * hs, lambda g: g * (hs + x * ((x > -3) & (x < 3)) * (1 / 6))


hard_swish = op(hard_silu, name="hard_swish")


@op
@primitive(num_inputs=1)
def softmax(x, axis=-1):
    """Softmax over ``axis`` (an int or a tuple), shifted by the max for stability."""
    # The ufuncs' reductions directly (np.max and np.sum's, without their Python wrappers: a softmax output
    # layer runs three at every training step).
    e = np.exp(x - np.maximum.reduce(x, axis, None, None, True))
    out = e / np.add.reduce(e, axis, None, None, True)
    return out, lambda g: out * (g - np.add.reduce(g * out, axis, None, None, True))


@op
@primitive(num_inputs=1)
def log_softmax(x, axis=-1):
    """``log(softmax(x))`` over ``axis``, computed without overflow."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    out = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    # exp(out) <= 1: the VJP never exponentiates a large number.
    return out, lambda g: g - np.exp(out) * np.sum(g, axis=axis, keepdims=True)


@op
@primitive(num_inputs=1)
def moments(x, axes, keepdims=False):
    """Return ``(mean, variance)`` of ``x`` over ``axes`` (an int, or a list or tuple of them)."""
    x = np.asarray(x)
    axes = tuple(axes) if isinstance(axes, list) else axes
    mu = np.mean(x, axis=axes, keepdims=True)
    centered = x - mu
    variance = np.mean(centered * centered, axis=axes, keepdims=True)
    kshape = mu.shape
    if keepdims:
        mu_out, var_out = mu, variance
    else:
        reduced = _reduced_axes(axes, x.ndim)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in reduced)
        mu_out, var_out = mu.reshape(shape), variance.reshape(shape)
    n = _count(x.shape, axes)

    def vjp(gs):
        g_mean, g_var = gs
        return g_mean.reshape(kshape) / n + centered * (g_var.reshape(kshape) * (2 / n))

    return (mu_out, var_out), vjp


@op
@primitive(num_inputs=3)
def dense(x, kernel, bias=None):
    """Fused ``x @ kernel + bias`` recorded as one op.

    Args:
        x: inputs of shape ``(..., in)``.
        kernel: weights of shape ``(in, out)``.
        bias: optional ``(out,)`` offsets.
    """
    return _dense(x, kernel, bias, True)


def _dense(x, kernel, bias, add_bias):
    """``dense``'s value and VJP; ``add_bias`` False: the bias left for the caller to add (its VJP is the
    same)."""
    x = np.asarray(x)
    kernel = np.asarray(kernel)
    if kernel.ndim != 2 or x.ndim == 0 or x.shape[-1] != kernel.shape[0]:
        raise ValueError(
            "dense expects x of shape (..., in) and a kernel of shape (in, out). "
            f"Received: x.shape={x.shape}, kernel.shape={kernel.shape}"
        )
    # One 2-D product: NumPy runs (..., in) @ (in, out) as one small product per leading index.
    rows = x.reshape(_pymath.prod(x.shape[:-1]), x.shape[-1]) if x.ndim > 2 else x
    out = np.matmul(rows, kernel).reshape(x.shape[:-1] + kernel.shape[1:])
    if bias is not None and add_bias:
        bias = np.asarray(bias)
        if bias.ndim <= 1:
            out += bias  # out is a fresh array: add in place, saving an allocation
        else:
            out = out + bias

    def vjp(g):
        def d_x():
            if g.ndim > 2:
                return np.matmul(g.reshape(_pymath.prod(g.shape[:-1]), g.shape[-1]), kernel.T).reshape(x.shape)
            return np.matmul(g, kernel.T)

        def d_kernel():
            if x.ndim == 1:
                return np.outer(x, g)
            if x.ndim == 2:
                return np.matmul(x.T, g)
            # The forward's 2-D rows (a copy where x was not contiguous, as the recurrent layers' time-major view).
            return np.matmul(rows.T, g.reshape(rows.shape[0], g.shape[-1]))

        def d_bias():
            return np.add.reduce(g, tuple(range(g.ndim - 1)))  # g.sum's reduction, without its wrapper

        return d_x, d_kernel, None if bias is None else d_bias

    return out, vjp


@primitive(num_inputs=3)
def dense_activation(x, kernel, bias=None, activation=None):
    """``activation(dense(x, kernel, bias))`` recorded as one op, ``activation`` a one-input primitive (relu,
    sigmoid, tanh, softmax over the last axis): a Dense layer's step with one tape record instead of two.

    The two ops' own functions run in turn, so the values and the gradients are theirs; the activation's input
    cotangent is cast to the product's dtype as the tape casts it between two records."""
    if activation is relu:
        fused = _bias_relu_kernels(x, kernel, bias)
        if fused is not None:
            return _dense_relu(fused, x, kernel, bias)
    z, dense_vjp = dense._kgraph_primitive.fn(x, kernel, bias)
    out, activation_vjp = activation._kgraph_primitive.fn(z)

    def vjp(g):
        g_z = activation_vjp(g)
        return dense_vjp(g_z if g_z.dtype == z.dtype else g_z.astype(z.dtype))

    return out, vjp


def _bias_relu_kernels(x, kernel, bias):
    """The compiled kernels where a Dense layer's bias and relu may run as one loop (numba loaded, float32 or
    float64 arrays of one dtype, a bias of one value per unit, enough elements), else None."""
    fused = compiled.loaded()
    if (fused is None or type(x) is not np.ndarray or type(kernel) is not np.ndarray or type(bias) is not np.ndarray
            or bias.ndim != 1 or kernel.ndim != 2 or bias.shape[0] != kernel.shape[1] or x.dtype != kernel.dtype
            or bias.dtype != kernel.dtype or x.size // max(kernel.shape[0], 1) * bias.shape[0] < _COMPILED_RELU_MIN
            or not compiled.usable(kernel, bias)):
        return None
    return fused


def _dense_relu(fused, x, kernel, bias):
    """``relu(dense(x, kernel, bias))`` with the bias added and the relu taken in one compiled pass
    (``fused.bias_relu``), and relu's VJP without its checks: the same values as the two ops, with one decision
    for the forward and the backward instead of four."""
    z, dense_vjp = _dense(x, kernel, bias, False)
    rows = z.reshape(-1, z.shape[-1])  # (the product's fresh C-ordered array)
    out = np.empty_like(z)
    zero = z.dtype.type(0)
    fused.bias_relu(rows, bias, out.reshape(rows.shape), zero)

    def vjp(g):
        if type(g) is not np.ndarray or g.shape != z.shape or g.dtype != z.dtype or not g.flags.c_contiguous:
            g_z = relu_gradient(g, z)
            return dense_vjp(g_z if g_z.dtype == z.dtype else g_z.astype(z.dtype))
        g_z = np.empty_like(g)
        if rows.shape[1] < 2:  # (one column: NumPy sums it pairwise, not row after row)
            fused.relu_gradient(g.reshape(-1), z.reshape(-1), g_z.reshape(-1), zero, z.dtype.type(1))
            return dense_vjp(g_z)
        d_bias = np.empty(rows.shape[1], z.dtype)
        fused.relu_gradient_rows(g.reshape(rows.shape), rows, g_z.reshape(rows.shape), d_bias, zero, z.dtype.type(1))
        d_x, d_kernel, numpy_d_bias = dense_vjp(g_z)
        return d_x, d_kernel, d_bias if _row_sums_agree(g_z, d_bias, numpy_d_bias) else numpy_d_bias

    return out, vjp


_ROW_SUMS = {}  # (shape, dtype) -> whether NumPy's sum over the leading axes equals the row-after-row sum


def _row_sums_agree(g_z, d_bias, numpy_d_bias):
    """Whether ``d_bias`` (summed row after row by the compiled loop) is NumPy's bias gradient of ``g_z``: checked
    bit for bit at the first gradient of each shape and dtype (NumPy adds the rows of a C-ordered array of two or
    more columns in order; were a NumPy to sum otherwise, its sums are taken)."""
    key = (g_z.shape, g_z.dtype)
    agree = _ROW_SUMS.get(key)
    if agree is None:
        expected = numpy_d_bias()
        agree = _ROW_SUMS[key] = expected.shape == d_bias.shape and bool(
            np.all(expected.view(np.uint8) == d_bias.view(np.uint8)))
    return agree


@op
@_no_gradient
def one_hot(x, num_classes, axis=-1, dtype=None):
    """One-hot encode integer ``x`` with ``num_classes`` classes on ``axis`` (no gradient; a replayed training
    step encodes each batch).

    Out-of-range indices give all-zero rows. ``dtype`` defaults to floatx.
    """
    x = np.asarray(x)
    out = (x[..., None] == np.arange(num_classes)).astype(backend.standardize_dtype(dtype))
    if axis != -1:
        out = np.moveaxis(out, -1, axis)
    return out
