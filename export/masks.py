"""Masks in the exported graph: boolean tensors beside the values, read as Keras reads them.

A mask made by ``Embedding(mask_zero=True)`` or ``Masking`` becomes an ONNX
bool tensor; a mask made by any other layer's ``compute_mask`` (a user
layer's ``ops.not_equal(inputs, 0)``) is traced into ops like a ``call``,
its nodes emitted where a reader first needs it; layers that pass a mask on
unchanged pass its name on. Its readers: native LSTM/GRU nodes (a layer or a
Bidirectional) run on each row's unmasked steps moved to the front, with
``sequence_lens`` their count, which is exactly Keras's skipping of masked
steps for any mask (padding at either end or in the middle); their sequence
outputs are moved back (zeros at masked steps, or the last unmasked step's
output, as Keras gives them). ``GlobalAveragePooling1D`` averages over the
unmasked steps; ``MultiHeadAttention`` takes its query/value/key masks (given,
or filled in from its inputs' masks); a layer exported by tracing its
``call`` receives its ``mask`` (or ``<argument>_mask``) argument as a tensor
of the trace, and its inputs carry their masks inside the trace, as arrays
do when the model runs. Any other reader, or a mask that cannot be traced,
is an ``ExportError``: the exported graph never silently ignores a mask.
"""
from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING

import numpy as np

import kgraph
from export.builder import NATIVE, Value
from export.registry import ExportError
from kgraph import layers
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers import mask_propagation

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

    from export.builder import GraphBuilder
    from export.context import ConversionContext
    from kgraph.graph.node import Node

_RECURRENT = (layers.LSTM, layers.GRU)
# MultiHeadAttention's sequence masks and the axes that make them (batch, heads, query time, value time).
ATTENTION_MASKS = (("query", (1, 3)), ("value", (1, 2)), ("key", (1, 2)))


def _int64(values):
    return np.array(values, dtype=np.int64)


def call_arguments(node: Node) -> dict[str, Any]:
    """The arguments of ``node``'s call by the names of the layer's ``call`` parameters (given ones only)."""
    return inspect.signature(node.outbound_layer.call).bind_partial(*node.call_args, **node.call_kwargs).arguments


class _Deferred:
    """An ONNX mask emitted when first read: ``make()`` gives its name or raises an ExportError (kept as the
    reason the mask cannot be expressed)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make, self.name, self.reason = make, None, None

    def resolve(self) -> Any:
        if self._make is not None:
            make, self._make = self._make, None
            try:
                self.name = make()
            except ExportError as err:
                self.reason = str(err)
        return self.name


def _pick(shared, tensor):
    names = shared.resolve()
    if shared.reason is not None:
        raise ExportError(shared.reason)
    return names[id(tensor)]


class MaskTracker:
    """ONNX names of the masks of the tensors converted so far (id of KerasTensor -> bool tensor name)."""

    def __init__(self) -> None:
        self.names = {}  # id(KerasTensor) -> ONNX name, or a _Deferred one
        self._origins = {}  # id(placeholder of a trace) -> the tensor it stands for
        self._keep = []  # the tensors named here, kept alive so that no other object takes their ids
        self._carries = False

    # ----- names -----------------------------------------------------------------------------
    def name_of(self, tensor: KerasTensor | None) -> str | None:
        """The ONNX mask of ``tensor`` (emitted now if deferred), or None (unmasked, or not expressible)."""
        entry = self.names.get(id(tensor)) if tensor is not None else None
        return entry.resolve() if isinstance(entry, _Deferred) else entry

    def _name(self, tensor, entry):
        self.names[id(tensor)] = entry
        self._keep.append(tensor)  # a tensor of a finished trace would otherwise leave its id to another

    def _unknown(self, tensor):
        entry = self.names.get(id(tensor))
        reason = entry.reason if isinstance(entry, _Deferred) else None
        return "that mask could not be expressed in ONNX" + (f" ({reason})" if reason else "")

    def reads(self, node: Node) -> str | None:
        """The ONNX mask of ``node``'s first input (None if unmasked)."""
        return self.name_of(node.input_tensors[0]) if node.input_tensors else None

    def refuse(self, node: Node, why: str, tensor: KerasTensor | None = None) -> NoReturn:
        """An ExportError naming ``node``'s layer, the layer that made the mask it reads (of ``tensor``) and why."""
        if tensor is None:
            tensor = next(t for t in node.input_tensors if t._keras_mask is not None)
        layer, source = node.outbound_layer, self._made_by(tensor)
        raise ExportError(f"Cannot export layer '{layer.name}' ({type(layer).__name__}): it reads a mask made by "
                          f"layer '{source.name}' ({type(source).__name__}), and {why}. Expected a model without "
                          "masks for export (mask_zero=False, no Masking layer), or masks read only by LSTM/GRU "
                          "layers (also in Bidirectional), GlobalAveragePooling1D, MultiHeadAttention and layers "
                          "exported by tracing their `call`.")

    def _made_by(self, tensor):
        """The layer that made ``tensor``'s mask (walking back over layers that pass it on, and out of traces)."""
        mask = tensor._keras_mask
        while True:
            if id(tensor) in self._origins:
                tensor = self._origins[id(tensor)]
                mask = tensor._keras_mask
                continue
            made = kgraph.graph.topology.producer(tensor)
            same = [t for t in made.input_tensors if t._keras_mask is mask]
            if not same:
                return made.outbound_layer
            tensor = same[0]

    # ----- readers ---------------------------------------------------------------------------
    def prepare(self, ctx: ConversionContext, node: Node, kind: str, converted: Any) -> bool:
        """Before converting ``node`` (exported as ``kind`` by ``converted``'s converter, see exporter._route):
        give a recurrent converter its ``sequence_lens``, MultiHeadAttention its masks; refuse other readers.

        Returns True when this module converts the node itself (masked pooling)."""
        layer = node.outbound_layer
        if kind == "trace":
            self._check_trace(node)
            return False
        if kind in ("op", "nested"):  # ops take no masks; a nested model's call ignores them, as when it runs
            return False
        recurrent = converted.forward_layer if isinstance(converted, layers.Bidirectional) else converted
        if kind in ("convert", "fused") and isinstance(recurrent, _RECURRENT):
            mask = self._first_mask(node)
            if mask is not None:
                self._recurrent(ctx, node, converted, recurrent, mask)
            return False
        if kind == "convert" and isinstance(layer, layers.GlobalAveragePooling1D) and not layer.keepdims:
            return self._first_mask(node) is not None
        if kind == "convert" and isinstance(layer, layers.MultiHeadAttention):
            ctx.sequence_mask = self._attention_mask(ctx, node)
            return False
        if _reads_mask(layer):
            for tensor in node.input_tensors:
                if tensor._keras_mask is not None and self.name_of(tensor) is None:
                    self.refuse(node, self._unknown(tensor), tensor)
            if any(t._keras_mask is not None for t in node.input_tensors):
                self.refuse(node, "this exporter expresses masks only for LSTM/GRU, GlobalAveragePooling1D, "
                                  "MultiHeadAttention and layers traced from their `call`")
        return False

    def _first_mask(self, node):
        """The ONNX mask of the first input; refused if it has one that cannot be expressed."""
        first = node.input_tensors[0]
        mask = self.name_of(first)
        if mask is None and first._keras_mask is not None:
            self.refuse(node, self._unknown(first), first)
        return mask

    def _check_trace(self, node):
        """A traced ``call`` that takes ``mask`` (or ``<argument>_mask``): each mask it gets must be expressible."""
        owners = {id(t._keras_mask): t for t in node.input_tensors if t._keras_mask is not None}
        _, extra = mask_propagation.mask_arguments(node.outbound_layer, node.call_args, node.call_kwargs,
                                                     mask_propagation.keras_mask)
        for mask in kgraph.tree.flatten(list(extra.values())):
            owner = owners.get(id(mask))
            if owner is not None and self.name_of(owner) is None:
                self.refuse(node, self._unknown(owner), owner)

    def _recurrent(self, ctx, node, layer, recurrent, mask):
        self._carries = layer.return_sequences and not recurrent.zero_output_for_mask
        if self._carries and recurrent.go_backwards:
            self.refuse(node, "with return_sequences=True and go_backwards=True Keras repeats the last output at "
                              "masked steps in processing order, which this exporter does not express")
        counts = ctx.op("Cast", [mask], to=6, name="mask_as_int")  # int32
        ctx.sequence_lens = ctx.op("ReduceSum", [counts, ctx.const(_int64([1]), name="time_axis")], keepdims=0,
                                   name="sequence_lens")
        ctx.compacted_input = Value(self._compact(ctx, node, mask), NATIVE)

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

    def _attention_mask(self, ctx, node):
        """MultiHeadAttention's mask from the masks of its query/value/key where the call gives no
        ``<argument>_mask`` (as the layer fills them in): (batch, 1, query time, value time), or None."""
        arguments = call_arguments(node)
        combined = None
        for name, axes in ATTENTION_MASKS:
            tensor = arguments.get(name)
            if not isinstance(tensor, KerasTensor) or tensor._keras_mask is None or \
                    arguments.get(f"{name}_mask") is not None:
                continue
            mask = self.name_of(tensor)
            if mask is None:
                self.refuse(node, f"the mask of its {name}: {self._unknown(tensor)}", tensor)
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

    # ----- traces ----------------------------------------------------------------------------
    def enter_trace(self, owner: Node, inputs: dict[int, KerasTensor], carried: list[tuple[KerasTensor, Any]],
                    read: set[int]) -> dict[int, Value]:
        """Masks inside a trace of ``owner``'s layer: each placeholder of a masked tensor (``inputs``, from
        ``kgraph.graph.tracing.trace``) has that tensor's mask; returns the Values of the mask placeholders the
        trace reads as tensors (ids in ``read``)."""
        found = {}
        for tensor, mask in carried:
            placeholder, mask_placeholder = inputs[id(tensor)], inputs[id(mask)]
            self._origins[id(placeholder)] = tensor
            self._keep.append(placeholder)  # its id keys _origins
            if id(tensor) in self.names:
                self._name(placeholder, self.names[id(tensor)])
            if id(mask_placeholder) in read and id(mask_placeholder) not in found:
                name = self.name_of(tensor)
                if name is None:
                    self.refuse(owner, self._unknown(tensor), tensor)
                found[id(mask_placeholder)] = Value(name, NATIVE)
        return found

    # ----- makers ----------------------------------------------------------------------------
    def record(self, ctx: ConversionContext, node: Node, values: dict[int, Value]) -> list[KerasTensor]:
        """After converting ``node``: the ONNX masks of its outputs (made, or passed on). Returns the outputs
        whose new masks come from the layer's own ``compute_mask`` (for ``defer``)."""
        layer = node.outbound_layer
        pending = []
        for tensor in node.output_tensors:
            mask = tensor._keras_mask
            if mask is None:
                continue
            passed = [t for t in node.input_tensors if t._keras_mask is mask]
            if passed:
                if id(passed[0]) in self.names:
                    self._name(tensor, self.names[id(passed[0])])
            elif isinstance(layer, layers.Embedding) and layer.mask_zero:
                indices = ctx.op("Cast", [ctx.input(0, NATIVE)], to=7, name="indices")  # int64
                zero = ctx.const(np.zeros((), dtype=np.int64), name="padding_index")
                self._name(tensor, ctx.op("Not", [ctx.op("Equal", [indices, zero])], name="mask"))
            elif isinstance(layer, layers.Masking):
                value = ctx.const(np.asarray(layer.mask_value, dtype=ctx.input_dtype(0)), name="mask_value")
                kept = ctx.op("Cast", [ctx.op("Not", [ctx.op("Equal", [ctx.input(0, NATIVE), value])])], to=1)
                features = ctx.const(_int64([-1]), name="feature_axis")
                any_kept = ctx.op("ReduceMax", [kept], axes=[-1], keepdims=0) if ctx.opset < 18 else \
                    ctx.op("ReduceMax", [kept, features], keepdims=0)
                self._name(tensor, ctx.op("Cast", [any_kept], to=9, name="mask"))  # bool
            else:
                pending.append(tensor)
        return pending

    def defer(self, tensors: list[KerasTensor], make: Callable[[], dict[int, str]]) -> None:
        """The masks of ``tensors`` come from ``make()`` (``{id(tensor): ONNX name}``), run when one is first read."""
        shared = _Deferred(make)
        for tensor in tensors:
            self._name(tensor, _Deferred(functools.partial(_pick, shared, tensor)))


def _reads_mask(layer):
    return bool(getattr(layer, "_call_accepts_mask", False) or getattr(layer, "_call_mask_arguments", ()))


def _onnx_float(dtype):
    return {"float16": 10, "float32": 1, "float64": 11}[str(dtype)]
