"""Export of the activation layers beyond the zoo: opset variants, float64 models, one node per layer."""
import pytest

import kgraph
from kgraph import layers as L
from tests.export.parity import assert_parity
from tests.export.zoo import perturb


@pytest.mark.parametrize("opset", [13, 18])
def test_softmax_over_several_axes_at_both_reduce_forms(opset):
    x = kgraph.Input((3, 4, 2), name="x")
    model = perturb(kgraph.Model(x, L.Softmax(axis=[1, 3])(L.Conv2D(2, 1)(x))))
    proto = assert_parity(model, opset=opset)
    assert [n.op_type for n in proto.graph.node].count("ReduceLogSumExp") == 1


def test_float64_activation_layers_take_their_exact_forms():
    x = kgraph.Input((5,), name="x", dtype="float64")
    h = L.Dense(5, dtype="float64")(x)
    outputs = [L.ELU(0.3, dtype="float64")(h), L.LeakyReLU(0.2, dtype="float64")(h),
               L.ReLU(negative_slope=0.1, dtype="float64")(h), L.PReLU(dtype="float64")(h)]
    model = perturb(kgraph.Model(x, outputs))
    proto = assert_parity(model)
    ops = [n.op_type for n in proto.graph.node]
    assert "LeakyRelu" not in ops and ops.count("Where") == 2 and ops.count("Cast") == 2


def test_activation_layers_keep_the_conv_layout():
    x = kgraph.Input((6, 6, 2), name="image")
    h = L.Conv2D(4, 3)(x)
    for layer in (L.ReLU(max_value=6.0), L.PReLU(shared_axes=[1, 2]), L.ELU(), L.LeakyReLU(), L.Softmax()):
        h = layer(h)
    model = perturb(kgraph.Model(x, L.MaxPooling2D()(h)))
    proto = assert_parity(model)
    assert [n.op_type for n in proto.graph.node] == ["Transpose", "Conv", "Clip", "PRelu", "Elu", "LeakyRelu",
                                                     "Softmax", "MaxPool", "Transpose"]
