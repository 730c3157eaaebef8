"""Recurrent and attention export: one native node per recurrent layer, parity at several sequence lengths."""
import collections

import numpy as np
import pytest

import kgraph
from export import to_onnx
from export.converters.layers.rnn import recurrent as rec
from export.converters.layers.rnn.simple_rnn import UNROLL_MAX_STEPS
from export.registry import lookup, tolerance
from export.verify import session
from kgraph import layers as L
from tests.export import zoo
from tests.export.zoo import perturb
from tests.export.zoo_recurrent import ATOL, RTOL

RECURRENT_ZOO = ["lstm_classifier", "embedding_lstm_classifier", "stacked_gru", "stacked_gru_reset_before",
                 "bidirectional_lstm_concat", "bidirectional_lstm_sum", "simple_rnn_backwards", "lstm_return_state",
                 "transformer_encoder", "transformer_encoder_causal", "attention_with_mask"]


def _feeds(model, batch, steps, seed):
    """Inputs with every dynamic axis ``steps`` long: floats, token ids below 40, 0/1 masks."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for tensor, name in zip(model.inputs, model.input_names):
        shape = (batch,) + tuple(steps if d is None else d for d in tensor.shape[1:])
        if np.issubdtype(np.dtype(tensor.dtype), np.integer):
            feeds[name] = rng.integers(0, 40, shape).astype(tensor.dtype)
        elif name == "mask":
            feeds[name] = (rng.random(shape) < 0.7).astype(tensor.dtype)
        else:
            feeds[name] = rng.standard_normal(shape).astype(tensor.dtype)
    return feeds


def _assert_parity(model, proto, lengths=(3, 11), batches=(1, 3)):
    sess = session(proto, "ORT_ENABLE_ALL")
    for steps in lengths:
        for batch in batches:
            feeds = _feeds(model, batch, steps, seed=steps * 10 + batch)
            arrays = [feeds[name] for name in model.input_names]
            expected = model.predict(arrays[0] if len(arrays) == 1 else arrays, verbose=0)
            expected = expected if isinstance(expected, (list, tuple)) else [expected]
            actual = sess.run(None, feeds)
            assert len(actual) == len(expected)
            for e, a in zip(expected, actual):
                np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL, err_msg=f"{model.name} T={steps} B={batch}")


def _op_counts(proto):
    return collections.Counter(node.op_type for node in proto.graph.node)


@pytest.fixture(scope="module")
def exported():
    cache = {}

    def get(name):
        if name not in cache:
            model = zoo.build(name)
            cache[name] = (model, to_onnx(model))
        return cache[name]
    return get


@pytest.mark.parametrize("name", RECURRENT_ZOO)
def test_zoo_models_match_at_two_sequence_lengths(exported, name):
    model, proto = exported(name)
    for value, tensor in zip(list(proto.graph.input) + list(proto.graph.output), model.inputs + model.outputs):
        dims = value.type.tensor_type.shape.dim
        assert dims[0].dim_param == "batch"
        for axis, size in enumerate(tensor.shape[1:], start=1):
            assert bool(dims[axis].dim_param) == (size is None), f"axis {axis} of {value.name}"
    _assert_parity(model, proto)


@pytest.mark.parametrize("name,op_type,count,max_nodes", [
    ("lstm_classifier", "LSTM", 1, 5),
    ("embedding_lstm_classifier", "LSTM", 1, 6),
    ("stacked_gru", "GRU", 2, 8),
    ("stacked_gru_reset_before", "GRU", 2, 8),
    ("bidirectional_lstm_concat", "LSTM", 2, 8),
    ("bidirectional_lstm_sum", "LSTM", 2, 6),
    ("lstm_return_state", "LSTM", 1, 8),
])
def test_one_native_node_per_recurrent_layer(exported, name, op_type, count, max_nodes):
    _, proto = exported(name)
    counts = _op_counts(proto)
    assert counts[op_type] == count
    assert not {"Loop", "Scan", "If"} & set(counts)
    assert len(proto.graph.node) <= max_nodes, dict(counts)
    for node in proto.graph.node:
        if node.op_type == op_type:
            attributes = {a.name for a in node.attribute}
            assert {"activations", "direction", "hidden_size"} <= attributes


def test_node_attributes_follow_the_layers(exported):
    def attribute(node, key):
        return next(a for a in node.attribute if a.name == key)
    for name, expected in (("stacked_gru", 1), ("stacked_gru_reset_before", 0)):
        gru_nodes = [n for n in exported(name)[1].graph.node if n.op_type == "GRU"]
        assert [attribute(n, "linear_before_reset").i for n in gru_nodes] == [expected, expected]
    for node in exported("bidirectional_lstm_sum")[1].graph.node:
        if node.op_type == "LSTM":
            assert attribute(node, "direction").s == b"bidirectional"
            assert [s.decode() for s in attribute(node, "activations").strings] == ["Sigmoid", "Tanh", "Tanh"] * 2
    scans = [n for n in exported("simple_rnn_backwards")[1].graph.node if n.op_type == "Scan"]
    assert [list(attribute(n, "scan_input_directions").ints) for n in scans] == [[1], [1]]
    causal_ops = _op_counts(exported("transformer_encoder_causal")[1])
    assert causal_ops["Trilu"] == 0 and causal_ops["CumSum"] == 1 and causal_ops["Softmax"] == 1


def _model(build, features=3, name="m"):
    x = kgraph.Input(shape=(None, features), name="sequence")
    return perturb(kgraph.Model(x, build(x), name=name))


BIDIRECTIONAL_CASES = [
    (merge_mode, kwargs) for merge_mode in ("concat", "sum", "mul", "ave", None)
    for kwargs in ({}, {"return_sequences": True, "return_state": True})
]


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("merge_mode,kwargs", BIDIRECTIONAL_CASES)
def test_bidirectional_merge_modes_and_states(opset, merge_mode, kwargs):
    model = _model(lambda x: L.Bidirectional(L.LSTM(3, **kwargs), merge_mode=merge_mode)(x))
    proto = to_onnx(model, opset=opset)
    assert _op_counts(proto)["LSTM"] == 1
    _assert_parity(model, proto, lengths=(4,), batches=(2,))


@pytest.mark.parametrize("build", [
    lambda x: L.Bidirectional(L.GRU(3, return_sequences=True),
                              backward_layer=L.SimpleRNN(3, go_backwards=True, return_sequences=True))(x),
    lambda x: L.Bidirectional(L.GRU(3, return_sequences=True, go_backwards=True),
                              backward_layer=L.GRU(3, return_sequences=True), merge_mode="ave")(x),
    lambda x: L.Bidirectional(L.GRU(3, return_state=True), merge_mode=None,
                              backward_layer=L.GRU(3, go_backwards=True, return_state=True, reset_after=False))(x),
])
def test_bidirectional_with_unlike_layers_uses_one_node_per_direction(build):
    model = _model(build)
    proto = to_onnx(model)
    counts = _op_counts(proto)
    assert counts["GRU"] + counts["Scan"] == 2 and "RNN" not in counts  # a SimpleRNN runs as a Scan
    _assert_parity(model, proto, lengths=(4,), batches=(2,))


@pytest.mark.parametrize("steps", [None, 5])
@pytest.mark.parametrize("merge_mode,kwargs", [("concat", {"return_sequences": True}), ("sum", {}),
                                               (None, {"return_sequences": True, "return_state": True})])
def test_bidirectional_simple_rnn_runs_as_plain_ops(steps, merge_mode, kwargs):
    x = kgraph.Input(shape=(steps, 3), name="sequence")
    model = perturb(kgraph.Model(x, L.Bidirectional(L.SimpleRNN(4, **kwargs), merge_mode=merge_mode)(x)))
    proto = to_onnx(model)
    counts = _op_counts(proto)
    assert "RNN" not in counts and counts["Scan"] == (0 if steps else 2)
    _assert_parity(model, proto, lengths=(steps or 6,), batches=(1, 3))


@pytest.mark.parametrize("activation,recurrent_activation", [
    ("linear", "hard_sigmoid"), ("leaky_relu", "sigmoid"), ("elu", "linear"), ("softsign", "softplus")])
def test_activations_with_parameters(activation, recurrent_activation):
    model = _model(lambda x: [
        L.LSTM(3, activation=activation, recurrent_activation=recurrent_activation, return_sequences=True)(x),
        L.GRU(3, activation=activation, recurrent_activation=recurrent_activation, go_backwards=True)(x),
        L.SimpleRNN(3, activation=activation)(x)])
    _assert_parity(model, to_onnx(model), lengths=(5,), batches=(2,))


def test_recurrent_layers_declare_the_looser_tolerance():
    for layer in (L.LSTM(2), L.GRU(2), L.SimpleRNN(2), L.Bidirectional(L.LSTM(2)), L.MultiHeadAttention(2, 2)):
        entry = lookup(layer, 17)
        assert (entry.rtol, entry.atol) == (RTOL, ATOL)
    assert tolerance([L.Dense(2), L.LSTM(2)], 17) == (RTOL, ATOL)


def test_attention_with_constant_mask():
    mask = np.tril(np.ones((4, 4), "float32"))[None]
    model = _model(lambda x: L.MultiHeadAttention(2, 3)(x, x, attention_mask=mask), features=6)
    _assert_parity(model, to_onnx(model), lengths=(4,), batches=(1, 3))


@pytest.mark.parametrize("opset", [13, 14, 17])
def test_causal_attention_at_every_opset_without_trilu(opset):
    query = kgraph.Input(shape=(None, 6), name="query")
    context = kgraph.Input(shape=(7, 4), name="context")  # a value length unlike the query's
    outputs = [L.MultiHeadAttention(2, 3)(query, query, use_causal_mask=True),
               L.MultiHeadAttention(2, 3)(query, context, use_causal_mask=True,
                                          attention_mask=np.ones((1, 1, 7), "float32"))]
    causal = perturb(kgraph.Model([query, context], outputs))
    proto = to_onnx(causal, opset=opset)
    assert "Trilu" not in _op_counts(proto)
    _assert_parity(causal, proto, lengths=(1, 5, 9), batches=(1, 2))


@pytest.mark.parametrize("build,shape", [
    (lambda x: L.Flatten()(L.LSTM(4, return_sequences=True)(x)), (6, 4)),
    (lambda x: L.Conv1D(3, 2)(L.GRU(4, return_sequences=True)(x)), (None, 4)),
    (lambda x: L.LayerNormalization()(L.Add()([x, L.LSTM(4, return_sequences=True)(x)])), (None, 4)),
    (lambda x: L.GlobalAveragePooling1D()(L.Bidirectional(L.GRU(2, return_sequences=True))(x)), (None, 4)),
])
def test_sequences_read_by_other_layers(build, shape):
    x = kgraph.Input(shape=shape, name="sequence")
    model = perturb(kgraph.Model(x, build(x)))
    _assert_parity(model, to_onnx(model), lengths=(6,), batches=(2,))


def test_stacked_recurrent_layers_stay_time_major():
    def build(x):
        h = L.Dropout(0.2)(L.LSTM(4, return_sequences=True)(x))
        h = L.Bidirectional(L.GRU(3, return_sequences=True))(h)
        return L.Dense(2)(L.SimpleRNN(3)(L.Activation("tanh")(h)))
    model = _model(build)
    proto = to_onnx(model)
    assert _op_counts(proto)["Transpose"] == 2  # into time-major once, and the bidirectional concat
    _assert_parity(model, proto, lengths=(5,), batches=(2,))


@pytest.mark.parametrize("steps,form", [(None, "Scan"), (6, "unrolled"), (UNROLL_MAX_STEPS + 1, "Scan")])
@pytest.mark.parametrize("kwargs", [{}, {"go_backwards": True, "return_sequences": True, "return_state": True},
                                    {"activation": "relu", "use_bias": False, "return_state": True}])
def test_simple_rnn_runs_as_plain_ops(steps, form, kwargs):
    x = kgraph.Input(shape=(steps, 3), name="sequence")
    model = perturb(kgraph.Model(x, L.SimpleRNN(4, **kwargs)(x)))
    proto = to_onnx(model)
    counts = _op_counts(proto)
    assert "RNN" not in counts and counts["Scan"] == (form == "Scan")
    if form == "unrolled":
        assert counts["MatMul"] == steps  # the input projection of all steps, then steps - 1 recurrent products
    _assert_parity(model, proto, lengths=(steps or 1, steps or 7), batches=(1, 3))


def _positional(values, count):
    """What an ONNX-spec reader sees: the value at each activation's position, None where it is absent."""
    return [values[i] if i < len(values) else None for i in range(count)]


def _in_order(values, takes):
    """What onnxruntime sees: the k-th value goes to the k-th activation that takes one."""
    out, k = [], 0
    for taking in takes:
        out.append(values[k] if taking and k < len(values) else None)
        k += taking
    return out


@pytest.mark.parametrize("forward,backward,nodes", [
    ("elu", "elu", 1), ("linear", "linear", 1), ("elu", "leaky_relu", 2), ("tanh", "hard_sigmoid", 1)])
def test_activation_parameters_read_alike_by_position_and_in_order(forward, backward, nodes):
    model = _model(lambda x: L.Bidirectional(
        L.LSTM(3, activation=forward, recurrent_activation="sigmoid", return_sequences=True),
        backward_layer=L.LSTM(3, activation=backward, go_backwards=True, return_sequences=True))(x))
    proto = to_onnx(model)
    lstm_nodes = [n for n in proto.graph.node if n.op_type == "LSTM"]
    assert len(lstm_nodes) == nodes
    table = {onnx_name: (alpha, beta) for onnx_name, alpha, beta in rec.ACTIVATION_PARAMETERS.values()}
    for node in lstm_nodes:
        attributes = {a.name: a for a in node.attribute}
        names = [s.decode() for s in attributes["activations"].strings]
        for key, index in (("activation_alpha", 0), ("activation_beta", 1)):
            values = [float(np.float32(v)) for v in attributes[key].floats] if key in attributes else []
            assert len(values) in (0, len(names))
            wanted = [None if table[name][index] is None else float(np.float32(table[name][index]))
                      for name in names]
            takes = [w is not None for w in wanted]
            by_position = [v if t else None for v, t in zip(_positional(values, len(names)), takes)]
            assert by_position == _in_order(values, takes) == wanted, (key, names, values)
    _assert_parity(model, proto, lengths=(4,), batches=(2,))
