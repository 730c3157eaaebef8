"""Smaller models for CPU serving: int8 weights (onnxruntime's dynamic quantization) and float16 weights.

Both keep the exported model's float32 inputs and outputs, so a client or a
Triton configuration does not change. ``TOLERANCES`` are what ``--verify``
allows each against native ``predict``: every element within ``rtol`` of
itself plus ``atol`` times the largest magnitude of its output (the output's
scale), which ``benchmarks/export_quality.py`` checks on the zoo's MLP, CNN and
LSTM models (measured: int8 within 0.015 of scale, float16 within 0.0008).
"""
from __future__ import annotations

import logging
import os
import tempfile
import warnings

import onnx

from export.defaults import DISTRIBUTION, FP16_EXTRA
from export.registry import ExportError

# mode -> (rtol, atol as a fraction of the output's largest magnitude)
TOLERANCES = {"int8": (0.0, 0.1), "fp16": (1e-2, 1e-2)}
# Left in float32: onnxruntime's optimized graphs crash (SIGSEGV, onnxruntime 1.32) on float16 Transposes next
# to recurrent nodes. (Ops without a float16 CPU kernel get casts from onnxruntime itself.)
FP16_BLOCKED_OPS = ["Transpose"]
# What dynamic quantization rewrites: matrix products, recurrent kernels, embeddings. Not convolutions:
# onnxruntime's ConvInteger ran a digits CNN 5x (batch 1) to 10x (batch 64) slower than its float32 Conv.
INT8_OPS = ["MatMul", "Gemm", "LSTM", "GRU", "Attention", "Gather"]


def quantize_dynamic(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` (a ModelProto) with int8 weights; activations are quantized to uint8 at run time."""
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic as ort_quantize_dynamic
    with tempfile.TemporaryDirectory(prefix="kgraph-int8-") as tmp:
        source, target = os.path.join(tmp, "fp32.onnx"), os.path.join(tmp, "int8.onnx")
        onnx.save_model(model, source)
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantizer logs a pre-processing hint on the root logger
        try:
            ort_quantize_dynamic(source, target, weight_type=QuantType.QInt8, op_types_to_quantize=INT8_OPS)
        finally:
            root.setLevel(level)
        quantized = onnx.load(target)
    _check_loads(quantized, "int8")
    _copy_metadata(model, quantized, "int8")
    return quantized


def to_float16(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` with float16 weights and activations, float32 inputs and outputs kept."""
    try:
        from onnxconverter_common import float16
    except ImportError:
        raise ExportError("--fp16 needs the optional package onnxconverter-common. Install it with "
                          f"pip install '{DISTRIBUTION}[{FP16_EXTRA}]' (or pip install onnxconverter-common).") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # constants beyond float16's range are clipped: say nothing
        converted = float16.convert_float_to_float16(_outputs_behind_identity(model), keep_io_types=True,
                                                     op_block_list=float16.DEFAULT_OP_BLOCK_LIST + FP16_BLOCKED_OPS)
    _check_loads(converted, "fp16")
    _copy_metadata(model, converted, "fp16")
    return converted


def _check_loads(model, mode):
    """Raise an ExportError if onnxruntime refuses the converted graph (the converter mistyped a tensor)."""
    import onnxruntime
    try:
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001  (onnxruntime raises its own exception types)
        first = " ".join(str(err).split())[:300]
        raise ExportError(f"The {mode} conversion of this model is not supported: onnxruntime cannot load the "
                          f"converted graph ({first}). Export it as float32 or with another weight format.") from None


def _outputs_behind_identity(model):
    """A copy of ``model`` where each graph output is an Identity of the tensor the graph computes."""
    # The float16 pass casts outputs back to float32 in place: nodes also reading an output would mix types, and
    # an output made by a Cast or a kept-float32 op would keep the wrong type. An Identity is cast cleanly.
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    graph = model_copy.graph
    inputs = {value.name for value in graph.input}
    for output in graph.output:
        if output.name in inputs:
            continue
        inner = f"{output.name}/computed"
        for node in graph.node:
            node.input[:] = [inner if name == output.name else name for name in node.input]
            node.output[:] = [inner if name == output.name else name for name in node.output]
        graph.node.append(onnx.helper.make_node("Identity", [inner], [output.name], name=f"{output.name}/output"))
    return model_copy


def convert(model: onnx.ModelProto, mode: str) -> onnx.ModelProto:
    """``model`` converted by ``mode`` ('int8' or 'fp16')."""
    if mode == "int8":
        return quantize_dynamic(model)
    if mode == "fp16":
        return to_float16(model)
    raise ExportError(f"Unknown weight format {mode!r}; expected 'int8' or 'fp16'.")


def _copy_metadata(source, target, mode):
    props = {p.key: p.value for p in source.metadata_props}
    props["weights"] = mode
    onnx.helper.set_model_props(target, props)
    target.producer_name, target.producer_version = source.producer_name, source.producer_version
