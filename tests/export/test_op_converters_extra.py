"""Converters of the ``keras.ops`` additions: each op in a functional model matches native predict in onnxruntime."""
import numpy as np
import pytest

import kgraph
from export import to_onnx
from export.opsets import max_opset
from export.registry import ExportError
from export.verify import LEVELS, compare, native_outputs, session
from kgraph import ops

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 3)).astype("float32")
EDGES = np.array([-1.0, 0.0, 1.0], "float32")
PLANE = RNG.standard_normal((4, 5)).astype("float32")


def _math(x, y):
    n = ops.where(x > 1.0, np.nan, x)
    return [ops.arcsin(ops.tanh(x)), ops.arccos(ops.tanh(y)), ops.arctan(x), ops.arcsinh(x),
            ops.arccosh(ops.abs(x) + 1), ops.arctanh(ops.tanh(x) * 0.9), ops.sinh(x), ops.cosh(x), ops.tan(x),
            ops.arctan2(x, y), ops.log2(ops.abs(x)), ops.log10(ops.abs(x)), ops.exp2(x), ops.cbrt(x),
            ops.hypot(x, y), ops.logaddexp(x, y), ops.logaddexp2(x, y), ops.sinc(x), ops.fmod(x, y), ops.trunc(x),
            ops.deg2rad(x), ops.rad2deg(x), ops.fabs(x), ops.erfc(x), ops.heaviside(ops.round(x), 0.5),
            ops.divide_no_nan(x, ops.round(y)), ops.ldexp(x, 2.0), ops.fmax(n, y), ops.fmin(x, n),
            ops.nan_to_num(ops.log(x)), ops.signbit(ops.round(x)), ops.isclose(x, ops.round(x), atol=0.3),
            _batched(ops.cast(ops.allclose(x, x * 1.0), "float32"), x), ops.isinf(ops.log(ops.abs(ops.round(x)))),
            ops.isposinf(ops.exp(x * 100)), ops.isneginf(-ops.exp(x * 100)), ops.logical_xor(x > 0, y > 0)]


def _integers(i, j):
    return [ops.bitwise_and(i, j), ops.bitwise_or(i, 3), ops.bitwise_xor(i, j), ops.bitwise_not(i),
            ops.bitwise_invert(j), ops.fmod(i, 3), ops.trunc(i), ops.isin(i, [1, 3, -2]),
            ops.count_nonzero(i, axis=1)]


def _reductions(x):
    n = ops.where(x > 1.0, np.nan, x)
    return [ops.sort(x), ops.argsort(x, axis=1), *ops.top_k(x, 2), ops.count_nonzero(ops.round(x), axis=(1, 2)),
            ops.nanargmax(n, axis=-1), ops.nanargmin(n, axis=1, keepdims=True), ops.amax(x, axis=1),
            ops.amin(x, axis=2),
            ops.ptp(x, axis=2), ops.average(x, axis=2, weights=np.arange(4.0, dtype="float32")), ops.diff(x, 2),
            ops.quantile(x, [0.2, 0.7], axis=2), ops.median(x, axis=(1, 2), keepdims=True),
            ops.percentile(x, 30.0, axis=1, method="nearest"), ops.nansum(n, axis=1), ops.nanmean(n, axis=2),
            ops.nanstd(n, axis=2), ops.nanvar(n, axis=1), ops.nanmax(n, axis=1), ops.nanmin(n, axis=2),
            ops.nanprod(n, axis=2), ops.nancumsum(n, axis=2)]


def _shapes(x, v):
    return [ops.hstack([x, x]), ops.vstack([v, v]), ops.dstack([x, x]), ops.append(x, x, axis=1),
            *ops.array_split(x, 3, axis=2), *ops.hsplit(x, [1]), *ops.dsplit(x, 2), ops.fliplr(x), ops.flipud(x),
            ops.rot90(x, 1, axes=(1, 2)), ops.tril(x, -1), ops.triu(x, 1), ops.diagonal(x, 1, 1, 2),
            ops.trace(x, 0, 1, 2), ops.linspace(v, v + 1.0, 3, axis=1), ops.logspace(v, 1.0, 3, axis=-1),
            ops.geomspace(ops.abs(v) + 1.0, 2.0, 3), ops.empty_like(x), ops.copy(x), _batched(ops.diag(v[0]), v),
            ops.tensordot(x, W, 1), ops.dot(x, W), ops.inner(x, x), ops.kron(v, np.ones((1, 2), "float32")),
            _batched(ops.outer(v[0], v[0]), v), _batched(ops.vdot(v[0], v[0]), v), ops.cross(x[:, :, :3], x[:, :, 1:]),
            ops.select([x > 1.0, x < 0.0], [x, -x], 0.5), ops.trapezoid(x), _batched(ops.vander(v[0], 3), v),
            _batched(ops.correlate(v[0], v[0, :2], "same"), v), ops.slice(x, (0, 1, 1), (-1, 2, 2)),
            ops.slice_update(x, (0, 1, 1), ops.ones_like(x[:, :2, :3])), ops.searchsorted(EDGES, v),
            ops.digitize(v, EDGES), _batched(ops.meshgrid(v[0], v[0, :2])[1], v),
            ops.rearrange(x, "b h (w1 w2) -> b w2 (h w1)", w2=2)]


def _batched(t, like):
    """``t`` (computed from row 0, no batch axis) repeated along ``like``'s batch axis, so predict can batch it."""
    zeros = ops.reshape(like[:, 0] * 0.0, (-1,) + (1,) * len(t.shape))
    return ops.expand_dims(t, 0) + zeros


def _nn(x, img, q, kv, i):
    p = ops.softmax(x)
    return [ops.celu(x, 0.7), ops.glu(x), ops.hard_shrink(x), ops.soft_shrink(x, 0.3), ops.tanh_shrink(x),
            ops.threshold(x, 0.1, -2.0), ops.sparse_plus(x), ops.sparse_sigmoid(x), ops.squareplus(x),
            ops.sparsemax(x), ops.normalize(x), ops.normalize(x, axis=1, order=1),
            ops.rms_normalization(x, np.arange(6, dtype="float32")), ops.hard_tanh(x),
            ops.categorical_crossentropy(p, p), ops.categorical_crossentropy(p, x, from_logits=True),
            ops.sparse_categorical_crossentropy(ops.abs(i) % 6, p[:, :3]),
            ops.sparse_categorical_crossentropy(ops.abs(i) % 6, x[:, :3], from_logits=True),
            ops.binary_crossentropy(p, p), ops.binary_crossentropy(p, x, from_logits=True),
            ops.multi_hot(ops.abs(i) % 5, 5), ops.depth_to_space(img, 2), ops.space_to_depth(img, 2),
            ops.dot_product_attention(q, kv, kv), ops.dot_product_attention(q, kv, kv, is_causal=True, scale=0.2),
            ops.cdist(x, x), ops.extract_sequences(x, 3, 2), ops.saturate_cast(x * 100.0, "int8"),
            ops.adaptive_average_pool(img, (3, 4)), ops.adaptive_max_pool(img, (3, 4)),
            ops.adaptive_max_pool(img, 2, data_format="channels_first"),
            ops.unfold(img, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
            ops.fold(ops.unfold(img, 2, stride=2), (4, 6), 2, stride=2),
            ops.image.extract_patches(img, (2, 3)), ops.image.extract_patches(img, 3, strides=2, padding="same"),
            ops.image.extract_patches_3d(img[..., None], (2, 3, 2)),
            ops.image.extract_patches_3d(img[..., None], 2, strides=3, padding="same")]


def _linalg_image(a, v, image):
    s = ops.matmul(a, ops.swapaxes(a, -1, -2)) + np.eye(3, dtype="float32")
    return [ops.det(a), *ops.slogdet(s), ops.logdet(s), ops.norm(a, axis=(1, 2)), ops.norm(a, 1, axis=(1, 2)),
            ops.norm(a, np.inf, axis=(1, 2), keepdims=True), ops.norm(v, axis=1), ops.norm(v, 3, axis=-1),
            ops.norm(v, 0, axis=-1), ops.image.resize(image, (3, 4)),
            ops.image.resize(image, (9, 11), interpolation="nearest"), ops.image.rgb_to_grayscale(image),
            ops.image.rgb_to_hsv(ops.sigmoid(image)), ops.image.hsv_to_rgb(ops.sigmoid(image)),
            ops.image.pad_images(image, 1, 2, target_height=8, target_width=10),
            ops.image.crop_images(image, 1, 2, bottom_cropping=1, target_width=3),
            _batched(ops.image.map_coordinates(PLANE, ops.stack([v[0] * 1.5, v[0] + 1.0]), 1), v),
            _batched(ops.image.map_coordinates(PLANE, ops.stack([v[0], v[0] * 2.0]), 0, fill_mode="mirror"), v),
            ops.image.affine_transform(image, ops.concatenate([v, v], axis=-1) * 0.3 + np.eye(3, dtype="float32")
                                       .reshape(-1)[:8]),
            ops.image.affine_transform(image, np.array([1.0, 0.5, -1.0, 0.2, 0.8, 1.0, 0.0, 0.0], "float32"),
                                       "nearest", "mirror"),
            ops.image.ssim(image, ops.sigmoid(image), filter_size=3), _batched(ops.image.ssim(image[0], image[0] * 0.5,
                                                                                             filter_size=5), v),
            ops.image.perspective_transform(image, [[0, 0], [6, 0], [0, 4], [6, 4]],
                                            [[0.5, 0.3], [5.6, 0.1], [0.2, 3.4], [6.3, 4.2]])]


def _index(x, ids):
    return [ops.segment_sum(x, ids, num_segments=3), ops.segment_prod(x, ids, num_segments=3),
            ops.segment_max(x, ids, num_segments=3), ops.segment_min(x, ids, num_segments=3),
            ops.scatter_update(x, np.array([[0, 1], [0, 3]]), np.array([5.0, 6.0], "float32")),
            ops.scatter_update(x, np.array([[0, 1], [0, 1]]), x[0, :2], reduction="add"),
            ops.in_top_k(ids, x[:, :3], 2)]


def _fft(a, b, s):
    return [*ops.fft((a, b)), *ops.fft2((a, b)), *ops.ifft2((a, b)), *ops.rfft(s), *ops.rfft(s, 10), *ops.rfft(s, 4),
            ops.irfft((a, b)), ops.irfft((a, b), 7), ops.irfft((a, b), 15), ops.irfft((a, b), 4),
            *ops.stft(s, 4, 2, 6), *ops.stft(s, 4, 3, 4, window=None, center=False),
            ops.istft(ops.stft(s, 4, 2, 4), 4, 2, 4, length=7)]


# name -> (input specs: shape or (shape, dtype), model function, minimum opset)
CASES = {
    "math": ([(4,), (4,)], _math, 13),
    "integers": ([((3,), "int32"), ((3,), "int32")], _integers, 18),
    "reductions": ([(3, 4)], _reductions, 13),
    "shapes": ([(3, 4), (4,)], _shapes, 13),
    "nn": ([(4, 6), (4, 6, 8), (3, 4, 8), (5, 2, 8), ((3,), "int32")], _nn, 13),
    "linalg_image": ([(3, 3), (4,), (5, 7, 3)], _linalg_image, 13),
    "index": ([(4,), ((), "int32")], _index, 18),
    "fft": ([(3, 6), (3, 6), (7,)], _fft, 17),
}


def _feeds(model, batch):
    """Inputs of ``batch`` rows: normal floats (scaled by 2), integers in [0, 3) for int inputs (valid ids)."""
    feeds = {}
    for t in model.inputs:
        shape = (batch,) + tuple(t.shape[1:])
        if t.dtype.startswith("int"):
            feeds[t.name] = RNG.integers(0, 3, size=shape).astype(t.dtype)
        else:
            feeds[t.name] = (RNG.standard_normal(shape) * 2).astype(t.dtype)
    return feeds


@pytest.mark.parametrize("last", [False, True], ids=["opset_min", "opset_max"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_extra_ops_match_native_predict(name, last):
    specs, fn, opset = CASES[name]
    # A DFT output sums n float32 products: its absolute error scales with the inputs' magnitudes, not its own.
    atol = 1e-4 if name == "fft" else 1e-5
    inputs = [kgraph.Input(shape=s[0], dtype=s[1], name=f"x{k}") if isinstance(s[0], tuple)
              else kgraph.Input(shape=s, name=f"x{k}") for k, s in enumerate(specs)]
    model = kgraph.Model(inputs, fn(*inputs), name=name)
    sess = session(to_onnx(model, opset=max_opset() if last else opset), LEVELS[0])
    for batch in (1, 3):
        feeds = _feeds(model, batch)
        for k, (expected, actual) in enumerate(zip(native_outputs(model, feeds), sess.run(None, feeds))):
            # float32 against NumPy: a few ulps of the values, as the other op converter tests allow.
            max_abs, max_rel, ok, detail = compare(expected, actual, rtol=1e-5, atol=atol)
            assert ok, f"{name} batch={batch} output {k}: max_abs={max_abs} max_rel={max_rel} {detail}"


@pytest.mark.parametrize("fn, message", [
    (lambda x: ops.inv(ops.reshape(x, (-1, 2, 2))), "cannot be exported to ONNX: ONNX has no matrix inverse"),
    (lambda x: ops.sort(x, axis=0), "unknown"),
    (lambda x: ops.norm(ops.reshape(x, (-1, 2, 2)), "nuc", axis=(1, 2)), "cannot be traced"),
    (lambda x: ops.segment_sum(ops.transpose(x), np.array([0, 1, 1, 0])), "num_segments"),
])
def test_inexpressible_calls_raise_export_errors(fn, message):
    with pytest.raises(ExportError, match=message):
        x = kgraph.Input((4,), name="x")
        to_onnx(kgraph.Model(x, fn(x)), opset=18)
