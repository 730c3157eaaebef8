"""Export of op nodes and of custom layers traced into ops, checked with onnxruntime (parity.assert_parity:
batch 1 and 3, graph optimizations on and off, float32 rtol = atol = 1e-5)."""
import os
import subprocess
import sys

import numpy as np
import onnxruntime
import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import layers, ops
from tests import custom_layers as C
from tests import op_models
from tests.export import zoo
from tests.export.parity import assert_parity

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("opset", [13, None])
@pytest.mark.parametrize("build", op_models.BUILDERS, ids=lambda b: b.__name__)
def test_functional_models_with_op_nodes_match_onnxruntime(build, opset):
    model, _ = build()
    assert_parity(model, opset=opset)


def test_an_operator_is_one_onnx_node():
    x = kgraph.Input(shape=(3,), name="x")
    proto = to_onnx(kgraph.Model(x, x + 1.0))
    assert [node.op_type for node in proto.graph.node] == ["Add"]


def _custom_model():
    x = kgraph.Input(shape=(4,), name="x")
    h = layers.Dense(6, activation="tanh", name="before")(x)
    h = C.NormalizedProjection(5, name="projection")(C.Linear(6, name="linear")(h))
    h = C.OperatorMix(name="mix")(C.ActivityRegularizer(0.1, name="reg")(h))
    return kgraph.Model(x, layers.Dense(2, name="after")(h), name="custom")


def test_custom_layers_export_by_tracing_with_parity():
    kgraph.utils.set_random_seed(0)
    assert_parity(_custom_model())


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "export", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_cli_imports_the_custom_layer_module_and_verifies(tmp_path):
    kgraph.utils.set_random_seed(0)
    path = tmp_path / "custom.pkl"
    _custom_model().save(path)
    without = _cli(str(path))
    assert without.returncode != 0 and "Linear" in without.stderr
    done = _cli(str(path), "--import", "tests.custom_layers", "--verify")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "custom.onnx").exists()


def test_numpy_function_that_is_no_op_is_a_clear_export_error():
    x = kgraph.Input(shape=(4,), name="x")
    model = kgraph.Model(x, C.SortsWithNumPy(name="sorter")(layers.Dense(4)(x)))
    with pytest.raises(ExportError) as info:
        to_onnx(model)
    message = str(info.value)
    assert "'sorter' (SortsWithNumPy)" in message and "no ONNX converter" in message
    assert "custom_layers.py:" in message and "np.sort(inputs, axis=-1)" in message
    assert "@export.converter(SortsWithNumPy, opset=13)" in message


def test_data_dependent_python_control_flow_is_a_clear_export_error():
    class Branchy(kgraph.layers.Layer):
        def call(self, x):
            if ops.sum(x) > 0:
                return x * 2.0
            return x

    x = kgraph.Input(shape=(3,), name="x")
    model = kgraph.Model(x, Branchy(name="branchy")(x))
    np.testing.assert_array_equal(model.predict(np.ones((1, 3), "float32"), verbose=0), [[2.0, 2.0, 2.0]])
    with pytest.raises(ExportError, match=r"'branchy'.*test_traced_export.py:\d+ \(`if ops.sum\(x\) > 0:`\)"):
        to_onnx(model)


def test_a_layer_reading_a_mask_is_a_clear_export_error_never_a_different_model():
    inp = kgraph.Input((None,), dtype="int32", name="tokens")
    e = layers.Dense(4)(layers.Embedding(20, 4, mask_zero=True, name="embed")(inp))
    simple = layers.SimpleRNN(2, name="simple")(e)
    with pytest.raises(ExportError, match=r"'simple' \(SimpleRNN\): it reads a mask made by layer 'embed'"):
        to_onnx(kgraph.Model(inp, simple))
    carried = layers.LSTM(3, return_sequences=True, go_backwards=True, name="seq")(e)
    with pytest.raises(ExportError, match=r"'seq' \(LSTM\).*repeats the last output"):
        to_onnx(kgraph.Model(inp, carried))
    unmasked = kgraph.Model(inp, layers.Dense(2)(layers.Embedding(20, 4)(inp)))
    assert to_onnx(unmasked) is not None


def test_rnn_with_cells_and_time_distributed_export_by_tracing():
    inp = kgraph.Input((5, 4), name="seq")
    cells = kgraph.Model(inp, layers.Dense(2)(layers.RNN([layers.LSTMCell(3), layers.GRUCell(2)])(inp)))
    assert_parity(cells)
    distributed = kgraph.Model(inp, layers.TimeDistributed(layers.Dense(2))(inp))
    proto = assert_parity(distributed)
    assert [node.op_type for node in proto.graph.node] == ["Reshape", "Gemm", "Reshape"]


def test_time_distributed_over_a_time_axis_of_any_length_exports():
    inp = kgraph.Input((None, 4), name="seq")
    model = kgraph.Model(inp, layers.TimeDistributed(layers.Dense(2))(inp))
    proto = assert_parity(model)
    assert "Shape" in [node.op_type for node in proto.graph.node]  # the time axis is read when it runs
    for steps in (1, 7):
        x = np.random.default_rng(steps).standard_normal((3, steps, 4)).astype("float32")
        session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x})[0]
        np.testing.assert_allclose(got, model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def test_what_a_stateless_graph_cannot_carry_is_a_clear_error():
    inp = kgraph.Input((5, 4), name="seq")
    with pytest.raises(ExportError, match="stateful=True"):
        to_onnx(kgraph.Model(inp, layers.LSTM(3, stateful=True)(inp)))
    h = kgraph.Input((3,), name="h")
    c = kgraph.Input((3,), name="c")
    with pytest.raises(ExportError, match="initial_state"):
        to_onnx(kgraph.Model([inp, h], layers.SimpleRNN(3)(inp, initial_state=[h])))
    assert_parity(kgraph.Model([inp, h, c], layers.LSTM(3)(inp, initial_state=[h, c])), rtol=1e-4)
    assert_parity(kgraph.Model([inp, h], layers.GRU(3, go_backwards=True)(inp, initial_state=h)), rtol=1e-4)


class HalfCell(kgraph.layers.Layer):
    """A user cell: ``h = (x + h_prev) / 2``, with no native ONNX form (it exports by tracing, unrolled)."""

    state_size = 4

    def call(self, inputs, states):
        h = (inputs + states[0]) * 0.5
        return h, [h]


@pytest.mark.parametrize("make", [lambda: layers.Attention(use_scale=True), lambda: layers.AdditiveAttention(),
                                  lambda: layers.Attention(score_mode="concat")])
def test_attention_layers_export_by_tracing(make):
    q, v = kgraph.Input((3, 4), name="q"), kgraph.Input((5, 4), name="v")
    layer = make()
    model = kgraph.Model([q, v], layers.Dense(2)(layer([q, v], use_causal_mask=False)))
    assert_parity(model)


def test_a_saved_model_with_op_nodes_exports_from_a_fresh_process(tmp_path):
    model, _ = op_models.concat_slices()
    model.save(tmp_path / "ops.pkl")
    done = _cli(str(tmp_path / "ops.pkl"), "--verify")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("cell, native", [(lambda: layers.LSTMCell(3), "LSTM"), (lambda: layers.GRUCell(3), "GRU"),
                                          (lambda: layers.GRUCell(3, reset_after=False), "GRU")])
def test_rnn_of_one_builtin_cell_exports_as_the_native_node(cell, native):
    inp = kgraph.Input((None, 4), name="seq")
    model = kgraph.Model(inp, layers.Dense(2)(layers.RNN(cell(), return_sequences=True)(inp)))
    proto = assert_parity(model, rtol=1e-4)
    assert [node.op_type for node in proto.graph.node].count(native) == 1


def _padded_tokens(length):
    sequences = [[3, 4, 5], [7, 8], [1, 2, 3, 4, 5, 6], [9]]
    out = np.zeros((len(sequences), length), "int64")
    for i, s in enumerate(sequences):
        out[i, :len(s)] = s
    return out


MASKED = {
    "imdb": lambda e: layers.Bidirectional(layers.LSTM(3))(e),
    "gru_pooled": lambda e: layers.GlobalAveragePooling1D()(layers.Bidirectional(
        layers.GRU(3, return_sequences=True))(layers.Dense(4)(e))),
    "backwards": lambda e: layers.LSTM(3, go_backwards=True)(e),
    "sequences_carried": lambda e: layers.GRU(2)(layers.LSTM(3, return_sequences=True)(e)),
}


@pytest.mark.parametrize("kind", sorted(MASKED))
def test_masks_export_exactly_for_any_padding(kind):
    """onnxruntime runs the exported graph on tokens padded at the end, at the start (pad_sequences' default) and
    with holes, at two lengths; rtol/atol 1e-5 (float32)."""
    import onnxruntime as ort
    kgraph.utils.set_random_seed(0)
    inp = kgraph.Input((None,), dtype="int64", name="tokens")
    model = kgraph.Model(inp, layers.Dense(2)(MASKED[kind](layers.Embedding(20, 4, mask_zero=True)(inp))))
    session = ort.InferenceSession(to_onnx(model).SerializeToString(), providers=["CPUExecutionProvider"])
    holes = np.array([[3, 0, 4, 0, 5, 0], [0, 7, 8, 0, 0, 1], [1, 2, 3, 4, 5, 6], [0, 0, 0, 0, 0, 9]], "int64")
    for tokens in (_padded_tokens(6), _padded_tokens(9), _padded_tokens(7)[:, ::-1].copy(), holes):
        (onnx_out,) = session.run(None, {"tokens": tokens})
        np.testing.assert_allclose(onnx_out, model.predict(tokens, verbose=0), rtol=1e-5, atol=1e-5)


def test_masking_layer_exports_its_mask():
    import onnxruntime as ort
    inp = kgraph.Input((None, 2), name="x")
    model = kgraph.Model(inp, layers.GRU(3)(layers.Masking(mask_value=-1.0)(inp)))
    x = np.random.default_rng(0).standard_normal((3, 5, 2)).astype("float32")
    x[0, 3:] = -1.0
    x[1, 1:] = -1.0
    session = ort.InferenceSession(to_onnx(model).SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attend", [lambda e: layers.MultiHeadAttention(2, 3)(e, e),
                                    lambda e: layers.Attention(use_scale=True)([e, e]),
                                    lambda e: layers.AdditiveAttention()([e, e])])
def test_masked_attention_exports(attend):
    import onnxruntime as ort
    kgraph.utils.set_random_seed(0)
    inp = kgraph.Input((None,), dtype="int64", name="tokens")
    e = layers.Embedding(20, 4, mask_zero=True)(inp)
    model = kgraph.Model(inp, layers.Dense(2)(layers.GlobalAveragePooling1D()(attend(e))))
    session = ort.InferenceSession(to_onnx(model).SerializeToString(), providers=["CPUExecutionProvider"])
    for length in (6, 9):
        tokens = _padded_tokens(length)
        np.testing.assert_allclose(session.run(None, {"tokens": tokens})[0], model.predict(tokens, verbose=0),
                                   rtol=1e-5, atol=1e-5)


class Classifier(kgraph.Model):
    """A subclassed model as the Keras guides write them: layers in __init__, Python in call."""

    def __init__(self):
        super().__init__()
        self.hidden = layers.Dense(8, activation="relu")
        self.dropout = layers.Dropout(0.5)
        self.head = layers.Dense(3)

    def call(self, x, training=False):
        return ops.softmax(self.head(self.dropout(self.hidden(x), training=training)) + x[:, :3])


class TwoInputs(kgraph.Model):
    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(2)

    def call(self, inputs):
        a, b = inputs
        return self.dense(a) * b


def test_subclassed_models_export_by_tracing_their_call():
    kgraph.utils.set_random_seed(0)
    model = Classifier()
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.random.rand(16, 4).astype("float32"), np.random.rand(16, 3).astype("float32"), verbose=0)
    proto = assert_parity(model)
    assert [node.op_type for node in proto.graph.node] == ["Gemm", "Relu", "Gemm", "Slice", "Add", "Softmax"]
    two = TwoInputs()
    two([np.ones((2, 3), "float32"), np.ones((2, 2), "float32")])
    assert [i.name for i in assert_parity(two).graph.input] == ["input_0", "input_1"]
    with pytest.raises(ExportError, match="never been called"):
        to_onnx(Classifier())


@pytest.mark.parametrize("options", [{}, {"return_sequences": True, "go_backwards": True}, {"return_state": True}])
def test_rnn_of_a_user_cell_exports_as_one_scan_for_any_length(options):
    inp = kgraph.Input((None, 4), name="seq")
    model = kgraph.Model(inp, layers.RNN([HalfCell(), layers.LSTMCell(2)], **options)(inp))
    proto = assert_parity(model, rtol=1e-4)
    assert [node.op_type for node in proto.graph.node].count("Scan") == 1


def test_rnn_with_initial_states_exports_them():
    inp, h, c = kgraph.Input((None, 4), name="seq"), kgraph.Input((2,), name="h"), kgraph.Input((2,), name="c")
    model = kgraph.Model([inp, h, c], layers.RNN(layers.LSTMCell(2))(inp, initial_state=[h, c]))
    assert_parity(model, rtol=1e-4)


def test_seq2seq_encoder_states_start_the_decoder():
    """The Keras seq2seq example: the encoder's final states are the decoder LSTM's initial_state."""
    encoder_in, decoder_in = kgraph.Input((None, 5), name="encoder"), kgraph.Input((None, 6), name="decoder")
    _, h, c = layers.LSTM(4, return_state=True)(encoder_in)
    decoded = layers.LSTM(4, return_sequences=True)(decoder_in, initial_state=[h, c])
    model = kgraph.Model([encoder_in, decoder_in], layers.Dense(6, activation="softmax")(decoded))
    proto = assert_parity(zoo.perturb(model), rtol=1e-4)
    assert [node.op_type for node in proto.graph.node].count("LSTM") == 2


def test_softmax_with_a_constant_mask_inside_a_traced_layer_keeps_the_mask():
    class Masked(layers.Layer):
        def call(self, x):
            return layers.Softmax()(x, mask=np.array([[True, True, False]]))

    inp = kgraph.Input((3,), name="x")
    assert_parity(kgraph.Model(inp, Masked()(inp)))


@kgraph.saving.register_keras_serializable(package="traced_export")
def scaled_tanh(x):
    return 1.7159 * ops.tanh(2.0 * x / 3.0)


def test_a_layer_with_a_registered_custom_activation_exports_by_tracing_its_call():
    inp = kgraph.Input((4,), name="x")
    model = kgraph.Model(inp, layers.Dense(3, activation=scaled_tanh)(inp))
    proto = assert_parity(model)
    assert "Tanh" in [node.op_type for node in proto.graph.node]


class Patches(layers.Layer):
    """The vision examples' patch extractor: its reshape takes the batch size from ``ops.shape``."""

    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def call(self, images):
        batch_size = ops.shape(images)[0]
        patches = ops.image.extract_patches(images, size=self.patch_size)
        rows, cols, dim = ops.shape(patches)[1], ops.shape(patches)[2], ops.shape(patches)[3]
        return ops.reshape(patches, (batch_size, rows * cols, dim))


def test_sizes_read_with_ops_shape_are_traced_as_run_time_values():
    inp = kgraph.Input((8, 8, 3), name="images")
    model = kgraph.Model(inp, layers.Dense(4)(Patches(4)(inp)))
    assert model.output.shape == (None, 4, 4)
    proto = assert_parity(model)
    assert "Shape" in [node.op_type for node in proto.graph.node]
    seq = kgraph.Input((None, 6), name="seq")

    class Halves(layers.Layer):
        def call(self, x):
            batch, steps = ops.shape(x)[0], ops.shape(x)[1]
            return ops.reshape(x, (batch, steps * 2, 3))

    assert_parity(kgraph.Model(seq, Halves()(seq)))
