"""The ``keras.ops`` additions: values against NumPy, float64 finite-difference gradients, Keras 3 where installed."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import ops
from kgraph.backend.autodiff import GradientTape
from tests.gradcheck import check_gradients

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
P = RNG.random((3, 4)) * 0.8 + 0.1  # in (0.1, 0.9): inside every inverse-trigonometric domain
V = RNG.standard_normal(5)
M = RNG.standard_normal((2, 3, 3))
SPD = M @ np.swapaxes(M, -1, -2) + 3 * np.eye(3)
I = np.array([[3, -6, 5], [12, 7, -2]])
# Affine rows (no projective terms: Keras's torch backend ignores those).
CORNERS = np.array([[0, 0], [6, 0], [0, 4], [6, 4]], "float32")
SHIFTS = np.array([[0.5, 0.3], [-0.4, 0.1], [0.2, -0.6], [0.3, 0.2]], "float32")
AFFINE = np.array([[1.1, 0.2, -0.5, 0.1, 0.9, 0.7, 0, 0], [0.9, -0.3, 1.2, 0.2, 1.1, -0.4, 0, 0]], "float32")

# name -> (kgraph result, NumPy's). Exact NumPy functions, or NumPy written out for ops NumPy lacks.
VALUES = {
    "trigonometry": (lambda: [ops.arcsin(P), ops.arccos(P), ops.arctan(A), ops.arcsinh(A), ops.arccosh(P + 1),
                              ops.arctanh(P), ops.sinh(A), ops.cosh(A), ops.tan(P), ops.arctan2(A, B)],
                     lambda: [np.arcsin(P), np.arccos(P), np.arctan(A), np.arcsinh(A), np.arccosh(P + 1),
                              np.arctanh(P), np.sinh(A), np.cosh(A), np.tan(P), np.arctan2(A, B)]),
    "logs": (lambda: [ops.log2(P), ops.log10(P), ops.exp2(A), ops.logaddexp(A * 300, B), ops.logaddexp2(A, B),
                      ops.cbrt(A), ops.hypot(A * 1e200, B * 1e200), ops.sinc(np.array([0.0, 0.5]))],
             lambda: [np.log2(P), np.log10(P), np.exp2(A), np.logaddexp(A * 300, B), np.logaddexp2(A, B),
                      np.cbrt(A), np.hypot(A * 1e200, B * 1e200), np.sinc(np.array([0.0, 0.5]))]),
    "elementwise": (lambda: [ops.fmod(A, 0.7), ops.trunc(A), ops.deg2rad(A), ops.rad2deg(A), ops.heaviside(A, 0.5),
                             ops.divide_no_nan(A, np.where(B > 0, B, 0)), ops.ldexp(A, 3), ops.erfc(A),
                             ops.fmax(A, np.where(B > 0, np.nan, B)), ops.fmin(np.nan * A, B),
                             np.vectorize(__import__("math").erf)(ops.erfinv(P * 2 - 1))],
                    lambda: [np.fmod(A, 0.7), np.trunc(A), np.deg2rad(A), np.rad2deg(A), np.heaviside(A, 0.5),
                             np.where(B > 0, A / np.where(B > 0, B, 1), 0), np.ldexp(A, 3),
                             1 - np.vectorize(__import__("math").erf)(A),
                             np.fmax(A, np.where(B > 0, np.nan, B)), np.fmin(np.nan * A, B), P * 2 - 1]),
    "tests": (lambda: [ops.isclose(A, A + 1e-9), ops.allclose(A, A * (1 + 1e-7)), ops.isinf(np.array([np.inf, 1.0])),
                       ops.isposinf(np.array([np.inf, -np.inf])), ops.isneginf(np.array([np.inf, -np.inf])),
                       ops.signbit(np.array([-0.0, 1.0])), ops.logical_xor(A > 0, B > 0),
                       ops.nan_to_num(np.array([np.nan, np.inf, -np.inf]), nan=1.0)],
              lambda: [np.isclose(A, A + 1e-9), np.allclose(A, A * (1 + 1e-7)), np.array([True, False]),
                       np.array([True, False]), np.array([False, True]), np.array([True, False]),
                       np.logical_xor(A > 0, B > 0), np.nan_to_num(np.array([np.nan, np.inf, -np.inf]), nan=1.0)]),
    "bitwise": (lambda: [ops.bitwise_and(I, 6), ops.bitwise_or(I, 6), ops.bitwise_xor(I, 6), ops.bitwise_not(I),
                         ops.left_shift(I, 2), ops.right_shift(I, 1), ops.gcd(I, 4), ops.lcm(I, 4)],
                lambda: [I & 6, I | 6, I ^ 6, ~I, I << 2, I >> 1, np.gcd(I, 4), np.lcm(I, 4)]),
    "order": (lambda: [ops.sort(A, axis=0), ops.argsort(A), ops.top_k(A, 2)[0], ops.median(A, axis=1),
                       ops.quantile(A, [0.1, 0.6], axis=0, method="midpoint"), ops.percentile(A, 40, keepdims=True),
                       ops.nanmedian(np.where(A > 1, np.nan, A), axis=1), ops.cumprod(A, axis=1), ops.ptp(A, axis=0),
                       ops.count_nonzero(np.round(A), axis=1), ops.average(A, axis=1, weights=V[:4])],
              lambda: [np.sort(A, axis=0), np.argsort(A), -np.sort(-A)[:, :2], np.median(A, axis=1),
                       np.quantile(A, [0.1, 0.6], axis=0, method="midpoint"), np.percentile(A, 40, keepdims=True),
                       np.nanmedian(np.where(A > 1, np.nan, A), axis=1), np.cumprod(A, axis=1), np.ptp(A, axis=0),
                       np.count_nonzero(np.round(A), axis=1), np.average(A, axis=1, weights=V[:4])]),
    "nan_reductions": (lambda: [f(np.where(A > 0.5, np.nan, A), axis=1) for f in (
        ops.nansum, ops.nanmean, ops.nanmax, ops.nanmin, ops.nanprod, ops.nanvar, ops.nanstd, ops.nanargmax,
        ops.nancumsum, ops.nancumprod)],
                       lambda: [f(np.where(A > 0.5, np.nan, A), axis=1) for f in (
                           np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod, np.nanvar, np.nanstd,
                           np.nanargmax, np.nancumsum, np.nancumprod)]),
    "shape": (lambda: [ops.hstack([A, B]), ops.vstack([V, V]), ops.dstack([A, B]), ops.append(A, B, axis=0),
                       ops.diag(V, -2), ops.diagonal(M, 1, 1, 2), ops.trace(M, -1, 2, 1), ops.tril(A, 1),
                       ops.triu(M, -1), ops.rot90(A, 3), ops.diagflat(A[:2, :2], 1), ops.fliplr(A), ops.flipud(A),
                       ops.linspace(0.0, V, 4, endpoint=False), ops.logspace(np.array(0.0), np.array(2.0), 5),
                       ops.geomspace(np.array(1.0), np.array(1000.0), 4),
                       ops.identity(3), ops.tri(3, 4, -1)] + ops.meshgrid(V[:2], V, indexing="xy")
              + ops.array_split(V, 3),
              lambda: [np.hstack([A, B]), np.vstack([V, V]), np.dstack([A, B]), np.append(A, B, axis=0),
                       np.diag(V, -2), np.diagonal(M, 1, 1, 2), np.trace(M, -1, 2, 1), np.tril(A, 1),
                       np.triu(M, -1), np.rot90(A, 3), np.diagflat(A[:2, :2], 1), np.fliplr(A), np.flipud(A),
                       np.linspace(0.0, V, 4, endpoint=False), np.logspace(0, 2, 5), np.geomspace(1, 1000, 4),
                       np.identity(3), np.tri(3, 4, -1)] + list(np.meshgrid(V[:2], V, indexing="xy"))
              + np.array_split(V, 3)),
    "products": (lambda: [ops.dot(A, B.T), ops.dot(V[:4], B.T), ops.inner(A, B), ops.outer(V, V[:2]), ops.vdot(A, B),
                          ops.tensordot(M, A, axes=([2], [0])), ops.kron(A[:2], B[:2, :2]),
                          ops.cross(A[:, :3], B[:, :3]), ops.cross(A[:, :2], B[:, :3]), ops.trapezoid(A, dx=0.5),
                          ops.vander(V, 3), ops.corrcoef(A), ops.correlate(V, V[:2], "full"), ops.cdist(A, B)],
                 lambda: [A @ B.T, V[:4] @ B.T, np.inner(A, B), np.outer(V, V[:2]), np.vdot(A, B),
                          np.tensordot(M, A, axes=([2], [0])), np.kron(A[:2], B[:2, :2]),
                          np.cross(A[:, :3], B[:, :3]), np.cross(np.pad(A[:, :2], ((0, 0), (0, 1))), B[:, :3]),
                          np.trapezoid(A, dx=0.5),
                          np.vander(V, 3), np.corrcoef(A), np.correlate(V, V[:2], "full"),
                          np.sqrt(((A[:, None] - B[None]) ** 2).sum(-1))]),
    "search": (lambda: [ops.searchsorted(np.sort(V), A, side="right"), ops.digitize(A, np.sort(V)),
                        ops.isin(I, [5, 7], invert=True), ops.select([A > 1, A < 0], [A, B], 9.0)],
               lambda: [np.searchsorted(np.sort(V), A, side="right"), np.digitize(A, np.sort(V)),
                        np.isin(I, [5, 7], invert=True), np.select([A > 1, A < 0], [A, B], 9.0)]),
    "fft": (lambda: [*ops.fft((A, B)), *ops.fft2((M, M)), *ops.ifft2((A, B)), *ops.rfft(V, 8), ops.irfft((A, B), 7)],
            lambda: [f(z) for z in (np.fft.fft(A + 1j * B), np.fft.fft2(M + 1j * M), np.fft.ifft2(A + 1j * B),
                                    np.fft.rfft(V, 8)) for f in (np.real, np.imag)] + [np.fft.irfft(A + 1j * B, 7)]),
    "linalg": (lambda: [ops.inv(M), ops.det(M), ops.slogdet(M)[1], ops.logdet(SPD), ops.solve(M, B[:, :3].T[None]),
                        ops.cholesky(SPD), ops.cholesky(SPD, upper=True), ops.eigh(SPD)[0], ops.norm(M, axis=(1, 2)),
                        ops.norm(A, ord=1, axis=0), ops.norm(M, "nuc", axis=(2, 1)), ops.pinv(A), ops.matrix_rank(A),
                        ops.lstsq(A.T, V[:4]), ops.solve_triangular(np.tril(M), V[:3], lower=True)],
               lambda: [np.linalg.inv(M), np.linalg.det(M), np.linalg.slogdet(M)[1], np.linalg.slogdet(SPD)[1],
                        np.linalg.solve(M, B[:, :3].T[None]), np.linalg.cholesky(SPD),
                        np.swapaxes(np.linalg.cholesky(SPD), -1, -2), np.linalg.eigvalsh(SPD),
                        np.linalg.norm(M, axis=(1, 2)), np.linalg.norm(A, ord=1, axis=0),
                        np.linalg.norm(M, "nuc", axis=(2, 1)), np.linalg.pinv(A), np.linalg.matrix_rank(A),
                        np.linalg.lstsq(A.T, V[:4])[0], np.linalg.solve(np.tril(M), V[:3])]),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_match_numpy(name):
    ours, numpy = VALUES[name]
    for i, (a, e) in enumerate(zip(ours(), numpy())):
        # float64 everywhere: only rounding differs (compositions such as hypot's scaling), so 1e-10.
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(e, dtype=np.float64),
                                   rtol=1e-10, atol=1e-12, err_msg=f"{name} #{i}")


def test_float_functions_compute_integers_in_floatx_and_keep_float64():
    assert ops.log2(np.arange(1, 4)).dtype == np.float32 and ops.arcsin(np.array([0, 1])).dtype == np.float32
    assert ops.hypot(A, B).dtype == np.float64 and ops.median(np.arange(5)).dtype == np.float32
    assert ops.argsort(A).dtype == ops.top_k(A, 1)[1].dtype == ops.count_nonzero(A).dtype == np.int32


def test_scatter_slice_and_eager_only_ops():
    x = np.zeros((3, 4))
    np.testing.assert_array_equal(ops.scatter(np.array([[0, 1], [2, 3], [0, 1]]), np.array([1.0, 2.0, 3.0]), (3, 4)),
                                  [[0, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 2]])
    np.testing.assert_array_equal(ops.scatter_update(x, np.array([[1], [2]]), np.ones((2, 4)))[:, 0], [0, 1, 1])
    np.testing.assert_array_equal(ops.scatter_update(x + 1, np.array([[0, 0], [0, 0]]), np.array([2.0, 3.0]),
                                                     reduction="add")[0, 0], 6)
    np.testing.assert_array_equal(ops.slice(A, (1, 2), (2, -1)), A[1:3, 2:])
    np.testing.assert_array_equal(ops.slice_update(x, (1, 1), np.ones((1, 2))),
                                  np.pad(np.ones((1, 2)), ((1, 1), (1, 1))))
    values, counts = ops.unique(np.array([3, 1, 3]), return_counts=True)
    assert values.tolist() == [1, 3] and counts.tolist() == [1, 2]
    assert ops.unique(np.array([3, 1, 3]), size=4, fill_value=-1).tolist() == [1, 3, -1, -1]
    assert [i.tolist() for i in ops.nonzero(np.eye(2))] == [[0, 1], [0, 1]]
    assert ops.bincount(np.array([1, 1, 3])).tolist() == [0, 2, 0, 1] and ops.histogram(V, 2)[0].sum() == 5
    assert [c.tolist() for c in ops.unravel_index(np.array([5, 1]), (2, 3))] == [[1, 0], [2, 1]]
    assert np.isnan(ops.cholesky(-np.eye(2))).all()  # JAX's rule: NaN, not an error, for what cannot be factored
    assert np.isnan(ops.inv(np.stack([np.eye(2), np.zeros((2, 2))]))[1]).all()
    assert ops.size(A) == 12 and ops.dtype(A) == "float64" and ops.is_tensor(A) and not ops.is_tensor(1.0)


def test_control_flow_and_segments():
    assert ops.while_loop(lambda i, j: i < 5, lambda i, j: (i + 1, j * 2), (0, 1)) == (5, 32)
    assert ops.fori_loop(0, 3, lambda i, v: v + i, 10) == 13 and ops.switch(7, [abs, lambda v: v * 10], -2) == -20
    assert ops.cond(np.array(True), lambda: 1, lambda: 2) == 1
    carry, ys = ops.scan(lambda c, x: (c + x, c * x), 0.0, np.arange(4.0))
    assert carry == 6 and ys.tolist() == [0, 0, 2, 9]
    assert ops.associative_scan(lambda a, b: a + b, np.arange(5.0), reverse=True).tolist() == [10, 10, 9, 7, 4]
    assert ops.map(lambda x: x * 2, np.arange(3.0)).tolist() == [0, 2, 4]
    dot = ops.vectorize(lambda a, b: ops.sum(a * b), signature="(n),(n)->()")
    assert dot(np.ones((2, 3)), np.arange(3.0)).tolist() == [3, 3]
    assert ops.vectorize(lambda a, b: a * b)(np.ones((2, 1)), np.arange(3.0)).shape == (2, 3)
    assert ops.view(np.ones(2, "float32"), "int32").tolist() == [1065353216] * 2
    np.testing.assert_array_equal(ops.rearrange(M, "b (h1 h2) w -> (w h1) b h2", h1=1), M.transpose(2, 0, 1))
    data, ids = np.array([1.0, 5.0, 3.0]), np.array([0, 0, 2])
    assert ops.segment_sum(data, ids).tolist() == [6, 0, 3]
    assert ops.segment_max(data, ids, num_segments=4).tolist() == [5, -np.inf, 3, -np.inf]
    assert ops.segment_prod(data, ids, num_segments=3).tolist() == [5, 1, 3]
    assert ops.saturate_cast(np.array([300.0, -5.0]), "uint8").tolist() == [255, 0]
    assert ops.extract_sequences(np.arange(10.0), 4, 3)[:, 0].tolist() == [0, 3, 6]


def test_istft_inverts_stft_where_the_window_overlaps():
    x = RNG.standard_normal((2, 30))
    for args in [(8, 4, 8, "hann", True), (6, 2, 8, "hamming", False), (8, 3, 10, None, True)]:
        restored = ops.istft(ops.stft(x, *args[:3], window=args[3], center=args[4]), *args[:3], length=30,
                             window=args[3], center=args[4])
        inner = slice(0, 30) if args[4] else slice(args[2], 30 - args[2])  # no full overlap at the edges
        np.testing.assert_allclose(restored[:, inner], x[:, inner], atol=1e-12)


def test_ctc_loss_sums_every_alignment_and_greedy_decoding_merges_repeats():
    logits = RNG.standard_normal((1, 4, 3))
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    total = 0.0
    for path in np.ndindex(3, 3, 3, 3):  # every path whose collapse (repeats merged, blanks 0 dropped) is [1, 2]
        collapsed = [c for i, c in enumerate(path) if c != 0 and (i == 0 or c != path[i - 1])]
        if collapsed == [1, 2]:
            total += np.prod([probs[0, t, c] for t, c in enumerate(path)])
    np.testing.assert_allclose(ops.ctc_loss(np.array([[1, 2, 0]]), logits, np.array([2]), np.array([4])),
                               [-np.log(total)], rtol=1e-12)
    decoded, scores = ops.ctc_decode(np.eye(4)[[[1, 1, 0, 2, 2, 3]]] * 5, np.array([5]))
    assert decoded.tolist() == [[[1, 2, -1, -1, -1, -1]]] and scores.tolist() == [[-25.0]]


def test_custom_gradient_uses_the_given_gradient():
    @ops.custom_gradient
    def clipped_square(x):
        return ops.square(x), lambda g: ops.clip(g * 2 * x, -1.0, 1.0)

    x = np.array([0.1, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = clipped_square(x)
    np.testing.assert_allclose(tape.gradient(y, x), [0.2, 1.0])


S = RNG.standard_normal((2, 3, 3))
W = RNG.random(4) + 0.5
# Each function applies ops to the raw float64 inputs (no NumPy operator on them), as a user's code would.
GRADIENTS = {
    "trigonometry": (lambda xs: ops.arcsin(xs[0]) + ops.arccos(xs[0]) * ops.arctan(xs[1]) + ops.arctanh(xs[0])
                     + ops.arcsinh(xs[1]) + ops.arccosh(ops.add(xs[0], 1.0)) + ops.sinh(xs[1]) * ops.cosh(xs[0])
                     + ops.tan(xs[0]), [P, A]),
    "binary": (lambda xs: ops.arctan2(xs[0], xs[1]) + ops.hypot(xs[0], xs[1]) + ops.logaddexp(xs[0], xs[1])
               + ops.logaddexp2(xs[0], xs[1]) + ops.fmod(xs[0], xs[1]), [A, B]),
    "unary": (lambda xs: ops.log2(xs[0]) + ops.log10(xs[0]) + ops.exp2(xs[1]) + ops.cbrt(xs[1]) + ops.sinc(xs[1])
              + ops.erfc(xs[1]) + ops.fabs(xs[1]) + ops.deg2rad(xs[1]) + ops.erfinv(xs[0]), [P, A]),
    "activations": (lambda xs: ops.celu(xs[0], 0.7) + ops.sparse_plus(xs[0]) + ops.squareplus(xs[0])
                    + ops.soft_shrink(xs[0]) + ops.hard_shrink(xs[0]) + ops.tanh_shrink(xs[0])
                    + ops.threshold(xs[0], 0.1, 0.0) + ops.hard_tanh(xs[0]) + ops.sparse_sigmoid(xs[0])
                    + ops.glu(ops.concatenate([xs[0], xs[0]], axis=-1)), [A * 1.7]),
    "normalize": (lambda xs: ops.normalize(xs[0]) + ops.normalize(xs[0], axis=0, order=3)
                  + ops.rms_normalization(xs[0], xs[1]) + ops.sparsemax(xs[0]), [A, W]),
    "losses": (lambda xs: ops.categorical_crossentropy(xs[0], xs[1], from_logits=True)
               + ops.binary_crossentropy(ops.sigmoid(xs[0]), ops.sigmoid(xs[1]))[:, 0]
               + ops.sparse_categorical_crossentropy(np.array([0, 3, 1]), ops.softmax(xs[1])), [A, B]),
    "attention": (lambda xs: ops.dot_product_attention(xs[0], xs[1], xs[2], is_causal=True),
                  [RNG.standard_normal((1, 3, 2, 4)), RNG.standard_normal((1, 3, 1, 4)),
                   RNG.standard_normal((1, 3, 1, 4))]),
    "rearrange": (lambda xs: ops.rearrange(xs[0], "b (h w) c -> c b w h", w=3), [RNG.standard_normal((2, 6, 2))]),
    "ctc_loss": (lambda xs: ops.ctc_loss(np.array([[1, 2, 2], [3, 0, 0]]), xs[0], np.array([3, 1]), np.array([6, 4]),
                                         mask_index=0) + ops.ctc_loss(np.array([[1, 2, 2], [3, 0, 0]]), xs[0],
                                                                     np.array([2, 1]), np.array([5, 6]), mask_index=4),
                 [RNG.standard_normal((2, 6, 5))]),
    "vectorize": (lambda xs: ops.vectorize(lambda r, w: ops.sum(ops.sin(r) * w), signature="(n),(n)->()")(
        xs[0], xs[1]), [A, W]),
    "order": (lambda xs: ops.sort(xs[0], axis=0) + ops.median(xs[0], axis=1, keepdims=True)
              + ops.cumprod(xs[0], axis=1) + ops.quantile(xs[0], 0.3, axis=0) + ops.top_k(xs[0], 4)[0]
              + ops.nanmean(xs[0], axis=0) + ops.expand_dims(ops.average(xs[0], axis=1, weights=xs[1]), -1),
              [A, W]),
    "cumprod_zeros": (lambda xs: ops.cumprod(xs[0], axis=1), [A * np.array([1.0, 0.0, 1.0, 0.0])]),
    "shape": (lambda xs: ops.expand_dims(ops.trace(xs[0], 1, 1, 2), (1, 2))
              + ops.expand_dims(ops.diagonal(xs[0], -1, 2, 1), -1)[:, :1]
              + ops.tril(xs[0]) + ops.triu(xs[0], 1) * ops.rot90(xs[0], axes=(1, 2)), [S]),
    "products": (lambda xs: ops.tensordot(xs[0], xs[1], axes=([1], [1])) + ops.kron(xs[0], xs[1])[:3, :3]
                 + ops.vdot(xs[0], xs[1]) + ops.cross(xs[2], xs[3])[:, :1] + ops.cdist(xs[0], xs[1]),
                 [A, B, A[:, :3].copy(), B[:, 1:].copy()]),
    "indexing": (lambda xs: ops.slice_update(xs[0], (1, 1), ops.slice(xs[1], (0, 0), (2, 2)) * 3)
                 + ops.scatter_update(xs[0], np.array([[0], [2]]), xs[2], reduction="add")
                 + ops.scatter(np.array([[1, 1], [1, 1]]), xs[3], (3, 4))
                 + ops.segment_sum(xs[1], np.array([0, 2, 2]), num_segments=3), [A, B, A[:2].copy(), V[:2].copy()]),
    "linalg": (lambda xs: ops.inv(xs[0]) + ops.expand_dims(ops.det(xs[0]) + ops.slogdet(xs[0])[1], (1, 2))
               + ops.solve(xs[0], xs[1]) + ops.solve_triangular(xs[0], xs[1], lower=True)
               + ops.cholesky(ops.matmul(xs[1], ops.swapaxes(xs[1], -1, -2)) + 3 * np.eye(3))
               + ops.eigh(ops.matmul(xs[0], ops.swapaxes(xs[0], -1, -2)))[1][..., :1] ** 2
               + ops.expand_dims(ops.norm(xs[0], axis=(1, 2)), (1, 2)), [M, S]),
    "fft": (lambda xs: ops.concatenate([*ops.fft((xs[0], xs[1])), *ops.ifft2((xs[0], xs[1])), *ops.rfft(xs[0], 6)], -1)
            + ops.irfft((xs[0], xs[1]), 5)[:, :1], [A, B]),
    "adaptive_pooling": (lambda xs: ops.adaptive_average_pool(xs[0], (2, 3)) + ops.adaptive_max_pool(xs[0], (2, 3)),
                         [RNG.standard_normal((1, 5, 4, 2))]),
    "stft": (lambda xs: ops.concatenate(list(ops.stft(xs[0], 6, 3, 8)), -1)[..., :1, :] + ops.istft(
        ops.stft(xs[0], 8, 4, 8), 8, 4, 8, length=11)[:, None, :1], [RNG.standard_normal((2, 11))]),
    "patches": (lambda xs: ops.fold(ops.unfold(xs[0], (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), (4, 5),
                                    (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
                + ops.image.extract_patches(xs[1], 2, strides=1, padding="same")[..., 0]
                + ops.image.extract_patches_3d(ops.expand_dims(xs[1], -1), 2, strides=1, padding="same")[..., 0, 0],
                [RNG.standard_normal((1, 1, 4, 5)), RNG.standard_normal((1, 4, 5, 1))]),
    "map_coordinates": (lambda xs: ops.image.map_coordinates(xs[0], xs[1], 1, fill_mode="reflect"),
                        [RNG.standard_normal((3, 4)), np.array([[0.3, 1.6, 2.2], [-0.7, 2.5, 3.4]])]),
    "affine_transform": (lambda xs: ops.image.affine_transform(xs[0], xs[1], fill_mode="reflect"),
                         # Sample points at least 0.1 off the integer grid, where bilinear has kinks.
                         [RNG.random((2, 4, 5, 2)), np.array([[0.95, 0.01, -0.55, -0.04, 1.02, 0.46, 0.0, 0.0],
                                                               [0.98, 0.18, 0.22, -0.02, 0.82, -0.34, 0.0, 0.04]])]),
    "perspective": (lambda xs: ops.image.perspective_transform(xs[0], CORNERS, CORNERS * 0.9 + 0.13),
                    [RNG.random((1, 5, 7, 1))]),
    "ssim": (lambda xs: ops.image.ssim(xs[0], xs[1], filter_size=3, filter_sigma=0.8),
             [RNG.random((2, 5, 4, 2)), RNG.random((2, 5, 4, 2))]),
    "image": (lambda xs: ops.image.resize(xs[0], (5, 2)) + ops.image.rgb_to_grayscale(ops.image.hsv_to_rgb(
        ops.sigmoid(ops.image.resize(xs[0], (5, 2), interpolation="nearest"))))
        + ops.image.rgb_to_hsv(ops.sigmoid(ops.image.resize(xs[0], (5, 2)))), [RNG.random((1, 4, 3, 3))]),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_float64_gradients_match_finite_differences(name):
    fn, inputs = GRADIENTS[name]
    check_gradients(fn, inputs, rtol=1e-4, atol=1e-6)


def test_symbolic_calls_record_one_node_and_namespaces_hand_out_the_same_ops():
    x = kgraph.Input((4,))
    assert x is not None and ops.log2(x)._keras_history.layer.op_name == "log2"
    assert ops.quantile(x, 0.5, axis=-1)._keras_history.layer.op_name == "quantile"
    assert ops.numpy.hypot is ops.hypot and ops.nn.glu is ops.glu and ops.linalg.inv is ops.inv
    assert ops.image.resize is ops.resize and "relu" in dir(ops.nn) and "inv" not in dir(ops.numpy)
    with pytest.raises(AttributeError, match="kgraph.ops.linalg"):
        ops.linalg.hypot  # noqa: B018


@pytest.mark.parametrize("call, message", [
    (lambda: ops.quantile(A, 1.5), "range \\[0, 1\\]"), (lambda: ops.bitwise_and(A, 1), "integer"),
    (lambda: ops.glu(np.ones((2, 3))), "even"),
    (lambda: ops.image.resize(np.ones((4, 4, 3)), (2, 2), interpolation="bicubic"), "bilinear"),
    (lambda: ops.norm(M, ord="fro", axis=0), "vector norm"),
    (lambda: ops.rearrange(M, "b (h w) c -> b h w c"), "without their lengths"),
    (lambda: ops.select([A > 0], [A, B]), "one choice"),
])
def test_keras_style_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


def test_nn_and_image_ops_match_keras(keras):
    x = (RNG.standard_normal((2, 4, 6)) * 2).astype("float32")
    p = np.abs(x) / np.abs(x).sum(-1, keepdims=True)
    t = np.eye(6, dtype="float32")[RNG.integers(0, 6, (2, 4))]
    img = RNG.random((2, 5, 7, 3)).astype("float32")
    q, k = RNG.standard_normal((2, 3, 4, 8)).astype("float32"), RNG.standard_normal((2, 5, 2, 8)).astype("float32")
    signal = x.reshape(2, 24)
    calls = [("celu", (x, 0.7)), ("glu", (x,)), ("soft_shrink", (x, 0.3)), ("squareplus", (x, 3)),
             ("sparse_plus", (x,)), ("normalize", (x,)), ("rms_normalization", (x, np.arange(6, dtype="float32"))),
             ("categorical_crossentropy", (t, p)), ("binary_crossentropy", (t, x, True)),
             ("sparse_categorical_crossentropy", (t.argmax(-1), x, True)),
             ("depth_to_space", (np.tile(img, 3)[:, :4, :6, :8], 2)),
             ("dot_product_attention", (q, k, k, None, None, None, True)), ("multi_hot", (np.array([[0, 2]]), 4)),
             ("adaptive_average_pool", (img, (3, 2))), ("adaptive_max_pool", (img, (2, 4))),
             ("adaptive_average_pool", (x, 4, "channels_first")), ("stft", (signal, 6, 3, 8, "hann", False)),
             ("stft", (signal, 8, 5, 10, None)), ("istft", (ops.stft(signal, 8, 4, 8), 8, 4, 8, 24)),
             ("unfold", (img, (2, 3), (1, 2), 1, (2, 1))), ("fold", (ops.unfold(img, 2), (7, 3), 2)),
             ("ctc_loss", (np.array([[1, 2, 2, 0], [3, 0, 0, 0]]), x, np.array([3, 1]), np.array([4, 3]))),
             ("ctc_decode", (x, np.array([4, 2])))]
    for name, args in calls:
        expected = getattr(keras.ops, name)(*[keras.ops.convert_to_tensor(a) if isinstance(a, np.ndarray) else a
                                              for a in args])
        expected = [keras.ops.convert_to_numpy(e) for e in (expected if isinstance(expected, tuple) else [expected])]
        ours = getattr(ops, name)(*args)
        for a, e in zip(ours if isinstance(ours, tuple) else [ours], expected):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5, err_msg=name)
    for name, args in [("resize", (img, (3, 9))), ("resize", (img, (9, 4), "nearest")), ("rgb_to_hsv", (img,)),
                       ("hsv_to_rgb", (img,)), ("rgb_to_grayscale", (img,)), ("extract_patches", (img, (2, 3))),
                       ("extract_patches", (img, 3, 2, 1, "same")),
                       ("extract_patches_3d", (img[..., None], (2, 3, 2))),
                       ("extract_patches_3d", (img[..., None], 3, 2, 1, "same")),
                       ("map_coordinates", (img[0, :, :, 0], RNG.random((2, 3, 4)) * 9 - 2, 1, "mirror")),
                       ("map_coordinates", (img[0, :, :, 0], RNG.random((2, 5)) * 9 - 2, 0, "constant", 2.0)),
                       ("affine_transform", (img, AFFINE, "bilinear", "wrap")),
                       ("affine_transform", (img, AFFINE, "nearest", "constant", 0.5)),
                       ("perspective_transform", (img, CORNERS, CORNERS + SHIFTS, "bilinear", 0.25)),
                       ("perspective_transform", (img, CORNERS, CORNERS + SHIFTS[::-1], "nearest")),
                       ("ssim", (img, np.clip(img + 0.1 * RNG.standard_normal(img.shape), 0, 1), 1.0, 3, 0.8))]:
        expected = keras.ops.convert_to_numpy(getattr(keras.ops.image, name)(*args))
        np.testing.assert_allclose(getattr(ops.image, name)(*args), expected, rtol=1e-5, atol=1e-5, err_msg=name)
