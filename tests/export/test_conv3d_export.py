"""Export of the 3D, 1D-variant and adaptive pooling layers beyond the zoo: node counts, opsets, unknown sizes."""
import collections

import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import layers as L
from tests.export.parity import assert_parity
from tests.export.zoo import perturb


@pytest.mark.parametrize("opset", [13, 18])
def test_uneven_adaptive_pooling_is_a_gather_and_a_reduction_per_axis_at_both_reduce_forms(opset):
    x = kgraph.Input((7, 5, 2), name="image")
    h = L.Conv2D(3, 2, padding="same")(x)
    model = perturb(kgraph.Model(x, [L.AdaptiveMaxPooling2D((3, 2))(h), L.AdaptiveAveragePooling2D((4, 5))(h)]))
    counts = collections.Counter(node.op_type for node in assert_parity(model, opset=opset).graph.node)
    assert counts["Gather"] == 3 and counts["ReduceMax"] == 2 and counts["ReduceSum"] == 1
    assert counts["Transpose"] == 3  # into the conv once, out of each pooling once


def test_a_conv3d_stack_stays_channels_first():
    x = kgraph.Input((4, 4, 4, 2), name="volume")
    h = L.Conv3D(3, 3, padding="same", activation="relu")(x)
    h = L.Conv3DTranspose(2, 2, strides=2)(L.MaxPooling3D()(h))
    h = L.UpSampling3D()(L.Cropping3D(1)(L.ZeroPadding3D(1)(h)))
    model = perturb(kgraph.Model(x, L.GlobalAveragePooling3D()(L.AdaptiveAveragePooling3D(2)(h))))
    ops = [node.op_type for node in assert_parity(model).graph.node]
    assert ops == ["Transpose", "Conv", "Relu", "MaxPool", "ConvTranspose", "Pad", "Slice", "Resize", "AveragePool",
                   "GlobalAveragePool", "Flatten"]


def test_adaptive_pooling_of_unknown_spatial_sizes_is_an_export_error():
    x = kgraph.Input((None, 4, 2), name="image")
    model = kgraph.Model(x, L.AdaptiveMaxPooling2D(2, name="adaptive")(x))
    with pytest.raises(ExportError, match="'adaptive'.*needs static spatial dimensions"):
        to_onnx(model)
