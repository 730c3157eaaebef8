"""Op converters: each ``kgraph.ops`` op in a functional model matches native predict in onnxruntime."""
import numpy as np
import pytest

import kgraph
from export import registry, to_onnx
from export.opsets import max_opset
from export.registry import ExportError
from export.verify import LEVELS, compare, make_inputs, native_outputs, session
from kgraph import ops
from kgraph.ops import operations
from tests import op_models

# Some cases feed values outside an op's domain on purpose (log of negatives: NaN must match too).
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

OPSETS = (13, max_opset())
F = (4,)  # a row of 4 floats


def _sampler(kind):
    """Inputs of a ``kind``: "positive", "signed_int" (nonzero), "halves" (ties), "indices", else normal * 3."""
    def sample(name, shape, dtype, rng):
        if kind == "positive":
            return (rng.random(shape) * 3 + 0.1).astype(dtype)
        if kind == "signed_int":
            values = rng.integers(1, 9, size=shape) * rng.choice([-1, 1], size=shape)
            return values.astype(dtype)
        if kind == "halves":  # exact .5 ties and values near them, for round-half-to-even
            return (rng.integers(-8, 8, size=shape) / 2 + rng.choice([0, 0.01], size=shape)).astype(dtype)
        if kind == "indices":
            return rng.integers(-2, 4, size=shape).astype(dtype)
        return (rng.standard_normal(shape) * 3).astype(dtype)
    return sample


def _model(spec, fn):
    """A functional model applying ``fn`` to inputs of ``spec``: shapes, or (shape, dtype) pairs."""
    inputs = []
    for i, item in enumerate(spec):
        shape, dtype = item if isinstance(item[0], tuple) else (item, "float32")
        inputs.append(kgraph.Input(shape=shape, dtype=dtype, name=f"x{i}"))
    outputs = fn(*inputs)
    return kgraph.Model(inputs, outputs, name="ops")


W = np.linspace(-1, 1, 12, dtype="float32").reshape(4, 3)
_RNG = np.random.default_rng(7)
K = _RNG.standard_normal((3, 3, 2, 4)).astype("float32")  # a 3x3 kernel, 2 channels in, 4 out
K1 = _RNG.standard_normal((3, 2, 4)).astype("float32")
DEPTHWISE = _RNG.standard_normal((3, 3, 2, 2)).astype("float32")
POINTWISE = _RNG.standard_normal((1, 1, 4, 3)).astype("float32")
B = np.arange(4, dtype="float32")
IMAGE = (7, 6, 2)
PROJECTIONS = _RNG.standard_normal((4, 4, 4)).astype("float32") / 2


def _attention_block(x):
    """Self-attention written with ops: projections, scaled scores, softmax, residual, layer norm, GELU."""
    q, k, v = (ops.dense(x, w) for w in PROJECTIONS[:3])
    weights = ops.softmax(ops.einsum("btd,bsd->bts", q, k) / 2.0, axis=-1)
    h = ops.layer_normalization(ops.matmul(weights, v) + x, np.ones(4, "float32"), B)
    return ops.gelu(ops.dense(h, PROJECTIONS[3], B))


# name -> (input spec, model function, sampler kind). Several cases cover an op's arguments and dtypes.
CASES = {
    "add": ([F, F], lambda x, y: x + y + 1.0, None),
    "add_int_scalar": ([((3,), "int32")], lambda x: x + 2, None),
    "add_int_float": ([((3,), "int32")], lambda x: x * 0.5, None),
    "subtract": ([F], lambda x: 2.0 - x, None),
    "multiply_broadcast": ([(2, 4), F], lambda x, y: x * y[:, None, :], None),
    "divide": ([F], lambda x: ops.true_divide(x, 4.0) / (ops.abs(x) + 1.0), None),
    "divide_ints": ([((3,), "int32")], lambda x: x / 4, None),
    "negative": ([F], lambda x: -x, None),
    "power": ([F], lambda x: ops.abs(x) ** 1.5 + x ** 2, None),
    "matmul": ([(2, 4)], lambda x: x @ W, None),
    "matmul_vector": ([(2, 4)], lambda x: ops.matmul(x, W[:, 0]), None),
    "floor_divide": ([F], lambda x: x // 0.7, None),
    "floor_divide_int": ([((6,), "int32"), ((6,), "int32")], lambda x, y: x // y, "signed_int"),
    "mod": ([F], lambda x: x % 0.7 + x % -1.3, None),
    "mod_int": ([((6,), "int32"), ((6,), "int32")], lambda x, y: x % y, "signed_int"),
    "abs": ([F], lambda x: ops.absolute(x) + abs(x), None),
    "abs_int": ([((6,), "int32")], lambda x: ops.abs(x), "signed_int"),
    "int_arithmetic": ([((6,), "int32"), ((6,), "int32")], lambda x, y: [
        x ** 2, 2 ** ops.abs(y), ops.maximum(x, y), ops.minimum(x, 3), -x, ops.sign(x), x * y - 3, ops.clip(x, -2, 2),
        ops.where(x > y, x, 0.5), ops.cast(x, "float32") / y], "signed_int"),
    "exp_log": ([F], lambda x: ops.log(x) + ops.exp(x) + ops.expm1(x) + ops.log1p(x), "positive"),
    "sqrt": ([F], lambda x: ops.sqrt(x) + ops.rsqrt(x) + ops.reciprocal(x) + ops.square(x), "positive"),
    "sqrt_int": ([((3,), "int32")], lambda x: ops.sqrt(x), None),
    "sign_floor_ceil": ([F], lambda x: ops.sign(x) + ops.floor(x) + ops.ceil(x), None),
    "floor_int": ([((3,), "int32")], lambda x: ops.floor(x) + ops.ceil(x), None),
    "round": ([F], lambda x: ops.round(x), "halves"),
    "round_decimals": ([F], lambda x: ops.round(x, 1) + ops.round(x * 10, -1), None),
    "float64": ([((4,), "float64")], lambda x: [ops.erf(x), ops.elu(x), ops.exp(x), ops.softplus(x), ops.gelu(x),
                                                ops.hard_silu(x), ops.mod(x, 0.7)], None),
    "trigonometry": ([F], lambda x: ops.sin(x) + ops.cos(x) + ops.tanh(x) + ops.erf(x), None),
    "maximum_minimum": ([F, F], lambda x, y: ops.maximum(x, y) + ops.minimum(x, 0.5), None),
    "clip": ([F], lambda x: ops.clip(x, -1.0, 2.0), None),
    "clip_one_sided": ([F], lambda x: ops.clip(x, None, 0.5), None),
    "clip_tensor": ([F, F], lambda x, y: ops.clip(x, y, y + 1.0), None),
    "where": ([F, F], lambda x, y: ops.where(x > y, x, 0.0), None),
    "cast": ([F], lambda x: ops.cast(x, "int32") + x.astype("int64"), None),
    "compare": ([F, F], lambda x, y: ops.concatenate([ops.equal(ops.round(x), ops.round(y)), ops.not_equal(x, 0.5),
                                                      x > y, x >= y, x < 1.0, x <= y], axis=-1), None),
    "compare_int_float": ([((3,), "int32")], lambda x: x > 2.5, None),
    "logical": ([F, F], lambda x, y: ops.logical_or((x > 0) & (y > 0), ~(x > y)) | ops.logical_and(x, y), None),
    "logical_not": ([F], lambda x: ops.logical_not(x > 0), None),
    "isnan_isfinite": ([F], lambda x: ops.isnan(ops.log(x)) | ops.isfinite(ops.log(x)), None),
    "isnan_int": ([((3,), "int32")], lambda x: ops.isnan(x) | ops.isfinite(x), None),
    "relu_family": ([F], lambda x: ops.relu(x) + ops.relu6(x * 4) + ops.sigmoid(x) + ops.softplus(x)
                    + ops.softsign(x) + ops.silu(x) + ops.swish(x), None),
    "gelu": ([F], lambda x: ops.gelu(x) + 2 * ops.gelu(x, approximate=False), None),
    "elu_family": ([F], lambda x: ops.elu(x) + ops.elu(x, alpha=0.5) + ops.selu(x) + ops.leaky_relu(x)
                   + ops.leaky_relu(x, negative_slope=0.05), None),
    "hard": ([F], lambda x: ops.hard_sigmoid(x) + ops.hard_silu(x) + ops.hard_swish(x), None),
    "log_sigmoid": ([F], lambda x: ops.log_sigmoid(x * 30), None),
    "softmax": ([(3, 4)], lambda x: ops.softmax(x) + ops.softmax(x, axis=1) + ops.log_softmax(x, axis=-2), None),
    "softmax_axes": ([(3, 4)], lambda x: ops.softmax(x, axis=(1, 2)) + ops.log_softmax(x, axis=(1, 2)), None),
    "logsumexp": ([(3, 4)], lambda x: ops.logsumexp(x * 100, axis=-1), None),
    "sum_mean": ([(3, 4)], lambda x: [ops.sum(x, axis=1), ops.mean(x, axis=-1), ops.sum(x, axis=(1, 2), keepdims=True),
                                      ops.mean(x, axis=[1, 2]), ops.sum(x, axis=()), ops.logsumexp(x, axis=())], None),
    "sum_int": ([((3, 4), "int32")], lambda x: ops.sum(x, axis=-1) + ops.prod(x, axis=2), None),
    "mean_int": ([((3, 4), "int32")], lambda x: ops.mean(x, axis=[1, 2]), None),
    "max_min_prod": ([(3, 4)], lambda x: [ops.max(x, axis=1), ops.min(x, axis=1, keepdims=True),
                                          ops.prod(x, axis=-2)], None),
    "var_std": ([(3, 4)], lambda x: [ops.var(x, axis=-1), ops.std(x, axis=(1, 2), keepdims=True)], None),
    "argmax": ([(3, 4)], lambda x: [ops.argmax(x, axis=-1), ops.argmin(x, axis=1)], None),
    "argmax_keepdims": ([(3, 4)], lambda x: ops.argmax(x, axis=1, keepdims=True), None),
    "all_any": ([(3, 4)], lambda x: ops.all(x > -1.0, axis=-1) | ops.any(x, axis=2) | ops.any(x > 1, axis=-1),
                None),
    "cumsum": ([(3, 4)], lambda x: ops.cumsum(x, axis=-1) + ops.cumsum(x, axis=1), None),
    "cumsum_int": ([((3,), "int32")], lambda x: ops.cumsum(x, axis=1), None),
    "concatenate": ([F, (2,)], lambda x, y: ops.concatenate([x, y, y * 2.0], axis=-1), None),
    "stack": ([F, F], lambda x, y: [ops.stack([x, y], axis=1), ops.stack([y, x, y], axis=-1)], None),
    "split": ([(6,)], lambda x: [a * 2.0 for a in ops.split(x, 3, axis=1)] + ops.split(x, [1, 4], axis=-1), None),
    "split_batch": ([(2,)], lambda x: ops.split(x, [1], axis=0), None),
    "split_dynamic": ([(None, 2)], lambda x: ops.split(x, [1, 3], axis=1) + ops.split(x, 1, axis=1), None),
    "unstack": ([(3, 2)], lambda x: ops.unstack(x, axis=1), None),
    "reshape": ([(2, 6)], lambda x: ops.reshape(x, (-1, 3, 4)) + x.reshape((-1, 3, 4)), None),
    "reshape_rows": ([(6,)], lambda x: ops.reshape(x, (-1, 3)), None),
    "ravel": ([(2, 3)], lambda x: ops.ravel(x), None),
    "transpose": ([(2, 3)], lambda x: ops.transpose(x, (0, 2, 1)) + ops.swapaxes(x, 1, 2), None),
    "transpose_reverse": ([(2, 3)], lambda x: ops.transpose(x.T), None),
    "moveaxis": ([(2, 3, 4)], lambda x: [ops.moveaxis(x, 1, -1), ops.moveaxis(x, (1, 2), (3, 1))], None),
    "expand_squeeze": ([(3,)], lambda x: ops.squeeze(ops.expand_dims(x, -1), axis=-1)
                       + ops.squeeze(ops.expand_dims(x, (1, 3)), axis=(1, 3)) + ops.expand_dims(x, ()), None),
    "broadcast_to": ([(1, 4)], lambda x: ops.broadcast_to(x[0:1], (1, 3, 4)), None),
    "tile": ([(2, 3)], lambda x: [ops.tile(x, (1, 2, 3)), ops.tile(x, 2), ops.tile(x, (1, 1, 2, 3))[0]], None),
    "repeat": ([(2, 3)], lambda x: ops.repeat(x, 2, axis=-1) + ops.repeat(x, [1, 2, 3], axis=2), None),
    "repeat_flat": ([(2,)], lambda x: ops.repeat(x, 2), None),
    "repeat_batch": ([(2,)], lambda x: ops.repeat(x, 3, axis=0), None),
    "flip": ([(2, 3)], lambda x: ops.flip(x, axis=-1) + ops.flip(x, axis=(1, 2)) + ops.flip(x, axis=()), None),
    "flip_batch": ([(2,)], lambda x: [ops.flip(x, axis=0), ops.roll(x, 4, axis=0)], None),
    "dynamic_axis": ([(None, 2)], lambda x: [ops.repeat(x, 2, axis=1), ops.roll(x, -1, axis=1), ops.roll(x, 7, axis=1),
                                             x[:, ::-1, :1],
                                             ops.flip(x, 1), x[:, -2:], ops.roll(x, 1)], None),
    "roll": ([(2, 3)], lambda x: ops.roll(x, 1, axis=-1) + ops.roll(x, (-1, 4), axis=(1, 2)), None),
    "roll_flat": ([(2, 3)], lambda x: ops.roll(x, 2), None),
    "pad": ([(2, 3)], lambda x: ops.pad(x, ((0, 0), (1, 2), (0, 1))) + 1.0, None),
    "pad_modes": ([(3, 3)], lambda x: ops.pad(x, ((0, 0), (1, 1), (2, 0)), constant_values=-1.0)
                  + ops.pad(x, ((0, 0), (1, 1), (2, 0)), mode="edge")
                  + ops.pad(x, ((0, 0), (1, 1), (2, 0)), mode="reflect"), None),
    "take": ([(5,)], lambda x: [ops.take(x, [0, -1, 2], axis=1), ops.take(x, np.array([[1, 1], [3, 0]]), axis=-1)],
             None),
    "take_embedding": ([((3,), "int32")], lambda i: [ops.take(W, i, axis=0), ops.take(W, i)], "indices"),
    "take_along_axis": ([(3, 4)], lambda x: ops.take_along_axis(x, ops.argmax(x, axis=-1, keepdims=True), axis=-1)
                        + ops.take_along_axis(x, np.array([[[0], [2], [1]]]), axis=-1), None),
    "getitem_slices": ([(4, 5)], lambda x: [x[:, 1:3, ::2], x[:, ::-2, -1:-4:-2], x[:, -2:, 3:0:-1], x[:, 7:, -9:2],
                                            x[:, 3:1], x[:, ::-1, 10:-10:-3]], None),
    "getitem_ints": ([(4, 5)], lambda x: [x[:, 1], x[:, -1], x[..., 2, None], x[:, -1, -1], x[:, 2:, 1]], None),
    "getitem_newaxis": ([(4, 5)], lambda x: [x[:, None, ..., None, 1:], x[..., None], x[:, 1, None], x[:, None, -1]],
                        None),
    "getitem_array": ([(4, 5)], lambda x: [x[:, [0, 3, -1]], x[:, 1, [0, 2, 4]], x[:, :, [[1, 2], [0, 0]]],
                                           x[..., np.array([4, 0])], x[:, np.array([True, False, True, True])]],
                      None),
    "getitem_batch": ([(3,)], lambda x: [x[::-1], x[1:2], x[-1:], x[::2, 0], x[-1::-2], x[-2::-1], x[-2:-4:-1, 1:],
                                         x[-3:1:-1]], None),
    "one_hot": ([((3,), "int32")], lambda x: [ops.one_hot(x, 3), ops.one_hot(x, 4, axis=1, dtype="int32")], "indices"),
    "one_hot_floats": ([(3,)], lambda x: ops.one_hot(ops.round(x), 3, axis=1), None),
    "einsum": ([(2, 3), (3, 4)], lambda x, y: [ops.einsum("bij,bjk->bik", x, y), ops.einsum("bIJ->bJI", y),
                                               ops.einsum("bij,jk->bki", x, W[:3]), ops.einsum("bij,bij->bi", x, x),
                                               ops.einsum("bji,bjk->bki", y, y), ops.einsum("bij,bkj->bkij", x, x)],
               None),
    "einsum_implicit": ([(2, 3)], lambda x: ops.einsum("...ij", x) + ops.einsum("bij,jk", x, W[:3]) * 0.0, None),
    "dense": ([F], lambda x: ops.dense(x, W, np.ones(3, "float32")) + ops.dense(x, W), None),
    "dense_3d": ([(2, 4)], lambda x: ops.dense(x, W, np.ones(3, "float32")), None),
    "like": ([F], lambda x: ops.zeros_like(x) + ops.ones_like(x) + ops.full_like(x, 2.5) + ops.full_like(x, x[:, :1]),
             None),
    "like_dtype": ([F], lambda x: ops.ones_like(x, dtype="int32") + ops.zeros_like(x, dtype="int32"), None),
    "stop_gradient": ([F], lambda x: ops.stop_gradient(x) * 2.0, None),
    "moments": ([(3, 4)], lambda x: [a * b for a, b in (ops.moments(x, axes=-1), ops.moments(x, axes=()),
                                                        ops.moments(x, axes=(1, 2), keepdims=True))], None),
    "batch_normalization": ([(3, 4)], lambda x: ops.batch_normalization(
        x, np.full(4, 0.5, "float32"), np.full(4, 2.0, "float32"), axis=-1, offset=np.ones(4, "float32"),
        scale=np.arange(4, dtype="float32")) + ops.batch_normalization(
        x, np.zeros(3, "float32"), np.ones(3, "float32"), axis=1), None),
    "layer_normalization": ([(3, 4)], lambda x: ops.layer_normalization(
        x, np.arange(4, dtype="float32"), np.ones(4, "float32")) + ops.layer_normalization(x, axis=(1, 2))
        + ops.layer_normalization(x, np.arange(3, dtype="float32"), axis=1, epsilon=0.1), None),
    "attention_block": ([(5, 4)], _attention_block, None),
    "attention_block_dynamic": ([(None, 4)], _attention_block, None),
    "conv": ([IMAGE], lambda x: [ops.conv(x, K, padding="same", bias=B, relu=True), ops.conv(x, K, strides=2),
                                 ops.conv(x, K[:, :, :1], dilation_rate=2)], None),
    "conv_1d": ([(9, 2)], lambda x: [ops.conv(x, K1, padding="causal"), ops.conv(x, K1, strides=2, padding="same")],
                None),
    "depthwise_separable": ([IMAGE], lambda x: [ops.depthwise_conv(x, DEPTHWISE, padding="same", bias=B),
                                                ops.separable_conv(x, DEPTHWISE, POINTWISE, strides=2, relu=True)],
                            None),
    "conv_transpose": ([IMAGE], lambda x: [ops.conv_transpose(x, K.transpose(0, 1, 3, 2), strides=2, padding="same"),
                                           ops.conv_transpose(x, K.transpose(0, 1, 3, 2)[:, :, :3], strides=2,
                                                              output_padding=1, bias=B[:3])], None),
    "conv_max_pool": ([IMAGE], lambda x: ops.conv_max_pool(x, K, padding="same", bias=B, relu=True), None),
    "pool": ([IMAGE], lambda x: [ops.max_pool(x, 2), ops.average_pool(x, 3, strides=2, padding="same"),
                                 ops.max_pool(x, (2, 3), strides=1, padding="same") + 1.0], None),
}


def _assert_matches_predict(model, opset, sampler=None):
    """Export ``model`` at ``opset``; onnxruntime (optimized and not) matches predict at 0, 1 and 3 rows."""
    proto = to_onnx(model, opset=opset)
    sessions = [session(proto, level) for level in LEVELS]
    for batch in (0, 1, 3):
        feeds = make_inputs(model, batch, sampler=sampler, seed=batch, steps=4)
        expected = native_outputs(model, feeds)
        for level, sess in zip(LEVELS, sessions):
            actual = sess.run(None, feeds)
            for i, (e, a) in enumerate(zip(expected, actual)):
                # float32 ops against NumPy: a few ulps of the values (1e-5), as the parity tests allow.
                max_abs, max_rel, ok, detail = compare(e, a, rtol=1e-5, atol=1e-5)
                assert ok, f"opset={opset} batch={batch} {level} output {i}: max_abs={max_abs} " \
                           f"max_rel={max_rel} {detail}"


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_native_predict(name, opset):
    spec, fn, kind = CASES[name]
    _assert_matches_predict(_model(spec, fn), opset, _sampler(kind))


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("build", op_models.BUILDERS, ids=lambda b: b.__name__)
def test_functional_guide_models_match_native_predict(build, opset):
    model, _ = build()
    _assert_matches_predict(model, opset)


def _op_types(fn, spec):
    """The op types of the ONNX nodes of ``fn``'s model, in order."""
    return [node.op_type for node in to_onnx(_model(list(spec), fn)).graph.node]


@pytest.mark.parametrize("fn, spec, expected", [
    (lambda x: x + 1, [F], ["Add"]),
    (lambda x: 1.0 - x, [F], ["Sub"]),
    (lambda x: x[:, :2], [F], ["Slice"]),
    (lambda x: x[:, -1], [F], ["Gather"]),
    (lambda x: x[:, 1:, 0], [(3, 4)], ["Slice", "Gather"]),
    (lambda x: x[:, 1:, 0, None, 2:], [(3, 4, 5)], ["Slice", "Gather", "Unsqueeze"]),
    (lambda x: x[:, 1, 1:, -1], [(3, 4, 5)], ["Slice", "Squeeze"]),
    (lambda x: ops.mean(x, axis=-1), [F], ["ReduceMean"]),
    (lambda x: ops.relu(x), [F], ["Relu"]),
    (lambda x: ops.reshape(x, (-1, 2, 2)), [F], ["Reshape"]),
    (lambda x: ops.cast(x, "float32"), [F], ["Identity"]),
    (lambda x: ops.stop_gradient(x) + x, [F], ["Add"]),
    (lambda x: ops.softmax(x, axis=1), [(3, 4)], ["Softmax"]),
    (lambda x, y: x @ y, [(3, 4), (4, 2)], ["MatMul"]),
    (lambda x, y: ops.einsum("btd,bsd->bts", x, y), [(3, 4), (5, 4)], ["Transpose", "MatMul"]),
    (lambda x: ops.layer_normalization(x, np.ones(4, "float32"), B), [F], ["LayerNormalization"]),
    (lambda x: ops.convert_to_tensor(x, "int32"), [F], ["Cast"]),
    (lambda x: ops.convert_to_tensor(x) * 2.0, [F], ["Mul"]),
])
def test_simple_ops_stay_one_node(fn, spec, expected):
    assert _op_types(fn, spec) == expected


def test_gelu_and_hard_silu_use_single_ops_where_the_opset_has_them():
    model = _model([F], lambda x: ops.gelu(x) + ops.hard_silu(x))
    assert {"Gelu", "HardSwish"} <= {n.op_type for n in to_onnx(model, opset=max_opset()).graph.node}
    assert not {"Gelu", "HardSwish"} & {n.op_type for n in to_onnx(model, opset=13).graph.node}


def test_reductions_take_axes_as_an_input_from_opset_18():
    model = _model([(3, 4)], lambda x: ops.max(x, axis=-1))
    (node_13,), (node_18,) = (to_onnx(model, opset=o).graph.node for o in (13, 18))
    assert [a.name for a in node_13.attribute] == ["axes", "keepdims"] and len(node_13.input) == 1
    assert [a.name for a in node_18.attribute] == ["keepdims"] and len(node_18.input) == 2


def test_elementwise_ops_keep_the_channels_first_layout_of_convolutions():
    x = kgraph.Input(shape=(6, 6, 2), name="image")
    h = kgraph.layers.Conv2D(3, 3, name="c1")(x)
    y = kgraph.layers.Conv2D(3, 3, padding="same", name="c2")(ops.relu(h * 2.0 + 1.0))
    model = kgraph.Model(x, ops.softmax(ops.sigmoid(y + h), axis=-1))
    proto = to_onnx(model)
    assert [n.op_type for n in proto.graph.node].count("Transpose") == 2  # into channels-first and back
    assert next(n for n in proto.graph.node if n.op_type == "Softmax").attribute[0].i == 1
    feeds = make_inputs(model, 2)
    for level in LEVELS:
        e, a = native_outputs(model, feeds)[0], session(proto, level).run(None, feeds)[0]
        assert compare(e, a, rtol=1e-5, atol=1e-5)[2]


class ConvBlock(kgraph.layers.Layer):
    """A layer with no converter: conv with its own weights, pooling and a dense head, all through ops."""

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(3, 3, input_shape[-1], 4), initializer="glorot_uniform", name="kernel")
        self.bias = self.add_weight(shape=(4,), initializer="ones", name="bias")
        self.head = self.add_weight(shape=(4, 2), initializer="glorot_uniform", name="head")

    def call(self, x):
        h = ops.max_pool(ops.conv(x, self.kernel, padding="same", bias=self.bias, relu=True), 2)
        return ops.dense(ops.mean(h, axis=(1, 2)), self.head) + ops.sum(x * self.bias[:2], axis=(1, 2, 3))[:, None]


def test_custom_layer_without_converter_is_traced_into_op_nodes_reading_its_weights():
    x = kgraph.Input(shape=IMAGE, name="image")
    model = kgraph.Model(x, ConvBlock(name="block")(x))
    proto = to_onnx(model)
    assert {"block/kernel_oihw", "block/bias", "block/head"} <= {t.name for t in proto.graph.initializer}
    assert {"Conv", "MaxPool", "Gemm"} <= {n.op_type for n in proto.graph.node}
    feeds = make_inputs(model, 3)
    assert compare(native_outputs(model, feeds)[0], session(proto, LEVELS[0]).run(None, feeds)[0], 1e-5, 1e-5)[2]


@pytest.mark.parametrize("fn, message", [
    (lambda x: ops.pad(x, 1, mode="symmetric"), "pad mode 'symmetric'"),
    (lambda x: x[x > 0], "tensor as an index"),
    (lambda x: x[:, np.ones((3, 4), bool)], "boolean mask over several axes"),
    (lambda x: ops.where(x > 0)[0], "returns indices"),
    (lambda x: ops.pad(x, 1, mode="wrap"), "pad mode 'wrap' has no ONNX Pad form at opset 13"),
    (lambda x: x[:, [0, 1], None], "side by side"),
])
def test_inexpressible_calls_raise_export_errors_naming_the_op(fn, message):
    with pytest.raises(ExportError, match=message):
        to_onnx(_model([(3, 4)], fn), opset=13)


@pytest.mark.parametrize("alias, args", [("absolute", ()), ("true_divide", (3.0,)), ("swish", ()),
                                         ("hard_swish", ())])
def test_alias_ops_recorded_under_their_own_names_export(alias, args):
    # kgraph records `ops.absolute` as `abs`; a deserialized config (Keras's class names) records the alias itself.
    x = kgraph.Input(shape=F, name="x")
    y = operations.op_class(alias)().symbolic_call(x, *args)
    assert y._keras_history.layer.op_name == alias
    model = kgraph.Model(x, y)
    feeds = make_inputs(model, 3)
    assert compare(native_outputs(model, feeds)[0], session(to_onnx(model), LEVELS[0]).run(None, feeds)[0],
                   1e-5, 1e-5)[2]


def test_pad_wraps_from_opset_19():
    model = _model([(3, 4)], lambda x: ops.pad(x, ((0, 0), (2, 1), (0, 3)), mode="wrap"))
    feeds = make_inputs(model, 2)
    actual = session(to_onnx(model, opset=19), LEVELS[1]).run(None, feeds)[0]
    assert compare(native_outputs(model, feeds)[0], actual, 0.0, 0.0)[2]


def test_every_public_op_has_a_converter_or_a_stated_reason():
    public = set(ops.__all__)
    converted = set(registry.registered_ops())
    unexportable = registry.unexportable_ops()
    assert public - converted - set(unexportable) == set(), "public ops with neither a converter nor a reason"
    assert converted & set(unexportable) == set(), "ops listed as unexportable that have a converter"
    assert set(unexportable) <= public, "the unexportable list names ops that are not public"
    assert all(reason.strip() for reason in unexportable.values())
