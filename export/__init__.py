"""Export kgraph models to ONNX: ``to_onnx(model, path)``, parity checks with ``verify``."""
from export.builder import CHANNELS_FIRST, NATIVE, FeatureOrder, Value
from export.exporter import to_onnx
from export.registry import ExportError, converter, inherit_converter
from export.verify import verify

__all__ = ["CHANNELS_FIRST", "NATIVE", "ExportError", "FeatureOrder", "Value", "converter", "inherit_converter",
           "to_onnx", "verify"]
