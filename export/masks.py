"""Masks in the exported graph: boolean (batch, time) tensors beside the values, read as right padding.

A mask made by ``Embedding(mask_zero=True)`` or ``Masking`` becomes an ONNX
bool tensor; layers that pass it on unchanged pass its name on. Its readers:
native LSTM/GRU nodes (a layer or a Bidirectional) run on each row's unmasked
steps moved to the front, with ``sequence_lens`` their count, which is exactly
Keras's skipping of masked steps for any mask (padding at either end or in the
middle); their sequence outputs are moved back (zeros at masked steps, or the
last unmasked step's output, as Keras gives them). ``GlobalAveragePooling1D``
averages over the unmasked steps; attention layers take the masks as theirs. Any other
reader, or a mask made any other way, is an ``ExportError``: the exported
graph never silently ignores a mask.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import kgraph
from export.builder import NATIVE, Value
from export.registry import ExportError
from kgraph import layers

if TYPE_CHECKING:
    from typing import Any, NoReturn

    from export.builder import GraphBuilder
    from export.context import ConversionContext
    from kgraph.graph.node import Node

_RECURRENT = (layers.LSTM, layers.GRU)


def _int64(values):
    return np.array(values, dtype=np.int64)


def _made_by(node):
    """The layer that made the mask ``node`` reads (walking back over layers that pass it on)."""
    tensor = next(t for t in node.input_tensors if t._keras_mask is not None)
    mask = tensor._keras_mask
    while True:
        made = kgraph.graph.topology.producer(tensor)
        same = [t for t in made.input_tensors if t._keras_mask is mask]
        if not same:
            return made.outbound_layer
        tensor = same[0]


def refuse(node: Node, why: str) -> NoReturn:
    layer, source = node.outbound_layer, _made_by(node)
    raise ExportError(f"Cannot export layer '{layer.name}' ({type(layer).__name__}): it reads a mask made by layer "
                      f"'{source.name}' ({type(source).__name__}), and {why}. Expected a model without masks for "
                      "export (mask_zero=False, no Masking layer), or a mask read only by LSTM/GRU layers "
                      "(also in Bidirectional) and GlobalAveragePooling1D.")


class MaskTracker:
    """ONNX names of the masks of the tensors converted so far (id of KerasTensor -> bool tensor name)."""

    def __init__(self) -> None:
        self.names = {}
        self._pending = {}
        self._carries = False

    def reads(self, node: Node) -> str | None:
        """The ONNX mask of ``node``'s first input (None if unmasked)."""
        first = node.input_tensors[0] if node.input_tensors else None
        return None if first is None else self.names.get(id(first))

    def prepare(self, ctx: ConversionContext, node: Node) -> bool:
        """Before converting ``node``: give a recurrent converter its ``sequence_lens``; refuse other readers.

        Returns True when this module converts the node itself (masked pooling)."""
        layer, mask = node.outbound_layer, self.reads(node)
        if mask is None:
            if any(t._keras_mask is not None for t in node.input_tensors) and _reads_mask(layer):
                refuse(node, "that mask could not be expressed in ONNX")
            return False
        if isinstance(layer, _RECURRENT) or (isinstance(layer, layers.Bidirectional)
                                             and isinstance(layer.forward_layer, _RECURRENT)):
            recurrent = layer.forward_layer if isinstance(layer, layers.Bidirectional) else layer
            self._carries = layer.return_sequences and not recurrent.zero_output_for_mask
            if self._carries and recurrent.go_backwards:
                refuse(node, "with return_sequences=True and go_backwards=True Keras repeats the last output at "
                             "masked steps in processing order, which this exporter does not express")
            counts = ctx.op("Cast", [mask], to=6, name="mask_as_int")  # int32
            ctx.sequence_lens = ctx.op("ReduceSum", [counts, ctx.const(_int64([1]), name="time_axis")], keepdims=0,
                                       name="sequence_lens")
            ctx.compacted_input = Value(self._compact(ctx, node, mask), NATIVE)
            return False
        if isinstance(layer, layers.GlobalAveragePooling1D) and not layer.keepdims:
            return True
        if isinstance(layer, layers.MultiHeadAttention):
            ctx.sequence_mask = self._attention_mask(ctx, node)
            return False
        if self.for_trace(node) is not None:
            return False
        if _reads_mask(layer):
            refuse(node, "this exporter expresses masks only for LSTM/GRU and GlobalAveragePooling1D")
        return False

    def _compact(self, ctx, node, mask):
        """The sequence with each row's unmasked steps moved to the front, in order; remembers the inverse.

        Keras skips masked steps (the state is carried over them), so a recurrent node run on the unmasked steps
        alone, with ``sequence_lens`` their count, gives Keras's states for any mask, not only padding at the end.
        """
        shape = ctx.op("Shape", [mask])
        steps = ctx.op("Gather", [shape, ctx.const(np.asarray(1, np.int64), name="time_index")], axis=0)
        positions = ctx.op("Range", [ctx.const(np.asarray(0, np.int64), name="start"), steps,
                                     ctx.const(np.asarray(1, np.int64), name="step")])
        masked = ctx.op("Cast", [ctx.op("Not", [mask])], to=7)  # int64
        keys = ctx.op("Add", [ctx.op("Mul", [masked, steps]), positions], name="keys")  # unique: masked after
        k = ctx.op("Unsqueeze", [steps, ctx.const(_int64([0]), name="k_axis")])
        self._order = ctx.op("TopK", [keys, k], outputs=2, axis=1, largest=0, sorted=1)[1]
        self._steps = k
        return self._along_time(ctx, ctx.input(0, NATIVE), self._order, ctx.input_rank(0))

    def _along_time(self, ctx, x, order, rank):
        """``x`` (batch, time, ...) gathered along time by ``order`` (batch, time)."""
        index = ctx.op("Unsqueeze", [order, ctx.const(_int64(list(range(2, rank))), name="feature_axes")]) \
            if rank > 2 else order
        index = ctx.op("Expand", [index, ctx.op("Shape", [x])])
        return ctx.op("GatherElements", [x, index], axis=1)

    def uncompact(self, ctx: ConversionContext, node: Node, values: dict[int, Value], builder: GraphBuilder) -> None:
        """Put a recurrent node's sequence outputs back at their steps: zeros at masked steps (Keras's
        ``zero_output_for_mask``, as in Bidirectional), or the last unmasked step's output (Keras's default)."""
        mask = self.reads(node)
        if self._carries:
            seen = ctx.op("CumSum", [ctx.op("Cast", [mask], to=7), ctx.const(np.asarray(1, np.int64), name="axis")])
            one = ctx.const(np.asarray(1, np.int64), name="one")
            source = ctx.op("Max", [ctx.op("Sub", [seen, one]), ctx.const(np.asarray(0, np.int64), name="zero")])
            started = ctx.op("Greater", [seen, ctx.const(np.asarray(0, np.int64), name="zero")], name="started")
        else:
            source = ctx.op("TopK", [self._order, self._steps], outputs=2, axis=1, largest=0, sorted=1)[1]
        for tensor in node.output_tensors:
            if tensor._keras_mask is None:
                continue
            rank = len(tensor.shape)
            native = builder.convert(ctx, values[id(tensor)], rank, NATIVE)
            placed = self._along_time(ctx, native, source, rank)
            if self._carries:
                # Before the first unmasked step Keras's previous output is zeros.
                gate = ctx.op("Unsqueeze", [started, ctx.const(_int64(list(range(2, rank))), name="feature_axes")])
                zero = ctx.const(np.zeros((), dtype=tensor.dtype), name="zero_output")
                placed = ctx.op("Where", [gate, placed, zero])
            values[id(tensor)] = Value(placed, NATIVE)

    def for_trace(self, node: Node) -> Any:
        """The ``mask`` argument for tracing a layer without a converter whose ``call`` takes one: the input
        masks as KerasTensors (their ONNX names come from ``trace_values``), or None."""
        layer = node.outbound_layer
        from export.registry import has_converter
        if not getattr(layer, "_call_accepts_mask", False) or "mask" in node.call_kwargs or \
                has_converter(type(layer)) or not node.call_args:
            return None
        masks = kgraph.tree.map_structure(
            lambda t: t._keras_mask if isinstance(t, kgraph.KerasTensor) else None, node.call_args[0])
        flat = [(t, m) for t, m in zip(kgraph.tree.flatten(node.call_args[0]), kgraph.tree.flatten(masks))
                if m is not None]
        if not flat or any(id(t) not in self.names for t, _ in flat):
            return None
        self._pending = {id(m): self.names[id(t)] for t, m in flat}
        return masks

    def trace_values(self, masks: Any) -> dict[int, Value]:
        """``{id(mask KerasTensor): Value}`` for the masks ``for_trace`` gave (empty when none)."""
        if masks is None:
            return {}
        return {key: Value(name, NATIVE) for key, name in self._pending.items()}

    def _attention_mask(self, ctx, node):
        """MultiHeadAttention's mask from its query/value/key masks: (batch, 1, query time, value time)."""
        arguments = {"query": node.call_args[0] if node.call_args else node.call_kwargs.get("query"),
                     "value": node.call_args[1] if len(node.call_args) > 1 else node.call_kwargs.get("value"),
                     "key": node.call_args[2] if len(node.call_args) > 2 else node.call_kwargs.get("key")}
        combined = None
        for name, axes in (("query", [1, 3]), ("value", [1, 2]), ("key", [1, 2])):
            tensor = arguments[name]
            mask = self.names.get(id(tensor)) if tensor is not None else None
            if tensor is not None and tensor._keras_mask is not None and mask is None:
                refuse(node, f"the mask of its {name} could not be expressed in ONNX")
            if mask is not None:
                part = ctx.op("Unsqueeze", [mask, ctx.const(_int64(axes), name=f"{name}_mask_axes")])
                combined = part if combined is None else ctx.op("And", [combined, part])
        return combined

    def masked_average(self, ctx: ConversionContext, node: Node) -> str:
        """GlobalAveragePooling1D over the unmasked steps: sum(x * m) / sum(m)."""
        x = ctx.input(0, NATIVE)
        dtype = ctx.output_dtype(0)
        weights = ctx.op("Cast", [self.reads(node)], to=_onnx_float(dtype), name="mask_weights")
        weights = ctx.op("Unsqueeze", [weights, ctx.const(_int64([2]), name="feature_axis")])
        axis = ctx.const(_int64([1]), name="time_axis")
        total = ctx.op("ReduceSum", [ctx.op("Mul", [x, weights]), axis], keepdims=0)
        return ctx.op("Div", [total, ctx.op("ReduceSum", [weights, axis], keepdims=0)])

    def record(self, ctx: ConversionContext, node: Node, values: dict[int, Value]) -> None:
        """After converting ``node``: the ONNX masks of its outputs (made, passed on, or refused)."""
        layer = node.outbound_layer
        for tensor in node.output_tensors:
            mask = tensor._keras_mask
            if mask is None:
                continue
            passed = [t for t in node.input_tensors if t._keras_mask is mask and id(t) in self.names]
            if passed:
                self.names[id(tensor)] = self.names[id(passed[0])]
            elif isinstance(layer, layers.Embedding) and layer.mask_zero:
                indices = ctx.op("Cast", [ctx.input(0, NATIVE)], to=7, name="indices")  # int64
                zero = ctx.const(np.zeros((), dtype=np.int64), name="padding_index")
                self.names[id(tensor)] = ctx.op("Not", [ctx.op("Equal", [indices, zero])], name="mask")
            elif isinstance(layer, layers.Masking):
                value = ctx.const(np.asarray(layer.mask_value, dtype=ctx.input_dtype(0)), name="mask_value")
                kept = ctx.op("Cast", [ctx.op("Not", [ctx.op("Equal", [ctx.input(0, NATIVE), value])])], to=1)
                features = ctx.const(_int64([-1]), name="feature_axis")
                any_kept = ctx.op("ReduceMax", [kept], axes=[-1], keepdims=0) if ctx.opset < 18 else \
                    ctx.op("ReduceMax", [kept, features], keepdims=0)
                self.names[id(tensor)] = ctx.op("Cast", [any_kept], to=9, name="mask")  # bool
            # Any other new mask stays unknown: a reader of it is refused in prepare().


def _reads_mask(layer):
    return bool(getattr(layer, "_call_accepts_mask", False) or getattr(layer, "_call_mask_arguments", ()))


def _onnx_float(dtype):
    return {"float16": 10, "float32": 1, "float64": 11}[str(dtype)]
