"""Recurrent layers in onnxruntime: native RNN/LSTM nodes against Scan loops and unrolled ops, batch 1 and 64.

Used by ``export_quality.py``; the figures behind the rule in
``export/converters/layers/rnn/simple_rnn.py``. SimpleRNN: the RNN-node graph is
built here from the same layer's weights (the exporter no longer writes it).
LSTM: the three forms are built here from random weights (the exporter keeps
the LSTM node, which these figures justify).
"""
import lstm_forms
import numpy as np
import onnx
from onnx import helper, numpy_helper

import kgraph
from export import to_onnx
from export.converters.layers.rnn import simple_rnn as recurrent_loops
from export.verify import session
from tests.export.zoo import perturb

SHAPES = [(8, 16, 16), (20, 16, 32), (32, 64, 128)]  # (steps, features, units)


def _rnn_node_model(layer, steps, features):
    """One ONNX RNN node computing ``layer`` (a SimpleRNN with tanh, returning its last state)."""
    w = layer.kernel.numpy().T[None]
    r = layer.recurrent_kernel.numpy().T[None]
    b = np.concatenate([layer.bias.numpy(), np.zeros(layer.units, np.float32)])[None]
    nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
             helper.make_node("RNN", ["xt", "W", "R", "B"], ["y", "h"], hidden_size=layer.units,
                              activations=["Tanh"]),
             helper.make_node("Squeeze", ["h", "axis"], ["last"])]
    graph = helper.make_graph(
        nodes, "rnn_node", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", steps, features])],
        [helper.make_tensor_value_info("last", onnx.TensorProto.FLOAT, ["batch", layer.units])],
        [numpy_helper.from_array(a, n) for a, n in ((w, "W"), (r, "R"), (b, "B"), (np.array([0]), "axis"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _exported(model, unroll_max_steps):
    saved = recurrent_loops.UNROLL_MAX_STEPS
    recurrent_loops.UNROLL_MAX_STEPS = unroll_max_steps
    try:
        return to_onnx(model)
    finally:
        recurrent_loops.UNROLL_MAX_STEPS = saved


def report(median_seconds):
    """The SimpleRNN and LSTM tables (Markdown) as text."""
    return _simple_rnn_table(median_seconds) + "\n\n" + lstm_forms.table(median_seconds, SHAPES)


def _simple_rnn_table(median_seconds):
    lines = ["| steps x features -> units | batch | RNN node µs | Scan µs | unrolled µs | exported as |",
             "|---|---|---|---|---|---|"]
    for steps, features, units in SHAPES:
        x = kgraph.Input(shape=(steps, features), name="x")
        layer = kgraph.layers.SimpleRNN(units)
        model = perturb(kgraph.Model(x, layer(x)), scale=0.3)
        forms = {"node": _rnn_node_model(layer, steps, features), "scan": _exported(model, 0),
                 "unrolled": _exported(model, steps)}
        chosen = "unrolled" if steps <= recurrent_loops.UNROLL_MAX_STEPS else "Scan"
        sessions = {form: session(proto, "ORT_ENABLE_ALL") for form, proto in forms.items()}
        for batch in (1, 64):
            feed = {"x": np.random.default_rng(batch).standard_normal((batch, steps, features)).astype(np.float32)}
            runs = 500 if batch == 1 else 200
            us = {form: 1e6 * median_seconds(lambda: sess.run(None, feed), runs) for form, sess in sessions.items()}
            lines.append(f"| {steps} x {features} -> {units} | {batch} | {us['node']:.1f} | {us['scan']:.1f} | "
                         f"{us['unrolled']:.1f} | {chosen} |")
    return "\n".join(lines)
