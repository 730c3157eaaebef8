"""Small ONNX test models built with onnx.helper, and a Triton-style repository of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17

# V2 datatype -> (ONNX element type, NumPy dtype) for the all-datatypes echo model.
DATATYPES = {
    "BOOL": (TensorProto.BOOL, np.bool_),
    "UINT8": (TensorProto.UINT8, np.uint8),
    "UINT16": (TensorProto.UINT16, np.uint16),
    "UINT32": (TensorProto.UINT32, np.uint32),
    "UINT64": (TensorProto.UINT64, np.uint64),
    "INT8": (TensorProto.INT8, np.int8),
    "INT16": (TensorProto.INT16, np.int16),
    "INT32": (TensorProto.INT32, np.int32),
    "INT64": (TensorProto.INT64, np.int64),
    "FP16": (TensorProto.FLOAT16, np.float16),
    "FP32": (TensorProto.FLOAT, np.float32),
    "FP64": (TensorProto.DOUBLE, np.float64),
}


def _save(graph: onnx.GraphProto, path: Path) -> Path:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _io(name: str, elem: int, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def mlp(path: Path, sizes=(16, 32, 5), seed: int = 0) -> Path:
    """Gemm/ReLU MLP with a softmax head: x FP32 [batch, sizes[0]] -> y FP32 [batch, sizes[-1]]."""
    rng = np.random.default_rng(seed)
    nodes, weights, previous = [], [], "x"
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        b = rng.standard_normal(fan_out).astype(np.float32) * 0.1
        weights += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("Gemm", [previous, f"w{i}", f"b{i}"], [f"dense{i}"]))
        previous = f"dense{i}"
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [previous], [f"relu{i}"]))
            previous = f"relu{i}"
    nodes.append(helper.make_node("Softmax", [previous], ["y"], axis=-1))
    graph = helper.make_graph(
        nodes, "mlp", [_io("x", TensorProto.FLOAT, ["batch", sizes[0]])], [_io("y", TensorProto.FLOAT, ["batch", sizes[-1]])], weights
    )
    return _save(graph, path)


def multi(path: Path, seed: int = 1) -> Path:
    """Two inputs, two outputs: scores = features @ W (FP32), shifted = ids * 3 + 1 (INT64)."""
    w = np.random.default_rng(seed).standard_normal((4, 2)).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["features", "w"], ["scores"]),
            helper.make_node("Mul", ["ids", "three"], ["tripled"]),
            helper.make_node("Add", ["tripled", "one"], ["shifted"]),
        ],
        "multi",
        [_io("features", TensorProto.FLOAT, ["batch", 4]), _io("ids", TensorProto.INT64, ["batch", 3])],
        [_io("scores", TensorProto.FLOAT, ["batch", 2]), _io("shifted", TensorProto.INT64, ["batch", 3])],
        [
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(np.array(3, np.int64), "three"),
            numpy_helper.from_array(np.array(1, np.int64), "one"),
        ],
    )
    return _save(graph, path)


def echo_all_types(path: Path) -> Path:
    """One Identity per V2 datatype: in_<TYPE> [batch, 2] -> out_<TYPE>."""
    nodes, inputs, outputs = [], [], []
    for name, (elem, _) in DATATYPES.items():
        nodes.append(helper.make_node("Identity", [f"in_{name}"], [f"out_{name}"]))
        inputs.append(_io(f"in_{name}", elem, ["batch", 2]))
        outputs.append(_io(f"out_{name}", elem, ["batch", 2]))
    return _save(helper.make_graph(nodes, "types", inputs, outputs), path)


def fixed(path: Path) -> Path:
    """No batch axis: x FP32 [2, 3] -> y = x + 1."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])],
        "fixed",
        [_io("x", TensorProto.FLOAT, [2, 3])],
        [_io("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.array(1, np.float32), "one")],
    )
    return _save(graph, path)


def rowsum(path: Path) -> Path:
    """Dynamic inner dim: x FP32 [batch, n] -> y = x.sum(axis=1, keepdims=True)."""
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=1)],
        "rowsum",
        [_io("x", TensorProto.FLOAT, ["batch", "n"])],
        [_io("y", TensorProto.FLOAT, ["batch", 1])],
        [numpy_helper.from_array(np.array([1], np.int64), "axes")],
    )
    return _save(graph, path)


def gather(path: Path) -> Path:
    """Value-dependent failure: y = GatherElements(data [batch, 4], idx INT64 [batch, 2], axis=1)."""
    graph = helper.make_graph(
        [helper.make_node("GatherElements", ["data", "idx"], ["y"], axis=1)],
        "gather",
        [_io("data", TensorProto.FLOAT, ["batch", 4]), _io("idx", TensorProto.INT64, ["batch", 2])],
        [_io("y", TensorProto.FLOAT, ["batch", 2])],
    )
    return _save(graph, path)


MLP_CONFIG = """
# Triton model configuration
name: "mlp"
platform: "onnxruntime_onnx"
version_policy: { all { } }
max_batch_size: 8
input [
  { name: "x", data_type: TYPE_FP32, dims: [ 16 ] }
]
output [
  { name: "y", data_type: TYPE_FP32, dims: [ 5 ] }
]
dynamic_batching { max_queue_delay_microseconds: 3000 }
"""


def build_repository(root: Path) -> Path:
    """A Triton-style repository: mlp versions 1 and 2 (with config.pbtxt), multi, types, fixed, rowsum, gather."""
    mlp(root / "mlp" / "1" / "model.onnx", seed=1)
    mlp(root / "mlp" / "2" / "model.onnx", seed=2)
    (root / "mlp" / "config.pbtxt").write_text(MLP_CONFIG)
    multi(root / "multi" / "1" / "model.onnx")
    echo_all_types(root / "types" / "1" / "model.onnx")
    fixed(root / "fixed" / "1" / "model.onnx")
    rowsum(root / "rowsum" / "1" / "model.onnx")
    gather(root / "gather" / "1" / "model.onnx")
    return root


def lstm(path: Path, features: int = 8, units: int = 6, seed: int = 4) -> Path:
    """One LSTM node: x FP32 [batch, time, features] -> h FP32 [batch, units] (last hidden state)."""
    rng = np.random.default_rng(seed)
    weights = [
        numpy_helper.from_array((rng.standard_normal((1, 4 * units, features)) * 0.3).astype(np.float32), "W"),
        numpy_helper.from_array((rng.standard_normal((1, 4 * units, units)) * 0.3).astype(np.float32), "R"),
    ]
    graph = helper.make_graph(
        [
            helper.make_node("Transpose", ["x"], ["time_major"], perm=[1, 0, 2]),
            helper.make_node("LSTM", ["time_major", "W", "R"], ["", "last"], hidden_size=units),
            helper.make_node("Squeeze", ["last", "zero"], ["h"]),
        ],
        "lstm",
        [_io("x", TensorProto.FLOAT, ["batch", "time", features])],
        [_io("h", TensorProto.FLOAT, ["batch", units])],
        weights + [numpy_helper.from_array(np.array([0], np.int64), "zero")],
    )
    return _save(graph, path)


def cnn(path: Path, channels: int = 4, seed: int = 5) -> Path:
    """3x3 valid convolution, ReLU, global average pool: x FP32 [batch, 1, height, width] -> y FP32 [batch, channels]."""
    rng = np.random.default_rng(seed)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "kernel", "bias"], ["conv"], kernel_shape=[3, 3]),
            helper.make_node("Relu", ["conv"], ["relu"]),
            helper.make_node("GlobalAveragePool", ["relu"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["y"]),
        ],
        "cnn",
        [_io("x", TensorProto.FLOAT, ["batch", 1, "height", "width"])],
        [_io("y", TensorProto.FLOAT, ["batch", channels])],
        [
            numpy_helper.from_array(rng.standard_normal((channels, 1, 3, 3)).astype(np.float32), "kernel"),
            numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), "bias"),
        ],
    )
    return _save(graph, path)


def attention(path: Path, width: int = 8, seed: int = 6) -> Path:
    """Single-head self-attention: x FP32 [batch, seq, width] -> y = softmax(q k^T / sqrt(width)) v."""
    rng = np.random.default_rng(seed)
    weights = [
        numpy_helper.from_array((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32), name)
        for name in ("wq", "wk", "wv")
    ]
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "wq"], ["q"]),
            helper.make_node("MatMul", ["x", "wk"], ["k"]),
            helper.make_node("MatMul", ["x", "wv"], ["v"]),
            helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
            helper.make_node("MatMul", ["q", "kt"], ["scores"]),
            helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
            helper.make_node("Softmax", ["scaled"], ["weights"], axis=-1),
            helper.make_node("MatMul", ["weights", "v"], ["y"]),
        ],
        "attention",
        [_io("x", TensorProto.FLOAT, ["batch", "seq", width])],
        [_io("y", TensorProto.FLOAT, ["batch", "seq", width])],
        weights + [numpy_helper.from_array(np.array(1 / np.sqrt(width), np.float32), "scale")],
    )
    return _save(graph, path)


def heavy(path: Path, width: int = 768, seed: int = 7) -> Path:
    """A model whose run takes milliseconds per row: x FP32 [batch, width] -> y FP32 [batch]; each row is
    repeated WIDTH times into a square, multiplied by a WIDTH x WIDTH weight and summed."""
    w = (np.random.default_rng(seed).standard_normal((width, width)) / width).astype(np.float32)
    nodes = [
        helper.make_node("Unsqueeze", ["x", "axis1"], ["row"]),
        helper.make_node("Shape", ["x"], ["x_shape"], start=0, end=1),
        helper.make_node("Concat", ["x_shape", "square"], ["target"], axis=0),
        helper.make_node("Expand", ["row", "target"], ["rows"]),
        helper.make_node("MatMul", ["rows", "w"], ["product"]),
        helper.make_node("ReduceSum", ["product", "axes"], ["y"], keepdims=0),
    ]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array([width, width], np.int64), "square"),
             numpy_helper.from_array(np.array([1, 2], np.int64), "axes")]
    graph = helper.make_graph(nodes, "heavy", [_io("x", TensorProto.FLOAT, ["batch", width])],
                              [_io("y", TensorProto.FLOAT, ["batch"])], inits)
    return _save(graph, path)
