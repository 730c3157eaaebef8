"""to_onnx: walk a kgraph model's nodes deepest depth first and emit each layer call through its converter."""
from __future__ import annotations

import os
import tempfile
import traceback
from typing import TYPE_CHECKING

import onnx
from onnx import helper

import kgraph
from export import (
    converters,  # noqa: F401  (registers every converter)
    scan,
    writer,
)
from export.builder import NATIVE, GraphBuilder, Value
from export.context import ConversionContext
from export.converters.activations import has_emitter
from export.masks import MaskTracker
from export.opsets import ir_version_for, max_ir_version, resolve_opset
from export.registry import ExportError, has_converter, lookup, lookup_op
from export.symbols import share_input_symbols
from kgraph.graph import topology as graph
from kgraph.graph import tracing
from kgraph.layers import mask_propagation
from kgraph.ops.operations import OpOperation

if TYPE_CHECKING:
    from kgraph.graph.node import Node
    from kgraph.graph.operation import Operation
    from kgraph.models.functional import Functional
    from kgraph.models.model import Model

BATCH = "batch"


def functional_of(model: Model) -> Functional:
    """The Functional graph of a model: its own, or for a subclassed Model its ``call`` traced once."""
    if isinstance(model, kgraph.Sequential):
        return model.functional
    if isinstance(model, kgraph.models.Functional):
        return model
    if not isinstance(model, kgraph.Model):
        raise ExportError(f"Expected a kgraph model. Received {type(model).__name__} "
                          f"'{getattr(model, 'name', model)}'.")
    cached = model.__dict__.get("_traced_functional")
    if cached is None:
        cached = _trace_subclassed(model)
        object.__setattr__(model, "_traced_functional", cached)
    return cached


def _trace_subclassed(model):
    """A subclassed Model's ``call`` on symbolic inputs of the shapes it was first called with, as a Functional.

    As when Keras calls a model on ``Input`` tensors, its layers record these calls as nodes."""
    shapes = model._build_input_shape
    if shapes is None:
        raise ExportError(f"Model '{model.name}' ({type(model).__name__}) has never been called, so its input "
                          "shapes are unknown. Expected a model called once on data (or trained) before export.")
    is_shape = lambda v: isinstance(v, tuple) and all(d is None or isinstance(d, int) for d in v)  # noqa: E731
    counter = iter(range(1 << 30))

    def placeholder(shape):
        return kgraph.Input(batch_shape=(None,) + tuple(shape[1:]), dtype=model.compute_dtype,
                            name=f"input_{next(counter)}" if not is_shape(shapes) else "input")
    inputs = placeholder(shapes) if is_shape(shapes) else _map_shapes(placeholder, shapes, is_shape)
    kwargs = {"training": False} if model._call_accepts_training else {}
    try:
        outputs = model.call(inputs, **kwargs)
        flat = kgraph.tree.flatten(outputs)
        if not flat or not all(isinstance(t, kgraph.KerasTensor) for t in flat):
            raise TypeError(f"`call` returned {outputs!r} for symbolic inputs; expected KerasTensors")
    except ExportError:
        raise
    except Exception as err:  # the user's code, traced: any failure becomes one clear export error
        raise ExportError(_trace_failure(model, err)) from err
    return kgraph.models.Functional(inputs, outputs, name=model.name)


def _map_shapes(fn, structure, is_shape):
    if is_shape(structure):
        return fn(structure)
    if isinstance(structure, dict):
        return {k: _map_shapes(fn, v, is_shape) for k, v in structure.items()}
    return type(structure)(_map_shapes(fn, v, is_shape) for v in structure)


class _Walk:
    """Converts the nodes of one model (and, inlined, of the models nested in it) into one builder."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self.layers = []
        self._seen = set()
        self.masks = MaskTracker()

    def model(self, functional: Functional, values: dict[int, Value], prefix: str) -> None:
        """Convert ``functional``'s nodes given ``values`` (id of KerasTensor -> Value) for its inputs."""
        for depth in sorted(functional.nodes_by_depth, reverse=True):
            for node in functional.nodes_by_depth[depth]:
                if not node.is_input:
                    _check_stateless(node)
                    if id(node) in functional._masked_nodes:
                        self._masked(node, values, prefix)
                    else:
                        self.node(node, values, prefix)

    def _masked(self, node, values, prefix):
        """A node that reads or makes a mask (see export.masks)."""
        ctx = ConversionContext(self.builder, node, values, prefix + node.outbound_layer.name)
        route = _route(node.outbound_layer, node)
        if self.masks.prepare(ctx, node, *route):
            values[id(node.output_tensors[0])] = Value(self.masks.masked_average(ctx, node), NATIVE)
        else:
            hints = {key: getattr(ctx, key) for key in ("sequence_lens", "sequence_mask")
                     if getattr(ctx, key, None) is not None}
            compacted = getattr(ctx, "compacted_input", None)
            key = id(node.input_tensors[0])
            original = values.get(key)
            if compacted is not None:
                values[key] = compacted  # the recurrent node reads the unmasked steps first (export.masks)
            try:
                self.node(node, values, prefix, hints, route)
            finally:
                if compacted is not None:
                    values[key] = original
            if compacted is not None:
                self.masks.uncompact(ctx, node, values, self.builder)
        pending = self.masks.record(ctx, node, values)
        if pending:
            self.masks.defer(pending, lambda: self._computed_masks(node, pending, values, prefix))

    def _computed_masks(self, node, tensors, values, prefix):
        """``{id(tensor): ONNX bool mask}`` for ``tensors`` (outputs of ``node``) from the layer's ``compute_mask``,
        traced into ops like a ``call`` (on the call's first argument and its masks, as when the model runs)."""
        layer = node.outbound_layer
        scope = f"{prefix}{layer.name}/compute_mask"
        first = node.call_args[0]
        previous = node.call_kwargs["mask"] if node.call_kwargs.get("mask") is not None else \
            kgraph.tree.map_structure(mask_propagation.keras_mask, first)
        with tracing.scratch(), tracing.dynamic_shapes():
            try:
                traced = _trace(layer.compute_mask, (first, previous), {})
            except Exception as err:  # the user's code, traced
                raise ExportError(f"tracing the `compute_mask` of layer '{layer.name}' ({type(layer).__name__}) "
                                  f"failed: {type(err).__name__}: {err}") from err
            masks = traced[1]
            flat = kgraph.tree.flatten(masks) if kgraph.tree.is_nested(masks) else [masks] * len(node.output_tensors)
            found = [(t, m) for t, m in zip(node.output_tensors, flat) if any(t is x for x in tensors)]
            if len(found) != len(tensors) or not all(isinstance(m, kgraph.KerasTensor) for _, m in found):
                raise ExportError(f"the `compute_mask` of layer '{layer.name}' ({type(layer).__name__}) gave "
                                  f"{masks!r} for symbolic inputs; expected a KerasTensor per masked output")
            inner = self._convert_trace(node, traced, [m for _, m in found], values, scope)
            ctx = ConversionContext(self.builder, node, values, scope)
            names = {}
            for tensor, mask in found:
                name = self.builder.convert(ctx, inner[id(mask)], len(mask.shape), NATIVE)
                names[id(tensor)] = name if mask.dtype == "bool" else ctx.op("Cast", [name], to=9, name="mask")
        return names

    def node(self, node: Node, values: dict[int, Value], prefix: str, hints: dict[str, str] | None = None,
             route: tuple[str, Operation] | None = None) -> None:
        """Convert one node: an op, a nested model, a layer with a converter, or a layer traced into ops."""
        layer = node.outbound_layer
        scope = prefix + layer.name
        kind, converted = route or _route(layer, node)
        if kind == "op":
            self._convert(layer, node, values, scope, lookup_op(layer, self.builder.opset))
        elif kind == "nested":
            self._nested(layer, node, values, scope)
        elif kind == "convert":
            self._convert(layer, node, values, scope, lookup(layer, self.builder.opset), hints=hints)
        elif kind == "fused":
            self._convert(layer, node, values, scope, lookup(converted, self.builder.opset), as_layer=converted,
                          hints=hints)
        elif kind == "scan":
            self._remember(layer)
            for tensor, value in zip(node.output_tensors, scan.convert_rnn(_Walk, self.builder, layer, node, values,
                                                                           scope)):
                values[id(tensor)] = value
        else:
            self._traced(layer, node, values, scope)

    def _remember(self, layer):
        if id(layer) not in self._seen:
            self._seen.add(id(layer))
            self.layers.append(layer)

    def _convert(self, layer, node, values, scope, entry, as_layer=None, hints=None):
        if id(layer) not in self._seen:
            self._seen.add(id(layer))
            self.layers.append(as_layer or layer)
        ctx = ConversionContext(self.builder, node, values, scope)
        if as_layer is not None:
            ctx.layer = as_layer
        for key, value in (hints or {}).items():  # mask facts a converter reads (export.masks)
            setattr(ctx, key, value)
        result = entry(ctx)
        results = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(results) != len(node.output_tensors):
            what = "operation" if isinstance(layer, OpOperation) else "layer"
            raise ExportError(f"The converter {entry.fn.__module__}.{entry.fn.__qualname__} of {what} "
                              f"'{layer.name}' returned {len(results)} outputs; expected {len(node.output_tensors)} "
                              "(one per output tensor of the call).")
        for tensor, out in zip(node.output_tensors, results):
            if isinstance(out, str):
                out = Value(out, NATIVE)
            if not isinstance(out, Value):
                raise ExportError(f"The converter of {type(layer).__name__} '{layer.name}' returned {out!r}; "
                                  "expected an ONNX tensor name (str) or an export.builder.Value.")
            values[id(tensor)] = out

    def _nested(self, model, node, values, scope):
        inner = functional_of(model)
        flat = inner._flatten_call_inputs(node.call_args[0])
        inner_values = {id(t): values[id(x)] for t, x in zip(inner.inputs, flat)}
        self.model(inner, inner_values, scope + "/")
        for outer, t in zip(node.output_tensors, inner.outputs):
            values[id(outer)] = inner_values[id(t)]

    def _traced(self, layer, node, values, scope):
        """A layer with no converter: its ``call`` traced on KerasTensors into op (and layer) nodes."""
        if id(layer) not in self._seen:
            self._seen.add(id(layer))
            self.layers.append(layer)
        kwargs = dict(node.call_kwargs)
        if layer._call_accepts_training:
            kwargs["training"] = False
        # The mask arguments the call gets filled in when the model runs (export.masks gives their ONNX names).
        kwargs.update(mask_propagation.mask_arguments(layer, node.call_args, node.call_kwargs,
                                                     mask_propagation.keras_mask)[1])
        with tracing.scratch(), tracing.dynamic_shapes():
            try:
                traced = _trace(layer.call, node.call_args, kwargs)
                flat = kgraph.tree.flatten(traced[1])
                if len(flat) != len(node.output_tensors) or not all(isinstance(t, kgraph.KerasTensor)
                                                                    for t in flat):
                    raise TypeError(f"`call` returned {traced[1]!r} for symbolic inputs; expected "
                                    f"{len(node.output_tensors)} KerasTensor(s) computed from the inputs")
            except ExportError:
                raise
            except Exception as err:  # the user's code, traced: any failure becomes one clear export error
                raise ExportError(_trace_failure(layer, err)) from err
            try:
                inner = self._convert_trace(node, traced, flat, values, scope)
            except ExportError as err:
                raise type(err)(f"Cannot export layer '{layer.name}' ({type(layer).__name__}) through its traced "
                                f"`call`: {err}") from err
            for outer, t in zip(node.output_tensors, flat):
                values[id(outer)] = inner[id(t)]
        for sub in layer._flatten_layers():
            sub._losses.clear()  # symbolic add_loss terms of the trace

    def _convert_trace(self, owner, traced, flat, values, scope):
        """Convert the nodes of a trace (``_trace``'s result) that compute ``flat``; returns the Values of the
        trace's tensors. A masked input's placeholder carries its mask (export.masks), so the layers called in
        the trace read it as they do when the model runs."""
        inputs, _, carried = traced
        inner = {id(inputs[key]): values[key] for key in inputs if key in values}
        order, _ = graph.topological_nodes({id(t) for t in inputs.values()}, flat)
        read = {id(t) for inner_node in order for t in inner_node.input_tensors} | {id(t) for t in flat}
        inner.update(self.masks.enter_trace(owner, inputs, carried, read))
        for inner_node in order:
            if inner_node.is_input or isinstance(inner_node.outbound_layer, tracing.Placeholder):
                continue
            if any(t._keras_mask is not None for t in inner_node.input_tensors + inner_node.output_tensors):
                self._masked(inner_node, inner, scope + "/")
            else:
                self.node(inner_node, inner, scope + "/")
        return inner


def _trace(fn, args, kwargs):
    """``(inputs, outputs, carried)``: ``fn`` traced as ``kgraph.graph.tracing.trace`` does, where the placeholder
    of each input that has a mask has the placeholder of that mask as its ``_keras_mask`` (``carried``: the
    (input, mask) pairs); call it inside ``tracing.scratch()``."""
    tensors = [t for t in kgraph.tree.flatten([list(args), kwargs]) if isinstance(t, kgraph.KerasTensor)]
    carried = list({id(t): (t, t._keras_mask) for t in tensors if t._keras_mask is not None}.values())

    def call(args, kwargs, pairs):
        for placeholder, mask in pairs:
            placeholder._keras_mask = mask
        return fn(*args, **kwargs)

    inputs, outputs = tracing.trace(call, (list(args), kwargs, [list(pair) for pair in carried]), {})
    return inputs, outputs, carried


def _route(layer, node):
    """How ``node`` is exported: ``(kind, layer whose converter runs)``, kind one of 'op', 'nested' (a model
    inlined), 'convert', 'fused' (an equivalent layer's converter), 'scan' (an RNN of a user's cell), 'trace'."""
    if isinstance(layer, OpOperation):
        return "op", layer
    if isinstance(layer, (kgraph.models.Functional, kgraph.Sequential)):
        return "nested", layer
    if has_converter(type(layer)) and _activation_emits(layer):
        return "convert", layer
    fused = _fused(layer)
    if fused is not None and len(node.call_args) == 1 and node.call_kwargs.get("initial_state") is None:
        return "fused", fused
    if scan.applies(layer, node):
        return "scan", layer
    return "trace", layer


def _activation_emits(layer):
    """False for a layer whose activation is a user's function with no emitter: its ``call`` is traced instead
    of converted, so the function's own ops are exported."""
    activation = getattr(layer, "activation", None)
    return activation is None or isinstance(activation, str) or has_emitter(activation) or \
        not callable(activation)


def _fused(layer):
    """A layer with a native converter that computes what ``layer`` does (an RNN of one LSTM cell...), or None."""
    equivalent = getattr(layer, "fused_equivalent", None)
    fused = equivalent() if callable(equivalent) else None
    return fused if fused is not None and has_converter(type(fused)) else None


def _check_stateless(node):
    """Refuse what an ONNX graph cannot carry: states kept between calls, or given initial states the layer's
    converter would ignore."""
    layer = node.outbound_layer
    if getattr(layer, "stateful", False):
        raise ExportError(f"Cannot export layer '{layer.name}' ({type(layer).__name__}): stateful=True carries "
                          "states from one call to the next, and an ONNX graph is stateless. Expected "
                          "stateful=False (rebuild the model with it and copy the weights for export).")
    if isinstance(layer, (kgraph.layers.SimpleRNN, kgraph.layers.Bidirectional)) and \
            (len(node.call_args) > 1 or node.call_kwargs.get("initial_state") is not None):
        raise ExportError(f"Cannot export layer '{layer.name}' ({type(layer).__name__}) called with "
                          "`initial_state`: its converter starts from zero states. Expected a call without "
                          "initial_state, an LSTM or GRU layer, or an RNN layer with a cell "
                          "(kgraph.layers.RNN(SimpleRNNCell(...))), which exports as a Scan.")


def _trace_failure(layer, err):
    """The message for a layer whose ``call`` cannot be traced: where in the user's code, and the remedies."""
    where = ""
    package = os.path.dirname(kgraph.__file__)
    frames = [f for f in traceback.extract_tb(err.__traceback__)
              if not f.filename.startswith(package) and os.sep + "numpy" + os.sep not in f.filename
              and f.filename != __file__]
    if frames:
        frame = frames[-1]
        where = f" at {frame.filename}:{frame.lineno} (`{(frame.line or '').strip()}`)"
    cls = type(layer).__name__
    return (f"Cannot export layer '{layer.name}' ({cls}): it has no ONNX converter, and tracing its `call` on "
            f"symbolic tensors failed{where}: {type(err).__name__}: {err}. Write `call` with `kgraph.ops` "
            "functions and tensor operators only (no NumPy functions that are not ops, no Python `if` on "
            f"tensor values), or register a converter with `@export.converter({cls}, opset=13)`.")


def build(model: Model, opset: int | None = None,
          source: os.PathLike[str] | str | None = None) -> tuple[onnx.ModelProto, list[Operation]]:
    """The ONNX ModelProto of ``model`` and the list of layers converted (not written, not checked)."""
    opset = resolve_opset(opset)
    ir_version = ir_version_for(opset)
    if ir_version > max_ir_version():
        raise ExportError(f"Opset {opset} needs IR version {ir_version}; the installed onnxruntime reads up "
                          f"to IR version {max_ir_version()}. Expected a lower opset.")
    functional = functional_of(model)
    builder = GraphBuilder(opset)
    values = {}
    for tensor, name in zip(functional.inputs, functional.input_names):
        builder.add_input(name, tensor.shape, tensor.dtype, {0: BATCH})
        values[id(tensor)] = Value(name, NATIVE)
    walk = _Walk(builder)
    walk.model(functional, values, "")
    for tensor, name in zip(functional.outputs, functional.output_names):
        ctx = ConversionContext(builder, None, values, name)
        source_name = builder.convert(ctx, values[id(tensor)], len(tensor.shape), NATIVE)
        builder.add_output(name, source_name, tensor.shape, tensor.dtype, {0: BATCH})
    proto = helper.make_model(builder.make_graph(model.name), producer_name="kgraph",
                              producer_version=kgraph.__version__,
                              opset_imports=[helper.make_opsetid("", opset)])
    proto.ir_version = ir_version
    share_input_symbols(proto)
    props = {"kgraph_version": kgraph.__version__, "layer_count": str(len(walk.layers)),
             "model_name": model.name}
    if source is not None:
        props["source_file"] = os.path.basename(os.fspath(source))
    helper.set_model_props(proto, props)
    return proto, walk.layers


def check(model_or_path: onnx.ModelProto | os.PathLike[str] | str) -> None:
    """Run the full ONNX checker and strict, type-checked shape inference (on a proto or a file)."""
    onnx.checker.check_model(model_or_path, full_check=True)
    if isinstance(model_or_path, onnx.ModelProto):
        onnx.shape_inference.infer_shapes(model_or_path, check_type=True, strict_mode=True)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            onnx.shape_inference.infer_shapes_path(os.fspath(model_or_path), os.path.join(tmp, "inferred.onnx"),
                                                   check_type=True, strict_mode=True)


def to_onnx(model: Model, path: os.PathLike[str] | str | None = None, opset: int | None = None, *,
            source: os.PathLike[str] | str | None = None) -> onnx.ModelProto:
    """Export a Functional or Sequential ``model`` to an ONNX ModelProto, written atomically to ``path`` if given."""
    # Checked (full checker, strict shape inference) before anything is written. `source`: the model file it
    # came from, recorded without directories in the metadata.
    proto, _ = build(model, opset=opset, source=source)
    if writer.needs_external_data(proto):
        if path is None:
            raise ExportError(f"Model '{model.name}' has over 2 GB of weights: it can only be exported to a "
                              "file (weights go to external data). Expected a `path`.")
        writer.save(proto, path, check=check)
    else:
        check(proto)
        if path is not None:
            writer.save(proto, path)
    return proto
