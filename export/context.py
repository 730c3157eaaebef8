"""ConversionContext: what a converter sees of one layer call and of the graph being built."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, onnx_dtype
from export.registry import ExportError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    import numpy.typing as npt

    from export.builder import GraphBuilder, Layout, Value
    from kgraph.backend.variable import Variable
    from kgraph.graph.keras_tensor import KerasTensor
    from kgraph.graph.node import Node


class ConversionContext:
    """One layer call (``node``) being converted, with helpers that emit into the shared builder."""

    # Input i is node.input_tensors[i]; shapes and dtypes are the Keras (logical, channels-last) ones,
    # whatever layout the ONNX data is in.

    def __init__(self, builder: GraphBuilder, node: Node | None, values: dict[int, Value], scope: str) -> None:
        self.builder = builder
        self.node = node
        self.layer = node.outbound_layer if node is not None else None
        self.scope = scope
        self._values = values

    # ----- facts about the call ---------------------------------------------------------
    @property
    def opset(self) -> int:
        """The target opset of the export."""
        return self.builder.opset

    @property
    def num_inputs(self) -> int:
        return len(self.node.input_tensors)

    @property
    def num_outputs(self) -> int:
        return len(self.node.output_tensors)

    def input_shape(self, i: int = 0) -> tuple[int | None, ...]:
        """Keras shape of input ``i`` (batch axis None)."""
        return tuple(self.node.input_tensors[i].shape)

    def input_dtype(self, i: int = 0) -> str:
        return self.node.input_tensors[i].dtype

    def input_rank(self, i: int = 0) -> int:
        return len(self.node.input_tensors[i].shape)

    def output_shape(self, i: int = 0) -> tuple[int | None, ...]:
        """Keras shape of output ``i`` (batch axis None)."""
        return tuple(self.node.output_tensors[i].shape)

    def output_rank(self, i: int = 0) -> int:
        return len(self.node.output_tensors[i].shape)

    def output_dtype(self, i: int = 0) -> str:
        return self.node.output_tensors[i].dtype

    def layout(self, i: int = 0) -> Layout:
        """The layout input ``i``'s data is in now (NATIVE, CHANNELS_FIRST or a FeatureOrder)."""
        return self._value(i).layout.normalize(self.input_rank(i))

    # ----- reading inputs -------------------------------------------------------------
    def input(self, i: int = 0, layout: Layout | None = NATIVE, dtype: npt.DTypeLike | None = None) -> str:
        """ONNX name of input ``i`` in ``layout`` (None: as it is), cast to ``dtype`` if given."""
        value = self._value(i)
        name = value.name if layout is None else self.builder.convert(self, value, self.input_rank(i), layout)
        if dtype is not None and np.dtype(dtype) != np.dtype(self.input_dtype(i)):
            name = self.op("Cast", [name], to=onnx_dtype(dtype), name="Cast")
        return name

    def inputs(self, layout: Layout | None = NATIVE, dtype: npt.DTypeLike | None = None) -> list[str]:
        """ONNX names of every input, each in ``layout``."""
        return [self.input(i, layout, dtype) for i in range(self.num_inputs)]

    @property
    def arguments(self) -> dict[str, Any]:
        """For an op node: every parameter of the op by name, defaults filled in (KerasTensors in place)."""
        return self.layer.arguments(self.node)

    def tensor(self, value: KerasTensor | Variable | npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> str:
        """ONNX name (native layout) of an op argument: a KerasTensor input, a weight Variable or a constant.

        Constants (Python numbers, NumPy arrays) become initializers of ``dtype`` (default: the node's
        first output dtype); a KerasTensor input or a Variable is cast to ``dtype`` if it differs.
        """
        from kgraph import KerasTensor, Variable
        if isinstance(value, KerasTensor):
            for i, t in enumerate(self.node.input_tensors):
                if t is value:
                    return self.input(i, NATIVE, dtype)
            raise self.error(f"its argument {value!r} is not one of the node's inputs")
        if isinstance(value, Variable):
            name = self.weight(value)
            if dtype is not None and np.dtype(dtype) != np.dtype(value.dtype):
                name = self.op("Cast", [name], to=onnx_dtype(dtype), name="Cast")
            return name
        dtype = dtype or (self.output_dtype() if self.num_outputs else None)
        return self.const(np.asarray(value, dtype=dtype))

    def _value(self, i):
        tensor = self.node.input_tensors[i]
        try:
            return self._values[id(tensor)]
        except KeyError:
            raise ExportError(f"Layer '{self.layer.name}' reads tensor {tensor!r}, which no earlier layer "
                              "produced; expected the graph to be walked deepest depth first.") from None

    # ----- emitting -------------------------------------------------------------------------
    def op(self, op_type: str, inputs: Iterable[str], *, outputs: int = 1, name: str | None = None,
           domain: str | None = None, **attrs: Any) -> str | list[str]:
        """Append node ``<layer path>/<name or op_type>``; return its output name (a list if ``outputs`` > 1)."""
        node_name = self.unique_name(name or op_type)
        if outputs == 1:
            out = [node_name]
        else:
            out = [self.builder.unique_name(f"{node_name}:{k}") for k in range(outputs)]
        self.builder.add_node(op_type, inputs, out, node_name, domain=domain, **attrs)
        return out[0] if outputs == 1 else out

    def weight(self, variable: Variable, transform: Callable[[np.ndarray], npt.ArrayLike] | None = None,
               variant: str | None = None) -> str:
        """Initializer name (``variable.path``, plus ``_<variant>``) for a weight, optionally transformed."""
        return self.builder.weight(variable, self.scope, transform=transform, variant=variant)

    def const(self, value: npt.ArrayLike, dtype: npt.DTypeLike | None = None, name: str = "const") -> str:
        """Initializer name for a constant array (equal constants are shared)."""
        return self.builder.const(value, self.scope, name=name, dtype=dtype)

    def unique_name(self, base: str) -> str:
        """A fresh name ``<layer path>/<base>`` (suffixed ``_1``, ``_2``... if taken)."""
        return self.builder.unique_name(f"{self.scope}/{base}" if self.scope else base)

    def error(self, message: str) -> ExportError:
        """An ExportError naming this layer (or operation) and its class, for converters to raise."""
        what = "operation" if getattr(self.layer, "op_name", None) else "layer"
        return ExportError(f"Cannot export {what} '{self.layer.name}' ({type(self.layer).__name__}): {message}")

