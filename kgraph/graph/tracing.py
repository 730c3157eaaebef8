"""Tracing a layer's ``call`` on KerasTensors into a scratch graph of operations.

A layer without ``compute_output_shape`` gets its output spec this way, and
the exporter converts the traced ops of a layer that has no converter. The
trace lives in a ``scratch()`` block: the nodes it records (on the layer's
sub-layers too) are unlinked when the block ends, and auto-names handed out
inside it are given back, so tracing leaves the user's graph as it was.
"""
import contextlib

from kgraph import tree
from kgraph.graph import node
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.graph.operation import Operation
from kgraph.utils import naming


class Placeholder(Operation):
    """The source of one scratch KerasTensor (an input of a traced call)."""

    def __init__(self, tensor):
        super().__init__(name="placeholder")
        self.tensor = KerasTensor(tensor.shape, dtype=tensor.dtype, name=tensor.name)
        node.Node(self, (), {}, outputs=self.tensor)


@contextlib.contextmanager
def scratch():
    """Run a trace whose nodes and auto-names are undone at the end; yields the list of nodes made."""
    saved_names = dict(naming._counts)
    created = []
    node._scratch.append(created)
    try:
        yield created
    finally:
        node._scratch.pop()
        for made in reversed(created):
            made.unlink()
        naming._counts.clear()
        naming._counts.update(saved_names)


_DYNAMIC_SHAPES = [0]


@contextlib.contextmanager
def dynamic_shapes():
    """Within it, ``ops.shape`` of a KerasTensor gives each unknown size as a symbolic int64 scalar (read when the
    graph runs) instead of None, so that a traced call can compute with it (``ops.reshape(x, (batch, n, d))``
    where ``batch = ops.shape(x)[0]``). The exporter and a layer call's symbolic trace use it; ``ops.shape`` of a
    KerasTensor elsewhere (a functional model's own code) keeps Keras's None."""
    _DYNAMIC_SHAPES[0] += 1
    try:
        yield
    finally:
        _DYNAMIC_SHAPES[0] -= 1


def dynamic_shapes_active():
    return _DYNAMIC_SHAPES[0] > 0


def trace(fn, args, kwargs):
    """Call ``fn`` with a fresh scratch KerasTensor for each KerasTensor in ``args``/``kwargs``.

    Returns ``(inputs, outputs)``: ``{id(original KerasTensor): scratch KerasTensor}`` and what
    ``fn`` returned. Call it inside ``scratch()``.
    """
    inputs = {}

    def swap(v):
        if isinstance(v, KerasTensor):
            if id(v) not in inputs:
                inputs[id(v)] = Placeholder(v).tensor
            return inputs[id(v)]
        return v

    outputs = fn(*tree.map_structure(swap, list(args)), **tree.map_structure(swap, kwargs))
    return inputs, outputs


def layer_output_spec(layer, args, kwargs):
    """Output KerasTensors of ``layer`` called on ``args``: traced through its ``call``.

    Where ``call`` runs Python code that needs values (a NumPy function that is
    not an op, ``if`` on a tensor), the spec is found by running ``call`` on
    placeholder arrays instead (``kgraph.graph.shape_inference``), as Keras's NumPy
    backend does. The trace reads unknown sizes as symbolic scalars (``dynamic_shapes``).
    """
    try:
        # Unknown sizes read with ops.shape are symbolic scalars here (not None), so that a call computing with
        # them (``ops.arange(ops.shape(x)[1])``) traces; a call that needs their values falls back below.
        with scratch(), dynamic_shapes():
            _, outputs = trace(layer.call, args, kwargs)
            leaves = tree.flatten(outputs)
            if not leaves or not all(isinstance(t, KerasTensor) for t in leaves):
                raise TypeError(f"`call` of layer '{layer.name}' returned values that are not KerasTensors")
            fresh = [KerasTensor(t.shape, dtype=t.dtype, name=layer.name if len(leaves) == 1 else
                                 f"{layer.name}_{i}") for i, t in enumerate(leaves)]
            spec = tree.pack_sequence_as(outputs, fresh)
    except Exception:  # the user's Python code: tracing it may fail in any way; running it is the fallback
        from kgraph.graph import shape_inference
        spec = shape_inference.output_spec(layer.call, args, kwargs, layer.name)
    finally:
        for sub in layer._flatten_layers():
            sub._losses.clear()
    return spec
