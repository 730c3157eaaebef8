"""Layer-library export: the digits CNN stays channels-first, explicit pads, normalization forms across opsets."""
import numpy as np
import pytest
from onnx import helper

import kgraph
from export import ExportError, to_onnx
from export.exporter import build
from export.opsets import max_opset
from kgraph import layers as L
from tests.export import zoo
from tests.export.parity import assert_parity


def _nodes(proto, op_type):
    return [node for node in proto.graph.node if node.op_type == op_type]


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def test_digits_cnn_transposes_once_at_entry():
    proto, _ = build(zoo.build("digits_cnn"))
    ops = [node.op_type for node in proto.graph.node]
    assert ops.count("Transpose") == 1 and ops[0] == "Transpose"
    assert ops[1:] == ["Conv", "BatchNormalization", "Relu", "MaxPool"] * 2 + ["Flatten", "Gemm", "Softmax"]


def test_training_benchmark_cnn_exports_with_at_most_two_transposes():
    proto, _ = build(zoo.build("benchmark_cnn"))
    ops = [node.op_type for node in proto.graph.node]
    assert ops.count("Transpose") <= 2 and ops[0] == "Transpose"
    assert ops.count("Conv") == 2 and ops.count("MaxPool") == 2


def test_strided_same_padding_is_written_as_explicit_asymmetric_pads():
    x = kgraph.Input((8, 7, 2), name="x")
    outs = [L.Conv2D(3, 3, strides=2, padding="same")(x), L.AveragePooling2D(3, strides=2, padding="same")(x),
            L.MaxPooling2D(2, padding="same")(x)]
    proto = assert_parity(zoo.perturb(kgraph.Model(x, outs)))
    conv, = _nodes(proto, "Conv")
    # Rows: 8 -> 4 needs 1 cell (after); columns: 7 -> 4 needs 2 (one each side).
    assert _attrs(conv)["pads"] == [0, 1, 1, 1] and "auto_pad" not in _attrs(conv)
    average, = _nodes(proto, "AveragePool")
    assert _attrs(average)["count_include_pad"] == 0 and _attrs(average)["pads"] == [0, 1, 1, 1]
    assert _attrs(_nodes(proto, "MaxPool")[0])["pads"] == [0, 0, 0, 1]


def test_batch_normalization_writes_its_epsilon():
    x = kgraph.Input((4, 4, 3), name="x")
    proto = assert_parity(zoo.train_briefly(kgraph.Model(x, L.BatchNormalization(epsilon=0.05)(L.Conv2D(3, 1)(x)))))
    bn, = _nodes(proto, "BatchNormalization")
    assert _attrs(bn)["epsilon"] == pytest.approx(0.05)


def _normalization_model():
    x = kgraph.Input((5, 4, 3), name="x")
    outs = [L.LayerNormalization()(x), L.LayerNormalization(axis=[1, 2])(x), L.LayerNormalization(axis=1)(x),
            L.Dense(2)(L.LayerNormalization(axis=[-2, -1], center=False)(L.Conv2D(3, 1)(x)))]
    return zoo.train_briefly(kgraph.Model(x, outs))


def test_layer_normalization_uses_the_onnx_op_from_opset_17():
    proto = assert_parity(_normalization_model(), opset=17)
    assert len(_nodes(proto, "LayerNormalization")) == 2  # the two over trailing axes


@pytest.mark.parametrize("opset", [13, 18])
def test_layer_normalization_decomposes_below_opset_17_and_for_inner_axes(opset):
    if opset > max_opset():
        pytest.skip(f"onnxruntime here runs opsets up to {max_opset()}")
    proto = assert_parity(_normalization_model(), opset=opset)
    assert len(_nodes(proto, "LayerNormalization")) == (0 if opset < 17 else 2)
    means = _nodes(proto, "ReduceMean")
    assert means and all(len(node.input) == (2 if opset >= 18 else 1) for node in means)


@pytest.mark.parametrize("opset", [13, 17])
def test_cnn_zoo_models_at_other_opsets(opset):
    for name in ("text_cnn", "separable_block", "conv2d_transpose"):
        assert_parity(zoo.build(name), opset=opset)


def test_float_indices_are_cast_for_gather():
    proto, _ = build(zoo.build("embedding_float_indices"))
    cast, = _nodes(proto, "Cast")
    assert _attrs(cast)["to"] == helper.np_dtype_to_tensor_dtype(np.dtype("int64"))
    assert _nodes(proto, "Gather")[0].input[1] == cast.output[0]


def test_strided_same_padding_on_a_dynamic_axis_is_an_export_error(tmp_path):
    x = kgraph.Input((None, 3), name="x")
    model = kgraph.Model(x, L.Conv1D(2, 3, strides=2, padding="same", name="strided")(x))
    with pytest.raises(ExportError, match="'strided'.*needs static spatial dimensions"):
        to_onnx(model, tmp_path / "m.onnx")
    stride_one = kgraph.Model(x, L.Conv1D(2, 3, padding="same")(x))
    assert_parity(zoo.perturb(stride_one))
