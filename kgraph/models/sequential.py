"""Sequential: a linear stack of layers, built incrementally (one node per layer)."""
from kgraph import tree
from kgraph.backend.name_scope import layer_scope
from kgraph.graph.keras_tensor import KerasTensor, shape_of
from kgraph.graph.shape_inference import on_placeholders
from kgraph.layers.core.input_layer import Input, InputLayer
from kgraph.layers.layer import Layer
from kgraph.layers.structure import structure_changed
from kgraph.models.model import Model


class Sequential(Model):
    """A stack of layers, each taking the previous one's output.

    Each ``add()`` calls only the new layer on the current output (once the input
    shape is known), so building N layers is linear and every layer ends with
    exactly one inbound node. The graph map is made lazily when first needed.
    """

    _scan_containers = False

    def __init__(self, layers=None, trainable=True, name=None):
        Model.__init__(self, trainable=trainable, name=name)
        self._stack = []
        self._names = set()
        self._input_tensor = None
        self._last_output = None
        self._functional = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Append a layer (or an ``Input()`` tensor) to the stack."""
        if isinstance(layer, KerasTensor) and isinstance(layer._keras_history.layer, InputLayer):
            layer = layer._keras_history.layer
        if not isinstance(layer, Layer):
            raise TypeError(f"Only instances of `kgraph.Layer` can be added to a Sequential model. "
                            f"Received: {layer!r} (of type {type(layer).__name__})")
        if isinstance(layer, InputLayer):
            if self._stack:
                raise ValueError(f"Sequential model '{self.name}' already has layers: an InputLayer can only "
                                 f"be its first layer. Received: {layer.name}")
            self._input_tensor = self._last_output = layer.output_tensor
        if layer.name in self._names:
            raise ValueError(f"All layers added to a Sequential model should have unique names. Name "
                             f"'{layer.name}' is already the name of a layer in model '{self.name}'.")
        self._names.add(layer.name)
        self._stack.append(layer)
        object.__setattr__(self, "_layers", [l for l in self._stack if not isinstance(l, InputLayer)])
        structure_changed()
        self._functional = None
        if isinstance(layer, InputLayer):
            return
        if self._last_output is None and len(self._layers) == 1 and layer._batch_input_shape is not None:
            self._input_tensor = self._last_output = Input(batch_shape=layer._batch_input_shape,
                                                           dtype=layer.dtype)
            self._stack.insert(0, self._input_tensor._keras_history.layer)
        if self._last_output is not None:
            self._last_output = self._call_layer(layer, self._last_output)
            self.built = True  # as Keras: a stack with a known input shape is built as it grows

    def _call_layer(self, layer, tensor):
        with layer_scope(self):  # as Keras: the stack's name leads its layers' weight paths
            out = layer(tensor)
        if not isinstance(out, KerasTensor):
            raise ValueError(f"All layers in a Sequential model should have a single output tensor. "
                             f"Layer '{layer.name}' returned {len(tree.flatten(out))} tensors. "
                             "For multi-output layers, use the functional API.")
        return out

    def pop(self):
        """Remove the last layer (the graph is remade from the remaining layers)."""
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        removed = self._stack.pop()
        self._names.discard(removed.name)
        object.__setattr__(self, "_layers", [l for l in self._stack if not isinstance(l, InputLayer)])
        structure_changed()
        self._functional = None
        if self._input_tensor is not None:
            self._last_output = self._input_tensor
            for layer in self._layers:
                self._last_output = self._call_layer(layer, self._last_output)
        return removed

    @property
    def layers(self):
        return list(self._layers)

    def build(self, input_shape=None):
        if self._last_output is not None:
            self.built = True
            return
        if input_shape is None:
            raise ValueError(f"Sequential model '{self.name}' cannot be built: no input shape is known. "
                             "Start it with `kgraph.Input(shape=...)` or call it on data first.")
        input_shape = tuple(input_shape)
        size = on_placeholders()
        if size is not None:  # built by a call on placeholder arrays: their placeholder-sized dims are unknown
            input_shape = tuple(None if d == size else d for d in input_shape)
        self._input_tensor = self._last_output = Input(batch_shape=(None,) + input_shape[1:])
        self._stack.insert(0, self._input_tensor._keras_history.layer)
        for layer in self._layers:
            self._last_output = self._call_layer(layer, self._last_output)
        self.built = True

    def _maybe_build(self, args):
        if self._last_output is None:
            self.build(shape_of(tree.flatten(args[0])[0]))
        self.built = True

    @property
    def functional(self):
        """The Functional model of the stack (made on first use after a change)."""
        if self._functional is None:
            if self._last_output is None:
                raise ValueError(f"Sequential model '{self.name}' has not been built yet: it has no known "
                                 "input shape. Call it on data, call `build(input_shape)`, or start it with "
                                 "`kgraph.Input(shape=...)`.")
            from kgraph.models.functional import Functional
            self._functional = Functional(self._input_tensor, self._last_output, name=self.name)
        return self._functional

    def call(self, inputs, training=None, mask=None):
        return self.functional.call(inputs, training=training)

    def compute_output_spec(self, inputs, training=None, mask=None):
        return self.functional.compute_output_spec(inputs)

    def compute_output_shape(self, input_shape):
        return self.functional.compute_output_shape(input_shape)

    inputs = property(lambda self: self.functional.inputs)
    outputs = property(lambda self: self.functional.outputs)
    input_layers = property(lambda self: self.functional.input_layers)
    output_layers = property(lambda self: self.functional.output_layers)

    @property
    def input_names(self):
        """The input's name ([] until the model is built: the first data it sees builds it)."""
        return [] if self._last_output is None else self.functional.input_names

    @property
    def output_names(self):
        """The one output's name: the last layer's (known before the model is built, so it can compile)."""
        if self._last_output is None and self._layers:
            return [self._layers[-1].name]
        return self.functional.output_names
    nodes_by_depth = property(lambda self: self.functional.nodes_by_depth)
    layers_by_depth = property(lambda self: self.functional.layers_by_depth)
    # Called as a layer, a Sequential's input and output are those of its first call (Keras 3's Operation);
    # otherwise those of its own graph.
    input = property(lambda self: Layer.input.fget(self) if self._inbound_nodes else self.functional.input)
    output = property(lambda self: Layer.output.fget(self) if self._inbound_nodes else self.functional.output)
    input_shape = property(lambda self: self.functional.input_shape)
    output_shape = property(lambda self: self.functional.output_shape)

    def get_config(self):
        from kgraph.saving.serialization import serialize_layer
        return {"name": self.name, "trainable": self.trainable,
                "layers": [serialize_layer(layer) for layer in self._stack]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kgraph.saving.serialization import deserialize_layer
        layers = [deserialize_layer(c, custom_objects) for c in config["layers"]]
        return cls(layers, trainable=config.get("trainable", True), name=config.get("name"))
