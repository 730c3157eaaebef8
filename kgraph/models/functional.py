"""Functional: a Model defined by a graph of layer calls from its inputs to its outputs."""
import collections
import gc

import numpy as np

from kgraph import tree
from kgraph.backend.autodiff import primitive
from kgraph.graph import topology as graph
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.graph.node import Node
from kgraph.layers import mask_propagation as masking
from kgraph.layers.core.input_layer import Input, InputLayer
from kgraph.layers.layer import Layer
from kgraph.layers.structure import structure_changed
from kgraph.models import planning
from kgraph.models.model import Model


def _adjust_rank(x, shape):
    """Keras's rank rule for model inputs: an array one rank short of an Input whose last dimension is 1 gains
    that axis (``(batch,)`` for ``Input(shape=(1,))``); one rank over with a last dimension of 1 loses it."""
    if x.ndim == len(shape) - 1 and shape and shape[-1] == 1:
        return x[..., None]
    if x.ndim == len(shape) + 1 and x.shape and x.shape[-1] == 1:
        return x[..., 0]
    return x


@primitive(num_inputs=1)
def _input_as(x, dtype, name, model_name):
    """Input ``x`` as the model's input ``name`` of ``dtype`` (a float for an integer input must be integral).

    One op, recorded as a cast (gradients reach a nested model's float inputs), so that a replayed step
    (``kgraph.trainers.replay``) casts and checks every batch as the step as written does."""
    wanted = np.dtype(dtype)
    if np.issubdtype(wanted, np.integer) and np.issubdtype(x.dtype, np.floating) and not np.all(np.mod(x, 1) == 0):
        raise ValueError(f"Input '{name}' of model '{model_name}' expects integer values (dtype={dtype}); "
                         "received non-integer floats.")
    return x.astype(wanted), _same_cotangent


def _same_cotangent(g):
    return g


class Functional(Model):
    """A graph of layers mapped back from ``outputs`` to ``inputs``.

    Exposes ``nodes_by_depth`` / ``layers_by_depth`` (depth 0 = outputs) and runs
    the graph depth by depth, deepest first, freeing each intermediate array once
    its last consumer has run.
    """

    _scan_containers = False

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        Model.__init__(self, name=name, trainable=trainable, **kwargs)
        _check_keras_tensors("inputs", inputs)
        _check_keras_tensors("outputs", outputs)
        inputs, outputs = _detach_intermediate_inputs(inputs, outputs)
        self._inputs_struct = inputs
        self._outputs_struct = outputs
        self.inputs = tree.flatten(inputs)
        self.outputs = tree.flatten(outputs)
        if len({id(t) for t in self.inputs}) != len(self.inputs):
            raise ValueError(f"The list of inputs passed to the model '{self.name}' contains the same input "
                             f"tensor more than once. Received: inputs={self.inputs}")
        self.input_layers = [t._keras_history.layer for t in self.inputs]
        self.output_layers = [t._keras_history.layer for t in self.outputs]
        # The map allocates only acyclic bookkeeping; pausing the cycle collector keeps
        # it from rescanning a large heap many times while the map is made.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._map_graph()
        finally:
            if gc_was_enabled:
                gc.enable()
        self.built = True

    def _map_graph(self):
        input_ids = {id(t) for t in self.inputs}
        nodes, layer_indices = graph.topological_nodes(input_ids, self.outputs)
        for t in self.inputs:
            node = graph.producer(t)
            if not any(node is n for n in nodes):
                nodes.insert(0, node)
                layer_indices.setdefault(id(node.outbound_layer), len(layer_indices))
        node_depths, layer_depths = graph.depths(nodes, input_ids)
        self.nodes_by_depth, self.layers_by_depth = graph.group_by_depth(
            nodes, node_depths, layer_depths, layer_indices)
        computable = graph.check_connected(self.nodes_by_depth, self.inputs)
        for t in self.outputs:
            if id(t) not in computable:
                raise ValueError(f"Graph disconnected: output tensor {t!r} of model '{self.name}' cannot be "
                                 f"computed from the model's inputs {self.inputs}.")
        ordered = [layer for depth in sorted(self.layers_by_depth, reverse=True)
                   for layer in self.layers_by_depth[depth]]
        input_layer_ids = {id(layer) for layer in self.input_layers}
        operations = list(self.input_layers) + [op for op in ordered if id(op) not in input_layer_ids]
        counts = collections.Counter(op.name for op in operations)
        duplicated = [name for name, n in counts.items() if n > 1]
        if duplicated:
            raise ValueError(f'The name "{duplicated[0]}" is used {counts[duplicated[0]]} times in the model '
                             f"'{self.name}'. All operation names should be unique.")
        self._operations = operations
        object.__setattr__(self, "_layers", [op for op in operations if isinstance(op, Layer)])
        structure_changed()
        nodes = [node for depth in sorted(self.nodes_by_depth, reverse=True)
                 for node in self.nodes_by_depth[depth] if not node.is_input]
        uses = collections.Counter(id(t) for node in nodes for t in node.input_tensors)
        for t in self.outputs:
            uses[id(t)] += 1
        self._uses = dict(uses)
        self._plan, self._fusions = planning.plan(nodes, self._uses)
        # Nodes that read or make a mask run with mask bookkeeping (kgraph.layers.mask_propagation); most graphs have none.
        self._masked_nodes = {id(node) for node in nodes
                              if any(t._keras_mask is not None for t in node.input_tensors + node.output_tensors)}

    # ----- graph views ------------------------------------------------------
    @property
    def layers(self):
        """The Layers of the graph (inputs first, then deepest first); ``operations`` adds the op nodes."""
        return list(self._layers)

    @property
    def operations(self):
        """Every Operation of the graph, Layers and ``kgraph.ops`` calls, in ``layers`` order."""
        return list(self._operations)

    @property
    def input_names(self):
        return [layer.name for layer in self.input_layers]

    @property
    def output_names(self):
        if isinstance(self._outputs_struct, dict):
            return sorted(self._outputs_struct)
        names, taken = [], set()
        for t in self.outputs:
            base = name = t._keras_history.layer.name
            suffix = 0
            while name in taken:  # a layer with several outputs: name_1, name_2... never repeating a name
                suffix += 1
                name = f"{base}_{suffix}"
            taken.add(name)
            names.append(name)
        return names

    @property
    def input(self):
        return self._inputs_struct

    @property
    def output(self):
        return self._outputs_struct

    @property
    def input_shape(self):
        return tree.map_structure(lambda t: t.shape, self._inputs_struct)

    @property
    def output_shape(self):
        return tree.map_structure(lambda t: t.shape, self._outputs_struct)

    # ----- execution ----------------------------------------------------------
    def _flatten_call_inputs(self, inputs):
        """Match user inputs (array, list or dict by input name) to ``self.inputs``."""
        n = len(self.inputs)
        if isinstance(inputs, dict):
            if isinstance(self._inputs_struct, dict):
                expected = {k: t for k, t in self._inputs_struct.items()}
            else:
                expected = dict(zip(self.input_names, self.inputs))
            unknown = [k for k in inputs if k not in expected]
            missing = [k for k in expected if k not in inputs]
            if unknown or missing:
                raise ValueError(f"Model '{self.name}' expects inputs named {list(expected)}. "
                                 f"Received keys: {list(inputs)} (unknown: {unknown}, missing: {missing})")
            by_id = {id(t): inputs[k] for k, t in expected.items()}
            return [by_id[id(t)] for t in self.inputs]
        if n > 1:
            flat = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        elif isinstance(inputs, (list, tuple)) and len(inputs) == 1 and \
                isinstance(inputs[0], (np.ndarray, KerasTensor)):
            flat = [inputs[0]]
        else:
            flat = [inputs]
        if len(flat) != n:
            raise ValueError(f"Model '{self.name}' expects {n} input(s), but it received {len(flat)} input "
                             f"arrays. Expected inputs: {self.input_names}")
        return flat

    def _check_arrays(self, arrays):
        out = []
        for t, x, name in zip(self.inputs, arrays, self.input_names):
            if isinstance(x, KerasTensor):
                out.append(x)
                continue
            x = np.asarray(x) if not isinstance(x, np.ndarray) else x
            if t.dtype == "str" and x.dtype.kind in "OUS":  # strings go to the string layers as they are
                out.append(x)
                continue
            if x.dtype == object:
                raise TypeError(f"Input '{name}' of model '{self.name}' must be a numeric array. "
                                f"Received an array of dtype object.")
            x = _adjust_rank(x, t.shape)
            shape = x.shape
            if len(shape) != len(t.shape) or any(e is not None and e != a for e, a in zip(t.shape, shape)):
                raise ValueError(f"Input '{name}' of model '{self.name}' is incompatible with the model: "
                                 f"expected shape={t.shape}, found shape={shape}")
            if x.dtype != t.dtype and x.dtype.name != t.dtype:  # equal dtypes first: `.name` costs 2 µs
                x = _input_as(x, t.dtype, name, self.name)
            out.append(x)
        return out

    def call(self, inputs, training=None, mask=None):
        arrays = self._check_arrays(self._flatten_call_inputs(inputs))
        return self.run_internal_graph(arrays, training=training)

    def run_internal_graph(self, arrays, training=None):
        """Run the plan (deepest depth first) on a flat list of input arrays."""
        values = {id(t): x for t, x in zip(self.inputs, arrays)}
        remaining = dict(self._uses)
        masks = {} if self._masked_nodes else None
        masks_of = (lambda t: masks.get(id(t))) if masks is not None else None  # noqa: E731
        for node in self._plan:
            if type(node) is not Node:  # a fused step (kgraph.models.planning)
                node.run(values, remaining)
                continue
            layer = node.outbound_layer
            if len(node.call_args) == 1 and not node.call_kwargs and isinstance(node.call_args[0], KerasTensor):
                args, kwargs = (values[id(node.call_args[0])],), {}
            else:
                fill = lambda v: values[id(v)] if isinstance(v, KerasTensor) else v  # noqa: E731
                args = tree.map_structure(fill, node.call_args)
                kwargs = tree.map_structure(fill, node.call_kwargs)
            if training is not None and layer._call_accepts_training and "training" not in kwargs:
                kwargs["training"] = training
            if masks is not None and id(node) in self._masked_nodes:
                previous, extra = masking.mask_arguments(layer, node.call_args, node.call_kwargs, masks_of)
                for key, mask in extra.items():
                    kwargs.setdefault(key, mask)
                result = layer(*args, **kwargs)
                made = masking.output_masks(layer, args[0], kwargs.get("mask", previous), len(node.output_tensors))
                for t, mask in zip(node.output_tensors, made):
                    if mask is not None:
                        masks[id(t)] = mask
            else:
                direct = layer._direct_call  # a layer's shortcut past the generic call, where it has one
                result = direct(args[0]) if direct is not None and len(args) == 1 and not kwargs else None
                if result is None:
                    result = layer(*args, **kwargs)
            if len(node.output_tensors) == 1 and not tree.is_nested(node.outputs):
                values[id(node.output_tensors[0])] = result
            else:
                for t, v in zip(node.output_tensors, tree.flatten(result)):
                    values[id(t)] = v
            for t in node.input_tensors:
                key = id(t)
                remaining[key] -= 1
                if remaining[key] == 0:
                    del values[key]
                    if masks:
                        masks.pop(key, None)
        return tree.pack_sequence_as(self._outputs_struct, [values[id(t)] for t in self.outputs])

    def compute_output_spec(self, inputs, training=None, mask=None):
        flat = self._flatten_call_inputs(inputs)
        for t, x, name in zip(self.inputs, flat, self.input_names):
            shape = x.shape
            if len(shape) != len(t.shape) or any(e is not None and a is not None and e != a
                                                 for e, a in zip(t.shape, shape)):
                raise ValueError(f"Input '{name}' of model '{self.name}' is incompatible with the model: "
                                 f"expected shape={t.shape}, found shape={shape}")
        new = [KerasTensor(t.shape, dtype=t.dtype, name=f"{self.name}_{i}") for i, t in enumerate(self.outputs)]
        return tree.pack_sequence_as(self._outputs_struct, new)

    def compute_output_shape(self, input_shape):
        return tree.map_structure(lambda t: t.shape, self._outputs_struct)

    def build(self, input_shape):
        self.built = True

    # ----- serialization --------------------------------------------------------
    def get_config(self):
        from kgraph.saving.serialization import functional_config
        return functional_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kgraph.saving.serialization import functional_from_config
        return functional_from_config(cls, config, custom_objects)


def _check_keras_tensors(what, structure):
    for t in tree.flatten(structure):
        if not isinstance(t, KerasTensor):
            raise TypeError(f"All `{what}` values must be KerasTensors (the outputs of `kgraph.Input()` or "
                            f"of layers called on them). Received: {what}={structure!r} including invalid "
                            f"value {t!r} of type {type(t).__name__}")
        if t._keras_history is None:
            raise ValueError(f"`{what}` contains a KerasTensor that no layer produced: {t!r}")


def _detach_intermediate_inputs(inputs, outputs):
    """Give inputs that are not ``Input()`` tensors their own InputLayer (sub-model slicing).

    The layers between the new inputs and the outputs are called again on the
    new tensors, so they are shared (same weights) with the original model.
    """
    flat = tree.flatten(inputs)
    if all(isinstance(t._keras_history.layer, InputLayer) for t in flat):
        return inputs, outputs
    mapping = {}
    for t in flat:
        if isinstance(t._keras_history.layer, InputLayer):
            mapping[id(t)] = t
        else:
            mapping[id(t)] = Input(batch_shape=t.shape, dtype=t.dtype,
                                   name=f"{t._keras_history.layer.name}_input")
    nodes, _ = graph.topological_nodes(set(mapping), tree.flatten(outputs))
    for node in nodes:
        if node.is_input or all(id(t) in mapping for t in node.output_tensors):
            continue
        swap = lambda v: mapping.get(id(v), v) if isinstance(v, KerasTensor) else v  # noqa: E731
        result = node.outbound_layer(*tree.map_structure(swap, node.call_args),
                                     **tree.map_structure(swap, node.call_kwargs))
        for old, new in zip(node.output_tensors, tree.flatten(result)):
            mapping[id(old)] = new
    swap_all = lambda v: mapping.get(id(v), v)  # noqa: E731
    return tree.map_structure(swap_all, inputs), tree.map_structure(swap_all, outputs)
