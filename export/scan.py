"""An RNN of a cell with no native ONNX form, as one ONNX ``Scan`` whose body is the cell's traced ``call``.

The cell is traced once on a step input and its states; the body graph maps
``(states..., x_t)`` to ``(new states..., output_t)``, and Scan runs it over
the time-major sequence (reversed with ``go_backwards``), so any number of
timesteps runs. Outputs come in processing order, as Keras returns them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from onnx import helper

import kgraph
from export.builder import NATIVE, GraphBuilder, Value, onnx_dtype
from export.context import ConversionContext
from kgraph.graph import topology as graph
from kgraph.graph import tracing
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.rnn.rnn import _flatten, _pack_states

if TYPE_CHECKING:
    from export.exporter import _Walk
    from kgraph.graph.node import Node
    from kgraph.layers.layer import Layer
    from kgraph.layers.rnn.rnn import RNN


def _int64(values):
    return np.array(values, dtype=np.int64)


def _zeros(ctx, x, shape, dtype):
    """(batch, *shape) zeros, the batch read from ``x`` (batch first)."""
    batch = ctx.op("Slice", [ctx.op("Shape", [x]), ctx.const(_int64([0]), name="zero_index"),
                             ctx.const(_int64([1]), name="one_index")])
    shape = ctx.op("Concat", [batch, ctx.const(_int64(list(shape)), name="state_size")], axis=0)
    return ctx.op("ConstantOfShape", [shape], value=helper.make_tensor("zero", onnx_dtype(dtype), [1], [0]))


def _state_shapes(ctx, layer, step_shape):
    """Each state's shape after the batch, and the output's: ``(size,)`` for a vector cell, the convolution's
    output for a ConvLSTM cell (whose spatial sizes must then be known)."""
    if hasattr(layer.cell, "output_spatial"):
        spatial = tuple(layer.cell.output_spatial(step_shape)[1:])
        if None in spatial:
            raise ctx.error(f"its states' spatial sizes {spatial} are unknown; a Scan needs them. Expected an input "
                            "with known image sizes (only the time axis may vary)")
        return [spatial for _ in layer._sizes], spatial
    return [(size,) for size in layer._sizes], (layer._output_size,)


def convert_rnn(walk_class: type[_Walk], builder: GraphBuilder, layer: RNN, node: Node, values: dict[int, Value],
                scope: str) -> list[Value]:
    """Emit the Scan for ``layer`` (a kgraph RNN) called at ``node``; return its outputs' Values."""
    ctx = ConversionContext(builder, node, values, scope)
    dtype = ctx.input_dtype(0)
    rank = ctx.input_rank(0)
    x = ctx.input(0, NATIVE)
    step_shape = (None,) + tuple(ctx.input_shape(0)[2:])
    shapes, out_shape = _state_shapes(ctx, layer, step_shape)
    initial = node.call_kwargs.get("initial_state")
    if initial is not None:
        states = [ctx.tensor(t) for t in _flatten(initial)]
    else:
        states = [_zeros(ctx, x, shape, dtype) for shape in shapes]
    time_major = ctx.op("Transpose", [x], perm=[1, 0] + list(range(2, rank)), name="time_major")

    body = GraphBuilder(builder.opset)
    prefix = ctx.unique_name("scan_body")
    with tracing.scratch():
        x_t = tracing.Placeholder(KerasTensor(step_shape, dtype=dtype)).tensor
        held = [tracing.Placeholder(KerasTensor((None,) + shape, dtype=dtype)).tensor for shape in shapes]
        kwargs = {"training": False} if layer.cell._call_accepts_training else {}
        output, new_states = layer.cell.call(x_t, _pack_states(layer.cell.state_size, held), **kwargs)
        new_flat = _flatten(new_states)
        names = [body.unique_name(f"{prefix}/state_{i}") for i in range(len(shapes))]
        x_name = body.unique_name(f"{prefix}/x_t")
        body_values = {id(t): Value(n, NATIVE) for t, n in zip(held + [x_t], names + [x_name])}
        order, _ = graph.topological_nodes(set(body_values), [output] + new_flat)
        walk = walk_class(body)
        for inner in order:
            if not inner.is_input and not isinstance(inner.outbound_layer, tracing.Placeholder):
                walk.node(inner, body_values, f"{prefix}/")
        body_ctx = ConversionContext(body, node, body_values, prefix)
        outs = [body_ctx.op("Identity", [body.convert(body_ctx, body_values[id(t)], 1 + len(shape), NATIVE)],
                            name=f"out_{i}") for i, (t, shape) in enumerate(zip(new_flat + [output],
                                                                                shapes + [out_shape]))]
    elem = onnx_dtype(dtype)
    body_graph = helper.make_graph(
        body.nodes, prefix,
        [helper.make_tensor_value_info(n, elem, [None, *s]) for n, s in zip(names, shapes)]
        + [helper.make_tensor_value_info(x_name, elem, list(step_shape))],
        [helper.make_tensor_value_info(n, elem, [None, *s]) for n, s in zip(outs, shapes + [out_shape])],
        initializer=body.initializers)
    results = ctx.op("Scan", states + [time_major], outputs=len(shapes) + 1, body=body_graph, num_scan_inputs=1,
                     scan_input_directions=[int(layer.go_backwards)], name="Scan")
    final, sequence = results[:-1], results[-1]
    if layer.return_sequences:
        result = ctx.op("Transpose", [sequence], perm=[1, 0] + list(range(2, 2 + len(out_shape))),
                        name="batch_major")
    else:
        last = ctx.op("Slice", [sequence, ctx.const(_int64([-1]), name="last"),
                                ctx.const(_int64([np.iinfo(np.int64).max]), name="end"),
                                ctx.const(_int64([0]), name="time_axis")])
        result = ctx.op("Squeeze", [last, ctx.const(_int64([0]), name="time_axis")])
    outputs = [result] + final if layer.return_state else [result]
    return [Value(name, NATIVE) for name in outputs]


def applies(layer: Layer, node: Node) -> bool:
    """Whether ``layer`` at ``node`` is an RNN whose cell should run in a Scan (no mask argument given)."""
    from kgraph.layers.rnn.conv_lstm import ConvLSTM
    return (type(layer) is kgraph.layers.RNN or isinstance(layer, ConvLSTM)) and not layer.stateful \
        and node.call_kwargs.get("mask") is None \
        and len(node.call_args) == 1 and all(len(t.shape) >= 2 for t in node.input_tensors[:1])
