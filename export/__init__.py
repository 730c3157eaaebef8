"""Export kgraph models to ONNX: ``to_onnx(model, path)``, parity checks with ``verify``.

The names below load on first use, so ``kgraph-export --help`` and ``--version`` answer without importing
kgraph, onnx or onnxruntime.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Public name -> the module that defines it.
_LAZY = {
    "CHANNELS_FIRST": "export.builder",
    "NATIVE": "export.builder",
    "FeatureOrder": "export.builder",
    "Value": "export.builder",
    "to_onnx": "export.exporter",
    "ExportError": "export.registry",
    "converter": "export.registry",
    "inherit_converter": "export.registry",
    "verify": "export.verify",
}

if TYPE_CHECKING:
    from export.builder import CHANNELS_FIRST, NATIVE, FeatureOrder, Value
    from export.exporter import to_onnx
    from export.registry import ExportError, converter, inherit_converter
    from export.verify import verify

__all__ = ["CHANNELS_FIRST", "NATIVE", "ExportError", "FeatureOrder", "Value", "__version__", "converter",
           "inherit_converter", "to_onnx", "verify"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
    # ``import export`` then ``export.registry.op_converter``: a submodule loads on first use, as the face's.
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'export' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """The package, whose ``verify`` stays the function when the submodule of that name is imported."""

    def __setattr__(self, name, value):
        # Importing ``export.verify`` binds the submodule on its parent; the package's face keeps the function.
        if name == "verify" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
