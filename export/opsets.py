"""Opset and IR-version range: what the installed onnx and onnxruntime support."""
from __future__ import annotations

import functools

import onnx
from onnx import helper

from export.defaults import DEFAULT_OPSET, MIN_OPSET
from export.registry import ExportError


def _runtime_accepts(opset, ir_version):
    """Whether the installed onnxruntime loads a one-node model at this opset and IR version."""
    import onnxruntime
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    try:
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception:  # onnxruntime raises its own exception types for unsupported opsets and IR versions
        return False
    return True


@functools.lru_cache(maxsize=None)
def max_ir_version() -> int:
    """The newest IR version both onnx and the installed onnxruntime accept."""
    ir = onnx.IR_VERSION
    while ir > 7 and not _runtime_accepts(MIN_OPSET, ir):
        ir -= 1
    return ir


def ir_version_for(opset: int) -> int:
    """The IR version an ai.onnx ``opset`` implies (the first onnx release that has it)."""
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])


@functools.lru_cache(maxsize=None)
def max_opset() -> int:
    """The newest ai.onnx opset that onnx knows and the installed onnxruntime runs."""
    opset = onnx.defs.onnx_opset_version()
    ceiling = max_ir_version()
    while opset > MIN_OPSET and (ir_version_for(opset) > ceiling
                                 or not _runtime_accepts(opset, ir_version_for(opset))):
        opset -= 1
    return opset


def resolve_opset(opset: int | None = None) -> int:
    """The target opset: ``opset`` checked against the supported range, or the default."""
    if opset is None:
        return min(DEFAULT_OPSET, max_opset())
    if isinstance(opset, bool) or not isinstance(opset, int):
        raise ExportError(f"The opset must be an integer. Received: opset={opset!r}")
    high = max_opset()
    if not MIN_OPSET <= opset <= high:
        raise ExportError(f"Opset {opset} is not supported: expected an opset from {MIN_OPSET} to {high} "
                          f"(the newest that onnx {onnx.__version__} and the installed onnxruntime both run). "
                          f"Received: opset={opset}")
    return opset
