"""Layout tracking: channels-first converters transpose once at entry, share conversions, and fold Flatten."""
import numpy as np

import kgraph
from export import CHANNELS_FIRST, Value, converter, to_onnx
from kgraph import layers as L
from tests.export import zoo
from tests.export.parity import assert_parity


class ChannelMix(kgraph.Layer):
    """``x @ mix`` over the channel (last) axis, with a (channels, channels) weight; stands in for a 1x1 conv."""

    _preserves_dtype = True

    def build(self, input_shape):
        self.mix = self.add_weight(shape=(input_shape[-1], input_shape[-1]), name="mix")

    def call(self, inputs):
        return kgraph.ops.matmul(inputs, self.mix)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


@converter(ChannelMix, opset=13)
def convert_channel_mix(ctx):
    """Works channels-first, as ONNX Conv does: a 1x1 Conv with the (out, in, 1, ...) kernel."""
    rank = ctx.input_rank()
    x = ctx.input(0, CHANNELS_FIRST)
    kernel = ctx.weight(ctx.layer.mix, transform=lambda m: m.T.reshape(m.shape + (1,) * (rank - 2)), variant="oi")
    return Value(ctx.op("Conv", [x, kernel], kernel_shape=[1] * (rank - 2)), CHANNELS_FIRST)


def _ops(proto, op_type):
    return [node for node in proto.graph.node if node.op_type == op_type]


def _image(name="image"):
    return kgraph.Input(shape=(5, 6, 3), name=name)


def test_a_channels_first_chain_transposes_once_at_entry_and_once_at_exit():
    x = _image()
    y = ChannelMix()(L.Activation("relu")(ChannelMix()(x)))
    proto = assert_parity(zoo.perturb(kgraph.Model(x, y)))
    assert len(_ops(proto, "Transpose")) == 2
    assert [n.op_type for n in proto.graph.node] == ["Transpose", "Conv", "Relu", "Conv", "Transpose"]


def test_two_native_consumers_share_one_transpose():
    x = _image()
    h = ChannelMix()(x)
    outs = [L.Reshape((-1, 3))(h), L.Dense(4)(h), L.Add()([h, x])]
    proto = assert_parity(zoo.perturb(kgraph.Model(x, outs)))
    # The Add stays channels-first (x is transposed once, shared with the first ChannelMix).
    assert len(_ops(proto, "Transpose")) == 3


def test_flatten_then_dense_folds_the_layout_into_the_kernel():
    x = _image()
    y = L.Dense(4, activation="softmax")(L.Flatten()(ChannelMix()(x)))
    proto = assert_parity(zoo.perturb(kgraph.Model(x, y)))
    assert [n.op_type for n in proto.graph.node] == ["Transpose", "Conv", "Flatten", "Gemm", "Softmax"]
    assert any(init.name.endswith("kernel_permuted") for init in proto.graph.initializer)


def test_flatten_output_used_natively_gets_one_gather():
    x = _image()
    flat = L.Flatten()(ChannelMix()(x))
    proto = assert_parity(zoo.perturb(kgraph.Model(x, [L.Dense(2)(flat), flat, L.Activation("tanh")(flat)])))
    assert len(_ops(proto, "Gather")) == 2
    assert len(_ops(proto, "Transpose")) == 1


def test_elementwise_and_concatenate_keep_channels_first():
    x = _image()
    a, b = ChannelMix()(x), ChannelMix()(x)
    merged = L.Concatenate(axis=-1)([L.Multiply()([a, b]), L.Maximum()([a, b]), L.Dropout(0.5)(a)])
    soft = L.Activation("softmax")(merged)
    proto = assert_parity(zoo.perturb(kgraph.Model(x, L.Flatten()(soft))))
    concat = _ops(proto, "Concat")[0]
    assert [a.i for a in concat.attribute if a.name == "axis"] == [1]
    softmax = _ops(proto, "Softmax")[0]
    assert [a.i for a in softmax.attribute if a.name == "axis"] == [1]
    # One Transpose in; the Flatten's feature order leaves through one Gather.
    assert len(_ops(proto, "Transpose")) == 1 and len(_ops(proto, "Gather")) == 1


def test_rank_3_and_rank_5_channels_first():
    for shape in [(7, 3), (2, 3, 4, 3)]:
        x = kgraph.Input(shape=shape, name="x")
        y = L.Dense(2)(L.Flatten()(ChannelMix()(L.Activation("gelu")(ChannelMix()(x)))))
        proto = assert_parity(zoo.perturb(kgraph.Model(x, y)))
        assert len(_ops(proto, "Transpose")) == 1


def test_shared_channels_first_layer_has_one_kernel_initializer():
    a, b = _image("a"), _image("b")
    mix = ChannelMix(name="mix")
    model = zoo.perturb(kgraph.Model([a, b], L.Add()([mix(a), mix(b)])))
    proto = to_onnx(model)
    assert [i.name for i in proto.graph.initializer] == ["mix/mix_oi"]
    assert np.array_equal(np.frombuffer(proto.graph.initializer[0].raw_data, np.float32),
                          mix.mix.value.T.ravel())
