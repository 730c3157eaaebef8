"""Complex numbers of ``keras.ops``: real and imaginary parts, conjugate, angle, polar form, the ``(..., 2)`` view.

Values are NumPy's complex64/complex128 arrays. On a real input, ``real`` and
``conj`` are copies and ``angle`` is pi where ``x < 0`` (0 at -0.0 as torch
gives, NaN at NaN); ``imag`` is zeros and ``view_as_real`` pairs ``x`` with
zeros, as Keras's NumPy backend computes them (its torch backend refuses both).

Gradients: a real loss's cotangent for a complex array ``z = x + iy`` is
``dL/dx - i dL/dy`` (JAX's convention). With it, the vector-Jacobian product
of a holomorphic op is ``g * f'(z)``, the rule the other ops' gradients already
follow, so chains such as ``real(polar(r, t) * w)`` differentiate to the exact
real gradients of ``r``, ``t`` and ``w``.
"""
import numpy as np

from kgraph import backend
from kgraph.backend.autodiff import primitive
from kgraph.ops.math import _no_gradient, convert_to_tensor
from kgraph.ops.operations import op

__all__ = ["angle", "conj", "conjugate", "imag", "isreal", "polar", "real", "view_as_complex", "view_as_real"]


def _tensor(x):
    """``x`` as an array; Python values take Keras's default dtypes (floatx, int32, and complex of floatx)."""
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    out = convert_to_tensor(x)
    return out.astype(_complex_of(backend.floatx())) if out.dtype.kind == "c" else out


def _complex_of(real_dtype):
    """The complex dtype whose parts are ``real_dtype`` (float16 has none in NumPy: complex64)."""
    return np.result_type(real_dtype, np.complex64)


def _float_dtype(x):
    """The float dtype a float function computes ``x`` in: its own if float, else floatx (Keras's rule)."""
    return x.dtype if x.dtype.kind == "f" else np.dtype(backend.floatx())


@op
@primitive
def real(x):
    """The real part of each element (a copy of a real ``x``)."""
    x = _tensor(x)
    return np.real(x).copy(), lambda g: g


@op
@primitive
def imag(x):
    """The imaginary part of each element (zeros of ``x``'s dtype for a real ``x``)."""
    x = _tensor(x)
    if x.dtype.kind != "c":
        return np.zeros_like(x), lambda g: np.zeros_like(x)
    return np.imag(x).copy(), lambda g: -1j * g


@op
@primitive
def conjugate(x):
    """The complex conjugate of each element (a copy of a real ``x``, whatever its dtype)."""
    x = _tensor(x)
    if x.dtype.kind != "c":
        return x.copy(), lambda g: g
    return np.conjugate(x), np.conjugate


conj = op(conjugate, name="conj")


@op
@primitive
def angle(x):
    """The angle of each element in radians, in ``(-pi, pi]``; integer and boolean inputs give floatx.

    A real ``x`` has angle pi where it is negative and 0 elsewhere (NaN where it is NaN): a zero gradient.
    A complex ``x`` has gradient ``-i g / x`` (0 at the origin, where the angle jumps).
    """
    x = _tensor(x)
    if x.dtype.kind == "c":
        nonzero = x != 0
        safe = np.where(nonzero, x, 1)
        return np.angle(x), lambda g: np.where(nonzero, -1j * g / safe, 0)
    dtype = _float_dtype(x)
    out = np.where(x < 0, np.pi, 0).astype(dtype)
    if x.dtype.kind == "f":
        out = np.where(np.isnan(x), x, out).astype(dtype)
    return out, lambda g: np.zeros(x.shape, dtype)


@op
@_no_gradient
def isreal(x):
    """Whether each element's imaginary part is zero (True everywhere for a real ``x``)."""
    return np.isreal(_tensor(x))


@op
@primitive
def polar(abs_, angle):
    """``abs_ * (cos(angle) + i sin(angle))``, broadcast: complex64 from float32 parts, complex128 from float64.

    Integer parts compute in floatx; float16 ones give complex64 (NumPy has no complex32).
    """
    r, t = _tensor(abs_), _tensor(angle)
    for name, value in (("abs_", r), ("angle", t)):
        if value.dtype.kind == "c":
            raise ValueError(f"polar takes real magnitudes and angles. Received: {name}.dtype={value.dtype}")
    parts = np.result_type(_float_dtype(r), _float_dtype(t))
    r, t = r.astype(parts, copy=False), t.astype(parts, copy=False)
    cos, sin = np.cos(t), np.sin(t)
    out = np.empty(np.broadcast_shapes(r.shape, t.shape), _complex_of(parts))
    out.real, out.imag = r * cos, r * sin

    def vjp(g):
        return lambda: np.real(g) * cos - np.imag(g) * sin, lambda: -np.imag(g * out)

    return out, vjp


@op
@primitive
def view_as_complex(x):
    """Complex64 numbers ``x[..., 0] + i x[..., 1]`` from pairs in the last axis (of size 2), as Keras gives."""
    x = _tensor(x)
    if x.ndim < 1 or x.shape[-1] != 2:
        raise ValueError("view_as_complex expects a last axis of size 2 (the real and imaginary parts). "
                         f"Received: x.shape={x.shape}")
    out = x[..., 0].astype(np.complex64) + 1j * x[..., 1].astype(np.complex64)

    def vjp(g):
        pairs = np.stack([g, 1j * g], axis=-1)
        return pairs if x.dtype.kind == "c" else np.real(pairs)

    return out, vjp


@op
@primitive
def view_as_real(x):
    """The real and imaginary parts of each element, stacked in a new last axis of size 2.

    A real ``x`` gives ``(x, 0)`` pairs in its own dtype.
    """
    x = _tensor(x)
    out = np.stack([np.real(x), np.imag(x) if x.dtype.kind == "c" else np.zeros_like(x)], axis=-1)

    def vjp(g):
        return g[..., 0] - 1j * g[..., 1] if x.dtype.kind == "c" else g[..., 0]

    return out, vjp
