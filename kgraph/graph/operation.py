"""Operation: a node-producing callable. Layers are Operations; so is every ``kgraph.ops`` function."""
from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.utils import naming


def any_symbolic(args, kwargs=None):
    """Whether a KerasTensor appears anywhere in ``args`` (and ``kwargs``)."""
    for a in args:
        if type(a) is KerasTensor:
            return True
        if isinstance(a, (list, tuple, dict)) and any(isinstance(t, KerasTensor) for t in tree.flatten(a)):
            return True
    if kwargs:
        return any(isinstance(t, KerasTensor) for t in tree.flatten(kwargs))
    return False


class Operation:
    """Something called on tensors: eagerly on arrays, symbolically on KerasTensors.

    A symbolic call records a ``kgraph.graph.node.Node`` (the call's arguments, inputs and
    outputs) in ``inbound_nodes`` and returns KerasTensors whose
    ``_keras_history`` points back at that node. ``Layer`` subclasses it; the
    ``kgraph.ops`` functions create one Operation per symbolic call.
    """

    _call_accepts_training = False
    _call_accepts_mask = False
    # ``_direct_call(x)``: a layer's own shortcut when a Functional model's step runs it (see Dense), or None.
    _direct_call = None
    _call_mask_arguments = ()
    supports_masking = False

    def __init__(self, name=None):
        if name is not None and (not isinstance(name, str) or "/" in name or not name):
            raise ValueError(f"Argument `name` must be a non-empty string without '/'. Received: name={name!r}")
        self.name = name or naming.uniquify(naming.to_snake_case(type(self).__name__))
        self._inbound_nodes = []
        self._outbound_nodes = []

    @property
    def inbound_nodes(self):
        return self._inbound_nodes

    @property
    def outbound_nodes(self):
        return self._outbound_nodes

    def __call__(self, *args, **kwargs):
        if any_symbolic(args, kwargs):
            return self.symbolic_call(*args, **kwargs)
        return self.call(*args, **kwargs)

    def symbolic_call(self, *args, **kwargs):
        """Record a Node for this call on KerasTensors and return its output KerasTensors."""
        from kgraph.graph.node import Node
        outputs = self.compute_output_spec(*args, **kwargs)
        Node(self, args, kwargs, outputs)
        return outputs

    def call(self, *args, **kwargs):
        raise NotImplementedError(f"Operation '{self.name}' of class {type(self).__name__} must define `call`.")

    def compute_output_spec(self, *args, **kwargs):
        """KerasTensors for the outputs, inferred by running ``call`` on placeholder arrays."""
        from kgraph.graph import shape_inference
        return shape_inference.output_spec(self.call, args, kwargs, self.name)

    def get_config(self):
        return {"name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"
