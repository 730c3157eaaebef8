"""The ONNX emitters of Keras's newer activations (celu, mish, the shrinks, sparsemax...): each layer activation is
converted by its emitter, not traced, and onnxruntime matches kgraph on every kink and far out, per opset and dtype.
The zoo models of tests/export/zoo_activation_functions.py run them through the full parity check too."""
import os

import numpy as np
import onnxruntime as ort
import pytest

import kgraph
from export import to_onnx
from export.converters.activations import has_emitter, supported_activations
from kgraph import activations, layers
from tests.export.parity import check_file
from tests.export.zoo_activation_functions import ACTIVATION_FUNCTIONS

# Each activation and an op type its emitter writes (and tracing kgraph's ops would not).
SIGNATURE_OPS = {"celu": "Celu", "hard_shrink": "Shrink", "soft_shrink": "Shrink", "sparse_sigmoid": "HardSigmoid",
                 "sparsemax": "TopK", "log_sigmoid": "Softplus", "mish": "Softplus", "hard_tanh": "Clip",
                 "sparse_plus": "Clip", "squareplus": "Sqrt", "tanh_shrink": "Tanh", "hard_silu": "HardSigmoid",
                 "hard_swish": "HardSigmoid"}
GRID = np.array([[-30.0, -3.5, -3.0, -2.9, -1.5, -1.0, -0.75, -0.5, -0.4, -0.25],
                 [-0.1, 0.0, 0.1, 0.3, 0.5, 0.6, 1.0, 1.2, 2.9, 3.0],
                 [3.1, 7.0, 30.0, 0.45, -0.45, 0.25, 0.2, -0.2, 1e-3, -1e-3]])


def _run(model, x, opset, tmp_path):
    path = os.path.join(tmp_path, f"{model.name}_{opset}.onnx")
    to_onnx(model, path, opset=opset)
    proto = check_file(path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return proto, session.run(None, {session.get_inputs()[0].name: x})[0]


def test_every_new_activation_has_an_emitter():
    assert set(ACTIVATION_FUNCTIONS) - {"hard_swish"} <= set(supported_activations())
    assert all(has_emitter(getattr(activations, name)) for name in ACTIVATION_FUNCTIONS)
    assert not has_emitter(activations.threshold)  # needs its arguments: a layer cannot name it


@pytest.mark.parametrize("opset", [13, 14, 18])
@pytest.mark.parametrize("name", ACTIVATION_FUNCTIONS)
def test_activation_layer_matches_kgraph_on_every_kink(name, opset, tmp_path):
    x = kgraph.Input((10,), name="x")
    model = kgraph.Model(x, layers.Activation(name, name="act")(x), name=f"act_{name}")
    proto, got = _run(model, GRID.astype("float32"), opset, tmp_path)
    ops_used = {node.op_type for node in proto.graph.node}
    expected_op = "HardSwish" if name in ("hard_silu", "hard_swish") and opset >= 14 else SIGNATURE_OPS[name]
    assert expected_op in ops_used, ops_used
    np.testing.assert_allclose(got, model.predict(GRID.astype("float32"), verbose=0), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ACTIVATION_FUNCTIONS)
def test_float64_dense_matches_kgraph(name, tmp_path):
    x = kgraph.Input((10,), name="x", dtype="float64")
    dense = layers.Dense(10, activation=name, dtype="float64", name="dense")
    model = kgraph.Model(x, dense(x), name=f"dense64_{name}")
    dense.set_weights([np.eye(10), np.zeros(10)])
    _, got = _run(model, GRID, 13, tmp_path)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, model.predict(GRID, verbose=0), rtol=1e-6, atol=1e-6)


def test_sparsemax_reduces_over_the_channel_axis_of_a_channels_first_convolution(tmp_path):
    x = kgraph.Input((6, 6, 2), name="x")
    model = kgraph.Model(x, layers.Conv2D(4, 3, activation="sparsemax", name="conv")(x), name="conv_sparsemax")
    data = np.random.default_rng(0).normal(size=(2, 6, 6, 2)).astype("float32") * 3
    _, got = _run(model, data, 13, tmp_path)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(got, model.predict(data, verbose=0), rtol=1e-5, atol=1e-6)
