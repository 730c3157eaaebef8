"""Node: the record of one call of a layer on symbolic tensors."""
from kgraph import tree
from kgraph.graph.keras_tensor import KerasHistory, KerasTensor

# While a scratch trace runs (kgraph.graph.tracing.scratch), the nodes it creates, to unlink afterwards.
_scratch = []


class Node:
    """One call of ``outbound_layer`` on KerasTensors.

    Holds the call's arguments (``call_args``/``call_kwargs`` with the
    KerasTensors in place), the flat ``input_tensors`` and ``output_tensors``,
    and for each input the producing layer, its node index and tensor index,
    so that ``inbound_layers[i].inbound_nodes[node_indices[i]]
    .output_tensors[tensor_indices[i]] is input_tensors[i]``.
    Creating a node links it into the graph: it is appended to the layer's
    ``inbound_nodes`` and to each inbound layer's ``outbound_nodes``, and the
    outputs get their ``_keras_history``.
    """

    def __init__(self, layer, call_args=(), call_kwargs=None, outputs=None):
        self.outbound_layer = layer
        self.call_args = tuple(call_args)
        self.call_kwargs = dict(call_kwargs or {})
        if len(self.call_args) == 1 and not self.call_kwargs and isinstance(self.call_args[0], KerasTensor):
            self.input_tensors = [self.call_args[0]]
        else:
            flat = tree.flatten([list(self.call_args), self.call_kwargs])
            self.input_tensors = [t for t in flat if isinstance(t, KerasTensor)]
        self.arguments = {k: v for k, v in self.call_kwargs.items()
                          if not any(isinstance(t, KerasTensor) for t in tree.flatten(v))}
        self.outputs = outputs
        if isinstance(outputs, KerasTensor):
            self.output_tensors = [outputs]
        else:
            self.output_tensors = [t for t in tree.flatten(outputs) if isinstance(t, KerasTensor)] \
                if outputs is not None else []
        for t in self.input_tensors:
            if t._keras_history is None:
                raise ValueError(
                    f"Layer '{layer.name}' was called on a KerasTensor that no layer produced: {t!r}. "
                    "Symbolic inputs must come from `kgraph.Input()` or from another layer's output."
                )
        self.inbound_layers = [t._keras_history.layer for t in self.input_tensors]
        self.node_indices = [t._keras_history.node_index for t in self.input_tensors]
        self.tensor_indices = [t._keras_history.tensor_index for t in self.input_tensors]

        node_index = len(layer._inbound_nodes)
        layer._inbound_nodes.append(self)
        for inbound in _unique(self.inbound_layers):
            inbound._outbound_nodes.append(self)
        for i, t in enumerate(self.output_tensors):
            t._keras_history = KerasHistory(layer, node_index, i)
        if _scratch:
            _scratch[-1].append(self)

    def unlink(self):
        """Remove this node from its operation's and its inbound operations' node lists."""
        _remove(self.outbound_layer._inbound_nodes, self)
        for inbound in _unique(self.inbound_layers):
            _remove(inbound._outbound_nodes, self)

    @property
    def layer(self):
        return self.outbound_layer

    @property
    def operation(self):
        return self.outbound_layer

    @property
    def is_input(self):
        return not self.input_tensors

    @property
    def parent_nodes(self):
        """The nodes that produced this node's inputs, in input order without repeats."""
        return _unique(layer._inbound_nodes[i] for layer, i in zip(self.inbound_layers, self.node_indices))

    @property
    def input_shapes(self):
        return [t.shape for t in self.input_tensors]

    @property
    def output_shapes(self):
        return [t.shape for t in self.output_tensors]

    def get_config(self):
        """The node as Keras serializes it: ``[[layer_name, node_index, tensor_index, kwargs], ...]``."""
        return [[layer.name, n, t, self.arguments]
                for layer, n, t in zip(self.inbound_layers, self.node_indices, self.tensor_indices)]

    def __repr__(self):
        return (f"<Node layer={self.outbound_layer.name} inbound="
                f"{[layer.name for layer in self.inbound_layers]}>")


def _unique(items):
    seen = set()
    out = []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            out.append(item)
    return out


def _remove(nodes, node):
    for i in range(len(nodes) - 1, -1, -1):
        if nodes[i] is node:
            del nodes[i]
            return
