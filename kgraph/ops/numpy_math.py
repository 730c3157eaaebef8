"""Elementwise math of ``keras.ops.numpy`` that ``kgraph.ops.math`` lacks: trigonometry, logarithms, tests.

Float functions follow Keras's dtype rule: integer and boolean inputs compute in floatx.
"""
import math as _pymath

import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import _value, on_tape, primitive
from kgraph.ops import math as _math
from kgraph.ops.math import _no_gradient
from kgraph.ops.operations import op

__all__ = [
    "allclose", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "cbrt", "cosh", "deg2rad", "divide_no_nan", "erfc", "erfinv", "exp2", "fabs", "fmax", "fmin", "fmod", "gcd",
    "heaviside", "hypot", "isclose", "isinf", "isneginf", "isposinf", "lcm", "ldexp", "left_shift", "log10",
    "log2", "logaddexp", "logaddexp2", "logical_xor", "nan_to_num", "nextafter", "rad2deg", "right_shift",
    "signbit", "sinc", "sinh", "tan", "trunc",
]


def dtype_of(x):
    """The NumPy dtype of an op argument (an array, Variable, KerasTensor or Python number)."""
    dtype = getattr(x, "dtype", None)
    return np.dtype(dtype) if dtype is not None else np.asarray(x).dtype


def floating(x):
    """``x`` as a float tensor (cast to floatx if it is not: Keras's rule for float functions).

    A float array a tape tracks comes back as a TapeArray, so operators applied to it are recorded.
    """
    if isinstance(x, (bool, int, float)):
        return np.asarray(x, dtype=backend.floatx())
    return on_tape(x) if dtype_of(x).kind in "fc" else _math.cast(x, backend.floatx())


def _unary_primitive(name, forward, derivative, doc):
    """A float primitive ``name(x)`` computing ``forward`` with VJP ``g * derivative(x, out)``."""

    def op(x):
        x = np.asarray(x)
        if x.dtype.kind not in "fc":
            x = x.astype(backend.floatx())
        out = forward(x)
        return out, lambda g: g * derivative(x, out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return primitive(op)


arcsin = op(_unary_primitive("arcsin", np.arcsin, lambda x, y: 1 / np.sqrt(1 - x * x), "Elementwise inverse sine."))
arccos = op(_unary_primitive("arccos", np.arccos, lambda x, y: -1 / np.sqrt(1 - x * x), "Elementwise inverse cosine."))
arctan = op(_unary_primitive("arctan", np.arctan, lambda x, y: 1 / (1 + x * x), "Elementwise inverse tangent."))
arcsinh = op(_unary_primitive("arcsinh", np.arcsinh, lambda x, y: 1 / np.sqrt(x * x + 1),
                              "Elementwise inverse hyperbolic sine."))
arccosh = op(_unary_primitive("arccosh", np.arccosh, lambda x, y: 1 / np.sqrt(x * x - 1),
                              "Elementwise inverse hyperbolic cosine."))
arctanh = op(_unary_primitive("arctanh", np.arctanh, lambda x, y: 1 / (1 - x * x),
                              "Elementwise inverse hyperbolic tangent."))
sinh = op(_unary_primitive("sinh", np.sinh, lambda x, y: np.cosh(x), "Elementwise hyperbolic sine."))
cosh = op(_unary_primitive("cosh", np.cosh, lambda x, y: np.sinh(x), "Elementwise hyperbolic cosine."))
tan = op(_unary_primitive("tan", np.tan, lambda x, y: 1 + y * y, "Elementwise tangent."))


@op
@primitive
def arctan2(x1, x2):
    """Elementwise angle of the point ``(x2, x1)`` in ``[-pi, pi]``."""
    x1, x2 = np.asarray(floating(x1)), np.asarray(floating(x2))
    out = np.arctan2(x1, x2)

    def vjp(g):
        r2 = x1 * x1 + x2 * x2
        r2 = np.where(r2 == 0, 1, r2)
        return lambda: g * x2 / r2, lambda: -g * x1 / r2

    return out, vjp


@op
@primitive
def fmod(x1, x2):
    """Elementwise remainder of ``x1 / x2`` with the sign of ``x1`` (C's fmod)."""
    out = np.fmod(x1, x2)
    return out, lambda g: (g, lambda: -g * np.trunc(np.divide(x1, x2)))


# Giles's polynomial fits of erfinv ("Approximating the erfinv function", 2010), for w = -log(1 - x^2) below
# and above 5; two Newton steps on erf then make the result exact to float64 rounding.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                   -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
_erf64 = np.frompyfunc(_pymath.erf, 1, 1)


@op
@primitive
def erfinv(x):
    """Elementwise inverse error function (infinite at -1 and 1, NaN outside)."""
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(backend.floatx())
    z = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = -np.log((1 - z) * (1 + z))
        central, tail = np.zeros_like(z), np.zeros_like(z)
        for c in _ERFINV_CENTRAL:
            central = central * (w - 2.5) + c
        for c in _ERFINV_TAIL:
            tail = tail * (np.sqrt(w) - 3) + c
        y = np.where(w < 5, central, tail) * z
        inner = np.isfinite(y)
        for _ in range(2):
            step = (np.asarray(_erf64(np.where(inner, y, 0)), dtype=np.float64) - z) / (
                2 / _pymath.sqrt(_pymath.pi) * np.exp(-y * y))
            y = np.where(inner, y - step, y)
        y = np.where(np.abs(z) == 1, np.copysign(np.inf, z), np.where(np.abs(z) > 1, np.nan, y))
    out = y.astype(dtype)
    return out, lambda g: g * (_pymath.sqrt(_pymath.pi) / 2) * np.exp(np.square(out))


@op
def log2(x):
    """Elementwise base-2 logarithm."""
    return _math.log(floating(x)) * (1 / _pymath.log(2))


@op
def log10(x):
    """Elementwise base-10 logarithm."""
    return _math.log(floating(x)) * (1 / _pymath.log(10))


@op
def exp2(x):
    """Elementwise ``2 ** x``."""
    return _math.exp(floating(x) * _pymath.log(2))


@op
def cbrt(x):
    """Elementwise real cube root."""
    x = floating(x)
    return _math.sign(x) * _math.power(_math.abs(x), 1 / 3)


@op
def deg2rad(x):
    """Convert angles from degrees to radians."""
    return floating(x) * (_pymath.pi / 180)


@op
def rad2deg(x):
    """Convert angles from radians to degrees."""
    return floating(x) * (180 / _pymath.pi)


@op
def fabs(x):
    """Elementwise absolute value as a float."""
    return _math.abs(floating(x))


@op
def erfc(x):
    """Elementwise complementary error function ``1 - erf(x)``."""
    return 1 - _math.erf(floating(x))


@op
def hypot(x1, x2):
    """Elementwise ``sqrt(x1 ** 2 + x2 ** 2)``, scaled so large values do not overflow."""
    x1, x2 = floating(x1), floating(x2)
    big = _math.maximum(_math.abs(x1), _math.abs(x2))
    safe = _math.where(_math.equal(big, 0), 1, big)
    return big * _math.sqrt(_math.square(x1 / safe) + _math.square(x2 / safe))


@op
def logaddexp(x1, x2):
    """Elementwise ``log(exp(x1) + exp(x2))`` without overflow."""
    x1, x2 = floating(x1), floating(x2)
    return _math.maximum(x1, x2) + _math.log1p(_math.exp(-_math.abs(x1 - x2)))


@op
def logaddexp2(x1, x2):
    """Elementwise ``log2(2 ** x1 + 2 ** x2)`` without overflow."""
    x1, x2 = floating(x1), floating(x2)
    return _math.maximum(x1, x2) + log2(1 + exp2(-_math.abs(x1 - x2)))


@op
def sinc(x):
    """Elementwise normalized sinc ``sin(pi x) / (pi x)``, 1 at 0."""
    x = floating(x)
    zero = _math.equal(x, 0)
    px = _math.where(zero, 1, x) * _pymath.pi
    return _math.where(zero, 1, _math.sin(px) / px)


@op
def divide_no_nan(x1, x2):
    """Elementwise ``x1 / x2``, 0 where ``x2`` is 0."""
    zero = _math.equal(x2, 0)
    return _math.where(zero, 0, _math.divide(x1, _math.where(zero, 1, x2)))


@op
def ldexp(x1, x2):
    """Elementwise ``x1 * 2 ** x2``."""
    return floating(x1) * exp2(x2)


@op
def fmax(x1, x2):
    """Elementwise maximum ignoring NaNs (NaN only where both are NaN)."""
    return _math.where(_math.isnan(x2), x1, _math.where(_math.isnan(x1), x2, _math.maximum(x1, x2)))


@op
def fmin(x1, x2):
    """Elementwise minimum ignoring NaNs (NaN only where both are NaN)."""
    return _math.where(_math.isnan(x2), x1, _math.where(_math.isnan(x1), x2, _math.minimum(x1, x2)))


@op
def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the dtype's extremes)."""
    if dtype_of(x).kind not in "fc":
        return x
    info = np.finfo(dtype_of(x))
    big = info.max if posinf is None else posinf
    small = info.min if neginf is None else neginf
    return _math.where(_math.isnan(x), nan, _math.where(isposinf(x), big, _math.where(isneginf(x), small, x)))


# ------------------------------------------------------------------ no gradient

@op
@_no_gradient
def trunc(x):
    """Elementwise rounding toward zero; no gradient."""
    return np.trunc(x)


@op
@_no_gradient
def signbit(x):
    """Whether the sign bit is set (true for -0.0)."""
    return np.signbit(x)


@op
@_no_gradient
def heaviside(x1, x2):
    """Step function: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``."""
    out = np.heaviside(x1, x2)
    return out.astype(backend.floatx()) if out.dtype.kind not in "fc" else out


@op
@_no_gradient
def isclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|x1 - x2| <= atol + rtol * |x2|``."""
    return np.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan)


@op
@_no_gradient
def allclose(x1, x2, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether ``isclose`` holds everywhere (a boolean scalar)."""
    return np.all(np.isclose(x1, x2, rtol=rtol, atol=atol, equal_nan=equal_nan))


isinf = op(_no_gradient(np.isinf))
isposinf = op(_no_gradient(np.isposinf))
isneginf = op(_no_gradient(np.isneginf))
logical_xor = op(_no_gradient(np.logical_xor))


def _integers(name, x, y=None):
    for arg, value in (("x", x), ("y", y)):
        if value is not None and np.asarray(_value(value)).dtype.kind not in "biu":
            raise ValueError(f"{name} expects integer or boolean inputs. "
                             f"Received: {arg}.dtype={np.asarray(_value(value)).dtype}")


def _bitwise(name, fn, doc):
    def op(x, y):
        _integers(name, x, y)
        return fn(x, y)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return _no_gradient(op)


bitwise_and = op(_bitwise("bitwise_and", np.bitwise_and, "Elementwise bitwise AND of integers."))
bitwise_or = op(_bitwise("bitwise_or", np.bitwise_or, "Elementwise bitwise OR of integers."))
bitwise_xor = op(_bitwise("bitwise_xor", np.bitwise_xor, "Elementwise bitwise XOR of integers."))
left_shift = op(_bitwise("left_shift", np.left_shift, "Elementwise ``x << y`` of integers."))
right_shift = op(_bitwise("right_shift", np.right_shift, "Elementwise ``x >> y`` of integers (arithmetic)."))
bitwise_left_shift = op(_bitwise("bitwise_left_shift", np.left_shift, "Elementwise ``x << y`` of integers."))
bitwise_right_shift = op(_bitwise("bitwise_right_shift", np.right_shift, "Elementwise ``x >> y`` of integers."))
gcd = op(_bitwise("gcd", np.gcd, "Elementwise greatest common divisor of integers."))
lcm = op(_bitwise("lcm", np.lcm, "Elementwise least common multiple of integers."))


@op
@_no_gradient
def bitwise_invert(x):
    """Elementwise bitwise NOT of integers."""
    _integers("bitwise_invert", x)
    return np.invert(x)


@op
@_no_gradient
def bitwise_not(x):
    """Elementwise bitwise NOT of integers."""
    _integers("bitwise_not", x)
    return np.invert(x)


@op
@_no_gradient
def nextafter(x1, x2):
    """The next float after ``x1`` toward ``x2``."""
    return np.nextafter(floating(x1), x2)
