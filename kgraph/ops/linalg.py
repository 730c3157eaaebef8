"""Linear algebra of ``keras.ops.linalg`` on batches of matrices (the last two axes).

``inv``, ``det``, ``slogdet``, ``solve``, ``solve_triangular``, ``cholesky``,
``eigh`` (distinct eigenvalues) and ``lu_factor`` have gradients; ``qr``,
``svd``, ``eig``, ``lstsq``, ``pinv`` and ``matrix_rank`` do not. ``jvp`` is a
Jacobian-vector product of any function, built from reverse-mode passes.
"""
import numpy as np

from kgraph import backend, tree
from kgraph.backend.autodiff import GradientTape, _value, on_tape, primitive
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.math import _no_gradient
from kgraph.ops.numpy_math import floating
from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import squeeze as _squeeze
from kgraph.ops.shape import swapaxes as _swapaxes

__all__ = [
    "cholesky", "cholesky_inverse", "det", "eig", "eigh", "inv", "jvp", "logdet", "lstsq", "lu_factor", "matrix_rank",
    "norm", "pinv", "qr", "slogdet", "solve", "solve_triangular", "svd",
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


@op
@primitive
def inv(x):
    """Inverse of each square matrix (NaN for a singular one)."""
    x = _square("inv", x)
    out = _nan_where_singular(np.linalg.inv, x)
    return out, lambda g: -_t(out) @ g @ _t(out)


@op
@primitive
def det(x):
    """Determinant of each square matrix."""
    x = _square("det", x)
    out = np.linalg.det(x)
    return out, lambda g: (g * out)[..., None, None] * _t(np.linalg.inv(x))


@op
@primitive
def slogdet(x):
    """``(sign, log |det|)`` of each square matrix."""
    x = _square("slogdet", x)
    sign, logabs = np.linalg.slogdet(x)
    return (sign, logabs), lambda gs: gs[1][..., None, None] * _t(np.linalg.inv(x))


@op
def logdet(x):
    """Log-determinant of each (positive-definite) matrix."""
    return slogdet(x)[1]


def _vector_rhs(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


@op
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


@op
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


@op
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


@op
def cholesky_inverse(x, upper=False):
    """Inverse of the matrix whose Cholesky factor is ``x``."""
    factor_inv = inv(x)
    return _math.matmul(factor_inv, _swapaxes(factor_inv, -1, -2)) if upper \
        else _math.matmul(_swapaxes(factor_inv, -1, -2), factor_inv)


@op
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


def _lu_pivoted(a):
    """LU with partial pivoting of a stack of matrices ``(batch, m, n)``, in place: LAPACK getrf's steps.

    Each step picks the first row of largest magnitude in the column (``|re| + |im|`` for complex, as
    LAPACK does), swaps it up, scales the column below by the pivot's reciprocal (skipped for a zero pivot,
    which leaves a zero on U's diagonal) and updates the trailing block. Returns the 0-based pivot rows.
    """
    batch, m, n = a.shape
    k = min(m, n)
    pivots = np.empty((batch, k), np.int32)
    rows = np.arange(batch)
    for j in range(k):
        column = a[:, j:, j]
        size = np.abs(column.real) + np.abs(column.imag) if a.dtype.kind == "c" else np.abs(column)
        p = j + np.argmax(size, axis=1)
        pivots[:, j] = p
        top = a[rows, j].copy()
        a[rows, j] = a[rows, p]
        a[rows, p] = top
        pivot = a[:, j, j]
        nonzero = pivot != 0
        scale = np.where(nonzero, 1 / np.where(nonzero, pivot, 1), 1)
        a[:, j + 1:, j] *= scale[:, None]
        a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, None, j, j + 1:]
    return pivots


def _row_order(pivots, m):
    """The rows of the input in the order of ``L @ U``: ``x[order] = L @ U``, from LAPACK's row swaps."""
    order = np.broadcast_to(np.arange(m), pivots.shape[:-1] + (m,)).copy()
    flat_order, flat_pivots = order.reshape(-1, m), pivots.reshape(-1, pivots.shape[-1])
    rows = np.arange(flat_order.shape[0])
    for j in range(flat_pivots.shape[1]):
        p = flat_pivots[:, j]
        flat_order[rows, j], flat_order[rows, p] = flat_order[rows, p], flat_order[rows, j]
    return flat_order.reshape(order.shape)


def _solve_lower_t(low, b):
    """``low^-T @ b``."""
    return np.linalg.solve(_t(low), b)


def _times_upper_inv_t(b, up):
    """``b @ up^-T`` (NaN for a singular ``up``: the factorization is not differentiable there)."""
    return _t(_nan_where_singular(np.linalg.solve, up, _t(b)))


def _lu_square_vjp(low, up, g_low, g_up):
    """Cotangent of ``B = L @ U`` (square, unpivoted) from those of the strictly lower ``L`` and upper ``U``.

    From ``L^-1 dB U^-1 = L^-1 dL + dU U^-1`` (strictly lower plus upper part).
    """
    phi = np.tril(_t(low) @ g_low, -1) + np.triu(g_up @ _t(up))
    return _times_upper_inv_t(_solve_lower_t(low, phi), up)


def _lu_vjp(lu, order, g):
    """Cotangent of the input of ``lu_factor`` from that of its packed ``lu`` (wide and tall matrices too).

    A wide input's right block ``B2 = L @ U2`` and a tall input's bottom block ``B2 = L2 @ U`` each add a
    term to the square block's cotangent and have a cotangent of their own.
    """
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k, dtype=lu.dtype)
    up = np.triu(lu[..., :k, :])
    g_low, g_up = np.tril(g[..., :, :k], -1), np.triu(g[..., :k, :])
    if m < n:
        g_right = _solve_lower_t(low, g_up[..., k:])
        g_low = g_low - np.tril(g_right @ _t(up[..., k:]), -1)
        g_b = np.concatenate([_lu_square_vjp(low, up[..., :k], g_low, g_up[..., :k]), g_right], axis=-1)
    elif m > n:
        g_bottom = _times_upper_inv_t(g_low[..., k:, :], up)
        g_up = g_up - np.triu(_t(low[..., k:, :]) @ g_bottom)
        g_b = np.concatenate([_lu_square_vjp(low[..., :k, :], up, g_low[..., :k, :], g_up), g_bottom], axis=-2)
    else:
        g_b = _lu_square_vjp(low, up, g_low, g_up)
    g_x = np.empty_like(g_b)
    np.put_along_axis(g_x, order[..., None], g_b, axis=-2)
    return g_x


@op
@primitive
def lu_factor(x):
    """LU factorization with partial pivoting of each matrix (the last two axes, any ``m x n``).

    Returns ``(lu, pivots)`` as Keras's torch backend does: ``lu`` packs the unit lower triangle L (below
    the diagonal) and U (on and above it), ``pivots`` (int32, 0-based, ``min(m, n)`` per matrix) says which
    row was swapped with row ``i`` at step ``i``. A singular matrix is factored too (U has a zero on its
    diagonal; torch raises instead). Integer inputs compute in floatx. The gradient flows from ``lu``
    (NaN for a singular matrix, where the factors are not differentiable).
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"lu_factor expects matrices: an input of rank 2 or more. Received: x.shape={x.shape}")
    if x.dtype.kind not in "fc":
        x = x.astype(backend.floatx())
    m, n = x.shape[-2:]
    lu = x.reshape((-1, m, n)).copy()
    pivots = _lu_pivoted(lu)
    lu, pivots = lu.reshape(x.shape), pivots.reshape(x.shape[:-2] + (min(m, n),))
    return (lu, pivots), lambda gs: _lu_vjp(lu, _row_order(pivots, m), gs[0])


@op
def eig(x):
    """Eigenvalues and eigenvectors of each square matrix (complex when NumPy finds them so); no gradient."""
    return tuple(np.asarray(a) for a in np.linalg.eig(_math.convert_to_numpy(x)))


@op
def qr(x, mode="reduced"):
    """``(q, r)`` of each matrix (``mode``: "reduced" or "complete"); no gradient."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"mode must be 'reduced' or 'complete'. Received: mode={mode!r}")
    q, r = np.linalg.qr(_math.convert_to_numpy(x), mode=mode)
    return q, r


@op
def svd(x, full_matrices=True, compute_uv=True):
    """``(u, s, vh)`` of each matrix, or the singular values alone; no gradient."""
    out = np.linalg.svd(_math.convert_to_numpy(x), full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


@op
@_no_gradient
def lstsq(a, b, rcond=None):
    """Least-squares solution ``x`` of ``a @ x = b``; no gradient."""
    return np.linalg.lstsq(a, b, rcond=rcond)[0]


@op
@_no_gradient
def pinv(x, rcond=None):
    """Moore-Penrose pseudo-inverse of each matrix; no gradient."""
    return np.linalg.pinv(x) if rcond is None else np.linalg.pinv(x, rcond=rcond)


@op
@_no_gradient
def matrix_rank(x, tol=None):
    """Rank of each matrix by its singular values (int32)."""
    return np.asarray(np.linalg.matrix_rank(x, tol=tol), dtype=np.int32)


@op
def norm(x, ord=None, axis=None, keepdims=False):
    """Vector norm (``axis`` an int, or all of a 1-D ``x``) or matrix norm (two axes, or all of a 2-D ``x``)."""
    x = floating(x)
    rank = len(_shape(x))
    if axis is None:
        axes = tuple(range(rank))
        if ord is None:
            out = _math.sqrt(_reductions.sum(_math.square(x), axis=axes, keepdims=keepdims))
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
    a = _math.abs(x)
    if ord is None or ord == 2:
        return _math.sqrt(_reductions.sum(_math.square(x), axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return _reductions.max(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return _reductions.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _reductions.sum(_math.cast(_math.not_equal(x, 0), x.dtype), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid ord for a vector norm. Received: ord={ord!r}")
    return _math.power(_reductions.sum(_math.power(a, float(ord)), axis=axis, keepdims=keepdims), 1 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    row, col = axes
    if ord in (None, "fro"):
        return _math.sqrt(_reductions.sum(_math.square(x), axis=axes, keepdims=keepdims))
    if ord in (1, -1, np.inf, -np.inf):
        summed, other = (row, col) if ord in (1, -1) else (col, row)
        sums = _reductions.sum(_math.abs(x), axis=summed, keepdims=True)
        pick = _reductions.max if ord in (1, np.inf) else _reductions.min
        out = pick(sums, axis=other, keepdims=True)
        return out if keepdims else _squeeze(out, axis=axes)
    if ord in ("nuc", 2, -2):
        moved = np.moveaxis(_math.convert_to_numpy(x), axes, (-2, -1))
        s = np.linalg.svd(moved, compute_uv=False)
        out = {"nuc": s.sum(-1), 2: s.max(-1), -2: s.min(-1)}[ord]
        return np.expand_dims(out, axes) if keepdims else out
    raise ValueError(f"Invalid ord for a matrix norm. Received: ord={ord!r}")


@op
def jvp(fun, primals, tangents, has_aux=False):
    """Jacobian-vector product of ``fun`` at ``primals`` along ``tangents``, exact, from reverse-mode passes.

    kgraph differentiates in reverse mode only, so this runs ``fun`` once on a persistent ``GradientTape``
    and then one backward pass per element of ``fun``'s float outputs (two per complex element): each pass
    gives one row of the Jacobian, dotted with the tangents. The cost is that of ``fun`` plus one backward
    pass per output element; keep outputs small. The results are constants to an enclosing tape.

    Args:
        fun: a function of ``len(primals)`` arguments returning an array or a nest (tuple, list, dict) of
            arrays; with ``has_aux``, a pair ``(output, aux)``.
        primals: a tuple or list of the arguments (arrays, or nests of float arrays).
        tangents: a tuple or list with the structure and shapes of ``primals``.
        has_aux: whether ``fun`` returns ``(output, aux)``; ``aux`` is returned unchanged.

    Returns:
        ``(primals_out, tangents_out)``, or ``(primals_out, tangents_out, aux)`` with ``has_aux``;
        ``tangents_out`` has the structure, shapes and dtypes of ``primals_out`` (zeros for integer outputs).
    """
    leaves, tangent_leaves = _jvp_leaves(primals, tangents)
    with GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(leaves)
        # TapeArray views, so NumPy operators in fun (``a * b``, ``a[0]``) are recorded too.
        result = fun(*tree.pack_sequence_as(list(primals), [on_tape(leaf) for leaf in leaves]))
    if has_aux and not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise ValueError("With has_aux=True, fun must return a pair (output, aux). "
                         f"Received: type(output)={type(result).__name__}")
    out, aux = result if has_aux else (result, None)
    primals_out = tree.map_structure(_plain, out)
    tangents_out = tree.pack_sequence_as(out, [_jvp_of_output(tape, o, leaves, tangent_leaves)
                                               for o in tree.flatten(out)])
    if not has_aux:
        return primals_out, tangents_out
    return primals_out, tangents_out, tree.map_structure(lambda v: _plain(v) if isinstance(v, np.ndarray) else v, aux)


def _plain(x):
    """A plain ndarray of an op result (a TapeArray or a Variable becomes its ndarray)."""
    return np.asarray(_value(x))


def _jvp_leaves(primals, tangents):
    """Fresh float arrays for the primals (distinct, so the tape tells them apart) and the matching tangents."""
    for name, value in (("primals", primals), ("tangents", tangents)):
        if not isinstance(value, (tuple, list)):
            raise ValueError(f"jvp takes {name} as a tuple or list of fun's arguments. "
                             f"Received: type({name})={type(value).__name__}")
    leaves, tangent_leaves = tree.flatten(list(primals)), tree.flatten(list(tangents))
    if len(primals) != len(tangents) or len(leaves) != len(tangent_leaves):
        raise ValueError("jvp needs tangents with the structure of primals. "
                         f"Received: {len(leaves)} primal arrays, {len(tangent_leaves)} tangent arrays")
    arrays = [np.array(_plain(_math.convert_to_tensor(p))) for p in leaves]
    tangent_arrays = [_plain(_math.convert_to_tensor(t)) for t in tangent_leaves]
    for i, (p, t) in enumerate(zip(arrays, tangent_arrays)):
        if p.dtype.kind not in "fc":
            raise ValueError(f"jvp differentiates float or complex primals only. Received: primal {i} of "
                             f"dtype {p.dtype}")
        if p.shape != t.shape:
            raise ValueError(f"jvp needs each tangent to have its primal's shape. Received: primal {i} of "
                             f"shape {p.shape}, tangent of shape {t.shape}")
    return arrays, tangent_arrays


def _jvp_of_output(tape, out, leaves, tangent_leaves):
    """``J @ t`` for one output array: one backward pass per element (two for a complex element).

    A cotangent ``c`` of a complex input (``dL/dx - i dL/dy``) turns a tangent ``t`` into ``Re(sum(c * t))``;
    a complex output is its real part's product plus ``i`` times its imaginary part's (seeded with ``-i``).
    """
    value = _plain(out)
    if value.dtype.kind not in "fc":
        return np.zeros_like(value)
    seeds = (1, -1j) if value.dtype.kind == "c" else (1,)
    flat = np.zeros(value.size, np.complex128 if value.dtype.kind == "c" else np.float64)
    for i in range(value.size):
        for unit, seed in zip((1, 1j), seeds):
            one_hot = np.zeros(value.size, value.dtype)
            one_hot[i] = seed
            grads = tape.gradient(out, leaves, output_gradients=one_hot.reshape(value.shape),
                                  unconnected_gradients="zero")
            flat[i] += unit * sum(np.real(np.sum(g * t)) for g, t in zip(grads, tangent_leaves))
    return flat.reshape(value.shape).astype(value.dtype)
