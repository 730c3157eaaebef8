"""Triton model repository layout: DIR/NAME/config.pbtxt and DIR/NAME/1/model.onnx."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from google.protobuf import text_format
from onnx import TensorProto

from export import writer
from export.defaults import DEFAULT_MAX_BATCH_SIZE
from export.registry import ExportError
from serve.proto import model_config_pb2

if TYPE_CHECKING:
    from collections.abc import Callable

    import onnx


_TRITON_TYPES = {
    TensorProto.BOOL: "TYPE_BOOL", TensorProto.UINT8: "TYPE_UINT8", TensorProto.UINT16: "TYPE_UINT16",
    TensorProto.UINT32: "TYPE_UINT32", TensorProto.UINT64: "TYPE_UINT64", TensorProto.INT8: "TYPE_INT8",
    TensorProto.INT16: "TYPE_INT16", TensorProto.INT32: "TYPE_INT32", TensorProto.INT64: "TYPE_INT64",
    TensorProto.FLOAT16: "TYPE_FP16", TensorProto.FLOAT: "TYPE_FP32", TensorProto.DOUBLE: "TYPE_FP64",
    TensorProto.BFLOAT16: "TYPE_BF16", TensorProto.STRING: "TYPE_STRING",
}


def _tensor(entry, info) -> None:
    """Fill a ModelInput or ModelOutput ENTRY from an ONNX graph input or output."""
    elem = info.type.tensor_type.elem_type
    if elem not in _TRITON_TYPES:
        raise ExportError(f"Tensor '{info.name}' has ONNX element type {TensorProto.DataType.Name(elem)}, which "
                          f"Triton cannot describe; expected one of {sorted(_TRITON_TYPES.values())}.")
    entry.name = info.name
    entry.data_type = model_config_pb2.DataType.Value(_TRITON_TYPES[elem])
    # The first axis is the batch axis, which Triton leaves out of dims when max_batch_size > 0.
    entry.dims.extend(d.dim_value if d.HasField("dim_value") else -1 for d in info.type.tensor_type.shape.dim[1:])


def model_config(model: onnx.ModelProto, name: str,
                 max_batch_size: int = DEFAULT_MAX_BATCH_SIZE) -> model_config_pb2.ModelConfig:
    """The Triton ModelConfig message for ONNX ``model`` served as ``name``."""
    if not isinstance(max_batch_size, int) or isinstance(max_batch_size, bool) or max_batch_size < 1:
        raise ExportError(f"max_batch_size must be a positive integer. Received: {max_batch_size!r}")
    config = model_config_pb2.ModelConfig(name=name, platform="onnxruntime_onnx", max_batch_size=max_batch_size)
    for info in model.graph.input:
        _tensor(config.input.add(), info)
    for info in model.graph.output:
        _tensor(config.output.add(), info)
    config.dynamic_batching.SetInParent()
    return config


def config_text(model: onnx.ModelProto, name: str, max_batch_size: int = DEFAULT_MAX_BATCH_SIZE) -> str:
    """The config.pbtxt text for ONNX ``model`` served as ``name`` (protobuf text format)."""
    config = model_config(model, name, max_batch_size)
    return text_format.MessageToString(config, as_utf8=True, use_short_repeated_primitives=True)


def write_repository(model: onnx.ModelProto, directory: os.PathLike[str] | str, name: str,
                     max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
                     check: Callable[[str], object] | None = None) -> str:
    """Write ``directory/name/config.pbtxt`` and ``directory/name/1/model.onnx``; return the model path."""
    if not name or os.sep in name or name in (".", ".."):
        raise ExportError(f"The Triton model name must be a plain directory name. Received: {name!r}")
    text = config_text(model, name, max_batch_size)
    model_dir = os.path.join(os.fspath(directory), name)
    model_path = writer.save(model, os.path.join(model_dir, "1", "model.onnx"), check=check)
    writer.write_text(os.path.join(model_dir, "config.pbtxt"), text)
    return model_path
