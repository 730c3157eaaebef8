"""SimpleRNN as plain ops: unrolled when the time axis is fixed and short, else one Scan loop."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from onnx import helper

from export.builder import GraphBuilder, onnx_dtype
from export.context import ConversionContext
from export.converters.activations import emit_activation

if TYPE_CHECKING:
    from kgraph.layers.rnn.recurrent import SimpleRNN

# onnxruntime's RNN kernel is fast for one sequence but slow for many. Measured with
# ``benchmarks/export_quality.py --sections rnn`` (2 cores, µs per call, RNN node / Scan / unrolled): 8 steps
# of 16 units 6 / 19 / 11 at batch 1 and 77 / 35 / 26 at batch 64; 20 steps of 32 units 10 / 36 / 20 and
# 480 / 109 / 79; 32 steps of 128 units 52 / 74 / 48 and 3,396 / 686 / 752. Batches are what a server runs,
# so the RNN node is never chosen: a fixed time axis of at most ``UNROLL_MAX_STEPS`` steps is unrolled (no
# loop overhead), any other length runs as a Scan (smaller graphs, and faster at batch 64 from about 32
# steps). Both compute the input projection of every step in one MatMul.
UNROLL_MAX_STEPS = 24


def _int64(*values):
    return np.array(values, dtype=np.int64)


def _projected(ctx, layer, x):
    """``x @ kernel + bias`` for every step of time-major ``x`` (T, B, features) in one MatMul: (T, B, units)."""
    xw = ctx.op("MatMul", [x, ctx.weight(layer.kernel)])
    return xw if layer.bias is None else ctx.op("Add", [xw, ctx.weight(layer.bias)])


def _step(ctx, layer, h, xw_t, recurrent, dtype):
    """One step: ``activation(xw_t + h @ recurrent)``; ``h`` None is the zero initial state."""
    z = xw_t if h is None else ctx.op("Add", [ctx.op("MatMul", [h, recurrent]), xw_t])
    return emit_activation(ctx, layer.activation, z, rank=2, dtype=dtype)


def _unrolled(ctx, layer, xw, steps, dtype):
    """The per-step states in processing order, one MatMul/Add/activation per step."""
    recurrent = ctx.weight(layer.recurrent_kernel)
    pieces = ctx.op("Split", [xw, ctx.const(np.ones(steps, np.int64), name="split")], outputs=steps, axis=0)
    pieces = [pieces] if steps == 1 else pieces
    order = reversed(pieces) if layer.go_backwards else pieces
    states, h = [], None
    for piece in order:
        h = _step(ctx, layer, h, ctx.op("Squeeze", [piece, ctx.const(_int64(0), name="time_axis")]), recurrent,
                  dtype)
        states.append(h)
    return states


def _zero_state(ctx, layer, x, dtype):
    """Zeros of shape (batch, units), the batch read from time-major ``x``."""
    shape = ctx.op("Shape", [x])
    batch = ctx.op("Slice", [shape, ctx.const(_int64(1), name="one"), ctx.const(_int64(2), name="two")])
    size = ctx.op("Concat", [batch, ctx.const(_int64(layer.units), name="units")], axis=0)
    zero = helper.make_tensor("zero", onnx_dtype(dtype), [1], [0])
    return ctx.op("ConstantOfShape", [size], value=zero)


def _scan(ctx, layer, x, xw, dtype):
    """``(final state, states)`` of a Scan over the time axis of ``xw``; states in processing order."""
    body = GraphBuilder(ctx.opset)
    # The body's names live in the model's namespace: prefixed with a name unique in the outer graph.
    body_ctx = ConversionContext(body, ctx.node, {}, ctx.unique_name("scan_body"))
    h, xw_t = (body_ctx.unique_name(n) for n in ("h", "xw_t"))
    # The recurrent kernel is an initializer of the outer graph, which the body reads by name.
    h_next = _step(body_ctx, layer, h, xw_t, ctx.weight(layer.recurrent_kernel), dtype)
    state_out = body_ctx.op("Identity", [h_next], name="state")
    elem = onnx_dtype(dtype)
    dims = [None, layer.units]
    graph = helper.make_graph(
        body.nodes, body_ctx.scope, [helper.make_tensor_value_info(n, elem, dims) for n in (h, xw_t)],
        [helper.make_tensor_value_info(n, elem, dims) for n in (state_out, h_next)], initializer=body.initializers)
    return ctx.op("Scan", [_zero_state(ctx, layer, x, dtype), xw], outputs=2, body=graph, num_scan_inputs=1,
                  scan_input_directions=[int(layer.go_backwards)])


def simple_rnn(ctx: ConversionContext, layer: SimpleRNN, x: str) -> tuple[str | None, str]:
    """``(sequence or None, final state)`` of SimpleRNN ``layer`` on time-major ``x``; sequence time-major."""
    dtype = np.dtype(layer.kernel.dtype).name
    xw = _projected(ctx, layer, x)
    steps = ctx.input_shape()[1]
    if steps is not None and steps <= UNROLL_MAX_STEPS:
        states = _unrolled(ctx, layer, xw, steps, dtype)
        if not layer.return_sequences:
            return None, states[-1]
        axis = ctx.const(_int64(0), name="time_axis")
        sequence = ctx.op("Concat", [ctx.op("Unsqueeze", [h, axis]) for h in states], axis=0)
        return sequence, states[-1]
    last, sequence = _scan(ctx, layer, x, xw, dtype)
    return (sequence if layer.return_sequences else None), last

