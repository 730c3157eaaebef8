"""One LSTM layer as an ONNX LSTM node, as a Scan loop and unrolled, from the same random weights (for timing)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from export.verify import session

FLOAT = TensorProto.FLOAT


def _step(prefix, h, c, xw, units, nodes):
    """Append one LSTM step's nodes (gates i, f, g, o); return the names of the new h and c."""
    def name(n):
        return prefix + n
    z = xw
    if h is not None:
        nodes += [helper.make_node("MatMul", [h, "R"], [name("hr")]),
                  helper.make_node("Add", [name("hr"), xw], [name("z")])]
        z = name("z")
    nodes.append(helper.make_node("Split", [z, "gate_sizes"], [name(g) for g in "ifgo"], axis=1))
    for gate, op in (("i", "Sigmoid"), ("f", "Sigmoid"), ("g", "Tanh"), ("o", "Sigmoid")):
        nodes.append(helper.make_node(op, [name(gate)], [name("a" + gate)]))
    nodes.append(helper.make_node("Mul", [name("ai"), name("ag")], [name("ig")]))
    c_next = name("ig")
    if c is not None:
        nodes += [helper.make_node("Mul", [name("af"), c], [name("fc")]),
                  helper.make_node("Add", [name("fc"), name("ig")], [name("c")])]
        c_next = name("c")
    nodes += [helper.make_node("Tanh", [c_next], [name("tc")]),
              helper.make_node("Mul", [name("ao"), name("tc")], [name("h")])]
    return name("h"), c_next


def model(form, steps, features, units, seed=0):
    """The ModelProto of ``form`` ('node', 'scan' or 'unrolled'): time-major x (steps, batch, features) -> last h."""
    rng = np.random.default_rng(seed)
    w = (0.2 * rng.standard_normal((features, 4 * units))).astype(np.float32)
    r = (0.2 * rng.standard_normal((units, 4 * units))).astype(np.float32)
    b = (0.1 * rng.standard_normal(4 * units)).astype(np.float32)
    arrays = {"axis0": np.array([0], np.int64)}
    if form == "node":
        arrays.update(W=w.T[None], R=r.T[None], B=np.concatenate([b, 0 * b])[None])
        nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y", "h_last"], hidden_size=units),
                 helper.make_node("Squeeze", ["h_last", "axis0"], ["last"])]
    else:
        arrays.update(W=w, R=r, b=b, gate_sizes=np.full(4, units, np.int64))
        nodes = [helper.make_node("MatMul", ["x", "W"], ["xw0"]), helper.make_node("Add", ["xw0", "b"], ["xw"])]
        if form == "scan":
            body = []
            h, c = _step("s/", "h", "c", "xw_t", units, body)
            body += [helper.make_node("Identity", [h], ["h_out"]), helper.make_node("Identity", [c], ["c_out"]),
                     helper.make_node("Identity", [h], ["h_seq"])]
            graph = helper.make_graph(
                body, "step", [helper.make_tensor_value_info(n, FLOAT, [None, d])
                               for n, d in (("h", units), ("c", units), ("xw_t", 4 * units))],
                [helper.make_tensor_value_info(n, FLOAT, [None, units]) for n in ("h_out", "c_out", "h_seq")])
            arrays.update(one=np.array([1], np.int64), two=np.array([2], np.int64), units=np.array([units], np.int64))
            nodes += [helper.make_node("Shape", ["x"], ["shape"]),
                      helper.make_node("Slice", ["shape", "one", "two"], ["batch"]),
                      helper.make_node("Concat", ["batch", "units"], ["state_shape"], axis=0),
                      helper.make_node("ConstantOfShape", ["state_shape"], ["zeros"]),
                      helper.make_node("Scan", ["zeros", "zeros", "xw"], ["last", "c_last", "sequence"],
                                       num_scan_inputs=1, body=graph)]
        else:
            arrays["splits"] = np.ones(steps, np.int64)
            nodes.append(helper.make_node("Split", ["xw", "splits"], [f"xw_step{t}" for t in range(steps)], axis=0))
            h = c = None
            for t in range(steps):
                nodes.append(helper.make_node("Squeeze", [f"xw_step{t}", "axis0"], [f"x{t}"]))
                h, c = _step(f"t{t}/", h, c, f"x{t}", units, nodes)
            nodes.append(helper.make_node("Identity", [h], ["last"]))
    graph = helper.make_graph(nodes, form, [helper.make_tensor_value_info("x", FLOAT, [steps, "batch", features])],
                              [helper.make_tensor_value_info("last", FLOAT, ["batch", units])],
                              [numpy_helper.from_array(a, n) for n, a in arrays.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return proto


def table(median_seconds, shapes):
    """Markdown table: µs per call of the three forms at batch 1 and 64 for each (steps, features, units)."""
    lines = ["| LSTM steps x features -> units | batch | LSTM node µs | Scan µs | unrolled µs |",
             "|---|---|---|---|---|"]
    for steps, features, units in shapes:
        sessions = {form: session(model(form, steps, features, units), "ORT_ENABLE_ALL")
                    for form in ("node", "scan", "unrolled")}
        for batch in (1, 64):
            feed = {"x": np.random.default_rng(batch).standard_normal((steps, batch, features)).astype(np.float32)}
            us = {form: 1e6 * median_seconds(lambda: sess.run(None, feed), 300 if batch == 1 else 100)
                  for form, sess in sessions.items()}
            lines.append(f"| {steps} x {features} -> {units} | {batch} | {us['node']:.1f} | {us['scan']:.1f} | "
                         f"{us['unrolled']:.1f} |")
    return "\n".join(lines)
