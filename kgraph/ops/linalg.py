"""Linear algebra of ``keras.ops.linalg`` on batches of matrices (the last two axes).

``inv``, ``det``, ``slogdet``, ``solve``, ``solve_triangular``, ``cholesky``
and ``eigh`` (distinct eigenvalues) have gradients; ``qr``, ``svd``, ``eig``,
``lstsq``, ``pinv`` and ``matrix_rank`` do not.
"""
import numpy as np

from kgraph import ops as _k
from kgraph.autodiff import primitive
from kgraph.ops.math import _no_gradient
from kgraph.ops.numpy_math import floating

__all__ = [
    "cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "logdet", "lstsq", "matrix_rank", "norm", "pinv",
    "qr", "slogdet", "solve", "solve_triangular", "svd",
]


def _t(a):
    return np.swapaxes(a, -1, -2)


def _nan_where_singular(fn, a, *rest):
    """``fn(a, *rest)`` over a batch of matrices, NaN for those it cannot factor (singular, not positive-definite).

    JAX's rule rather than an error, so one bad matrix spoils only its own result (and zero placeholders
    can stand for a symbolic input).
    """
    try:
        return fn(a, *rest)
    except np.linalg.LinAlgError:
        pass
    batch = np.broadcast_shapes(a.shape[:-2], *(r.shape[:-2] for r in rest if r.ndim >= a.ndim))
    out = None
    for index in np.ndindex(*batch):
        pick = lambda t: t[tuple(i % d for i, d in zip(index, t.shape[:-2]))] if t.ndim >= a.ndim else t  # noqa: E731
        try:
            value = fn(pick(a), *(pick(r) for r in rest))
        except np.linalg.LinAlgError:
            value = None
        if out is None and value is not None:
            out = np.full(batch + value.shape, np.nan, dtype=value.dtype)
        if value is not None:
            out[index] = value
    if out is None:
        shape = fn(np.eye(a.shape[-1], dtype=a.dtype), *(pick(r) for r in rest)).shape
        out = np.full(batch + shape, np.nan, dtype=a.dtype)
    return out


def _square(name, x):
    x = np.asarray(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{name} expects square matrices in the last two axes. Received: x.shape={x.shape}")
    return x if x.dtype.kind in "fc" else x.astype("float32")


@primitive
def inv(x):
    """Inverse of each square matrix (NaN for a singular one)."""
    x = _square("inv", x)
    out = _nan_where_singular(np.linalg.inv, x)
    return out, lambda g: -_t(out) @ g @ _t(out)


@primitive
def det(x):
    """Determinant of each square matrix."""
    x = _square("det", x)
    out = np.linalg.det(x)
    return out, lambda g: (g * out)[..., None, None] * _t(np.linalg.inv(x))


@primitive
def slogdet(x):
    """``(sign, log |det|)`` of each square matrix."""
    x = _square("slogdet", x)
    sign, logabs = np.linalg.slogdet(x)
    return (sign, logabs), lambda gs: gs[1][..., None, None] * _t(np.linalg.inv(x))


def logdet(x):
    """Log-determinant of each (positive-definite) matrix."""
    return slogdet(x)[1]


def _vector_rhs(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


@primitive
def solve(a, b):
    """``x`` with ``a @ x = b`` (``b``: matrices, or vectors of ``a``'s size)."""
    a, b = _square("solve", a), np.asarray(b)
    vector = _vector_rhs(a, b)
    rhs = b[..., None] if vector else b
    out = _nan_where_singular(np.linalg.solve, a, rhs)

    def vjp(g):
        gb = np.linalg.solve(_t(a), g[..., None] if vector else g)
        return lambda: -gb @ _t(out), (gb[..., 0] if vector else gb)

    return (out[..., 0] if vector else out), vjp


@primitive(num_inputs=2)
def solve_triangular(a, b, lower=False):
    """``x`` with ``a @ x = b`` for triangular ``a`` (only its ``lower`` or upper triangle is read)."""
    a = _square("solve_triangular", a)
    a = np.tril(a) if lower else np.triu(a)
    b = np.asarray(b)
    vector = _vector_rhs(a, b)
    rhs = b[..., None] if vector else b
    out = _nan_where_singular(np.linalg.solve, a, rhs)

    def vjp(g):
        gb = np.linalg.solve(_t(a), g[..., None] if vector else g)
        ga = -gb @ _t(out)
        return lambda: np.tril(ga) if lower else np.triu(ga), (gb[..., 0] if vector else gb)

    return (out[..., 0] if vector else out), vjp


@primitive(num_inputs=1)
def cholesky(x, upper=False):
    """Cholesky factor of each symmetric positive-definite matrix (lower, or upper when ``upper``; NaN if not)."""
    x = _square("cholesky", x)
    low = _nan_where_singular(np.linalg.cholesky, x)

    def vjp(g):
        gl = _t(g) if upper else g
        phi = np.tril(_t(low) @ gl)
        phi[..., np.arange(phi.shape[-1]), np.arange(phi.shape[-1])] *= 0.5
        inv_low = np.linalg.inv(low)
        s = _t(inv_low) @ phi @ inv_low
        return 0.5 * (s + _t(s))

    return (_t(low).copy() if upper else low), vjp


def cholesky_inverse(x, upper=False):
    """Inverse of the matrix whose Cholesky factor is ``x``."""
    factor_inv = inv(x)
    return _k.matmul(factor_inv, _k.swapaxes(factor_inv, -1, -2)) if upper \
        else _k.matmul(_k.swapaxes(factor_inv, -1, -2), factor_inv)


@primitive
def eigh(x):
    """Eigenvalues (ascending) and eigenvectors of each symmetric matrix; the gradient assumes distinct ones."""
    x = _square("eigh", x)
    w, v = np.linalg.eigh(x)

    def vjp(gs):
        gw, gv = gs
        gap = w[..., None, :] - w[..., :, None]
        eye = np.eye(w.shape[-1], dtype=bool)
        f = np.where(eye, 0, 1 / np.where(eye, 1, gap))
        inner = f * (_t(v) @ gv)
        inner[..., np.arange(w.shape[-1]), np.arange(w.shape[-1])] += gw
        ga = v @ inner @ _t(v)
        return 0.5 * (ga + _t(ga))

    return (w, v), vjp


def eig(x):
    """Eigenvalues and eigenvectors of each square matrix (complex when NumPy finds them so); no gradient."""
    return tuple(np.asarray(a) for a in np.linalg.eig(_k.convert_to_numpy(x)))


def qr(x, mode="reduced"):
    """``(q, r)`` of each matrix (``mode``: "reduced" or "complete"); no gradient."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete'. Received: mode={mode!r}")
    q, r = np.linalg.qr(_k.convert_to_numpy(x), mode=mode)
    return q, r


def svd(x, full_matrices=True, compute_uv=True):
    """``(u, s, vh)`` of each matrix, or the singular values alone; no gradient."""
    out = np.linalg.svd(_k.convert_to_numpy(x), full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


@_no_gradient
def lstsq(a, b, rcond=None):
    """Least-squares solution ``x`` of ``a @ x = b``; no gradient."""
    return np.linalg.lstsq(a, b, rcond=rcond)[0]


@_no_gradient
def pinv(x, rcond=None):
    """Moore-Penrose pseudo-inverse of each matrix; no gradient."""
    return np.linalg.pinv(x) if rcond is None else np.linalg.pinv(x, rcond=rcond)


@_no_gradient
def matrix_rank(x, tol=None):
    """Rank of each matrix by its singular values (int32)."""
    return np.asarray(np.linalg.matrix_rank(x, tol=tol), dtype=np.int32)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norm (``axis`` an int, or all of a 1-D ``x``) or matrix norm (two axes, or all of a 2-D ``x``)."""
    x = floating(x)
    rank = len(_k.shape(x))
    if axis is None:
        axes = tuple(range(rank))
        if ord is None:
            out = _k.sqrt(_k.sum(_k.square(x), axis=axes, keepdims=keepdims))
            return out
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % rank for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) != 2:
        raise ValueError(f"norm takes one axis (a vector norm) or two (a matrix norm). Received: axis={axis}")
    return _matrix_norm(x, ord, axes, keepdims)


def _vector_norm(x, ord, axis, keepdims):
    a = _k.abs(x)
    if ord is None or ord == 2:
        return _k.sqrt(_k.sum(_k.square(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return _k.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return _k.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _k.sum(_k.cast(_k.not_equal(x, 0), x.dtype), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid ord for a vector norm. Received: ord={ord!r}")
    return _k.power(_k.sum(_k.power(a, float(ord)), axis=axis, keepdims=keepdims), 1 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord in (None, "fro"):
        return _k.sqrt(_k.sum(_k.square(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        sums = _k.sum(_k.abs(x), axis=summed, keepdims=True)
        pick = _k.max if ord in (1, np.inf) else _k.min
        out = pick(sums, axis=other, keepdims=True)
        return out if keepdims else _k.squeeze(out, axis=axes)
    if ord in ("nuc", 2, -2):
        moved = np.moveaxis(_k.convert_to_numpy(x), axes, (-2, -1))
        s = np.linalg.svd(moved, compute_uv=False)
        out = {"nuc": s.sum(-1), 2: s.max(-1), -2: s.min(-1)}[ord]
        return np.expand_dims(out, axes) if keepdims else out
    raise ValueError(f"Invalid ord for a matrix norm. Received: ord={ord!r}")
