"""The converter of ops composed of other ops: the composition traced into op nodes, each converted by its own."""
from __future__ import annotations

from typing import TYPE_CHECKING

from export.builder import NATIVE, Value
from export.context import ConversionContext
from export.registry import lookup_op, op_converter
from kgraph import tree
from kgraph.graph import topology as graph
from kgraph.graph import tracing
from kgraph.graph.keras_tensor import KerasTensor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from export.registry import ConverterResult

# An op written as a composition of other ops (``log2`` is ``log(x) / log(2)``) records one node; its converter
# runs the composition on scratch KerasTensors and converts the op nodes that records.


def convert_composite(ctx: ConversionContext) -> ConverterResult:
    """The op's composition traced into op nodes, each converted by its own converter."""
    fn = type(ctx.layer).fn
    fn = getattr(fn, "__wrapped__", fn)
    with tracing.scratch():
        try:
            inputs, outputs = tracing.trace(fn, ctx.node.call_args, ctx.node.call_kwargs)
        except (TypeError, ValueError) as err:  # a part of the composition that runs on values only
            raise ctx.error(f"its composition cannot be traced into ONNX-convertible ops: {err}") from err
        flat = tree.flatten(outputs)
        if not all(isinstance(t, KerasTensor) for t in flat):
            raise ctx.error("an output does not depend on the inputs")
        values = {id(inputs[id(t)]): ctx._value(i) for i, t in enumerate(ctx.node.input_tensors)
                  if id(t) in inputs}
        order, _ = graph.topological_nodes(set(values), flat)
        for node in order:
            if node.is_input or isinstance(node.outbound_layer, tracing.Placeholder):
                continue
            inner = ConversionContext(ctx.builder, node, values, f"{ctx.scope}/{node.outbound_layer.name}")
            results = lookup_op(node.outbound_layer, ctx.opset)(inner)
            results = list(results) if isinstance(results, (list, tuple)) else [results]
            for tensor, out in zip(node.output_tensors, results):
                values[id(tensor)] = Value(out, NATIVE) if isinstance(out, str) else out
        return [values[id(t)] for t in flat] if isinstance(outputs, (list, tuple)) else values[id(flat[0])]


def register_composites(names: Iterable[str], opset: int = 13) -> None:
    """Register ``convert_composite`` for each op in ``names``."""
    for name in names:
        op_converter(name, opset=opset)(convert_composite)
