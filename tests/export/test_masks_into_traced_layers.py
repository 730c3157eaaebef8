"""Masks that flow into layers exported by tracing their `call`, in the style of keras-io's English-to-Spanish
Transformer: a PositionalEmbedding whose own `compute_mask` gives `ops.not_equal(inputs, 0)`, an encoder layer
that turns the `mask` it receives into MultiHeadAttention's `attention_mask`, a decoder layer that combines a
causal mask with both inputs' padding masks. Checked with onnxruntime (parity.assert_parity: batch 1 and 3,
graph optimizations on and off) on integer tokens padded with zeros at the end, at the start and in the middle,
fully padded rows included."""
import numpy as np
import onnxruntime
import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import layers, ops
from tests.export.parity import assert_parity

VOCAB, LENGTH, DIM = 20, 12, 8


class PositionalEmbedding(layers.Layer):
    def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=embed_dim)

    def call(self, inputs):
        positions = ops.arange(0, ops.shape(inputs)[-1], 1)
        return self.token_embeddings(inputs) + self.position_embeddings(positions)

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs, 0)


class TransformerEncoder(layers.Layer):
    def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.attention = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = kgraph.Sequential([layers.Dense(dense_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        padding_mask = None if mask is None else ops.cast(mask[:, None, :], dtype="int32")
        attention_output = self.attention(query=inputs, value=inputs, key=inputs, attention_mask=padding_mask)
        proj_input = self.layernorm_1(inputs + attention_output)
        return self.layernorm_2(proj_input + self.dense_proj(proj_input))


class TransformerDecoder(layers.Layer):
    def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.attention_1 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.attention_2 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = kgraph.Sequential([layers.Dense(latent_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.layernorm_3 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        inputs, encoder_outputs = inputs
        causal_mask = self.get_causal_attention_mask(inputs)
        inputs_padding_mask, encoder_outputs_padding_mask = (None, None) if mask is None else mask
        attention_output_1 = self.attention_1(query=inputs, value=inputs, key=inputs, attention_mask=causal_mask,
                                              query_mask=inputs_padding_mask)
        out_1 = self.layernorm_1(inputs + attention_output_1)
        attention_output_2 = self.attention_2(query=out_1, value=encoder_outputs, key=encoder_outputs,
                                              query_mask=inputs_padding_mask, key_mask=encoder_outputs_padding_mask)
        out_2 = self.layernorm_2(out_1 + attention_output_2)
        return self.layernorm_3(out_2 + self.dense_proj(out_2))

    def get_causal_attention_mask(self, inputs):
        input_shape = ops.shape(inputs)
        batch_size, sequence_length = input_shape[0], input_shape[1]
        i = ops.arange(sequence_length)[:, None]
        j = ops.arange(sequence_length)
        mask = ops.reshape(ops.cast(i >= j, dtype="int32"), (1, input_shape[1], input_shape[1]))
        mult = ops.concatenate([ops.expand_dims(batch_size, -1), ops.convert_to_tensor([1, 1])], axis=0)
        return ops.tile(mask, mult)


def padded_tokens(name, shape, dtype, rng):
    """Token ids >= 1 with zeros: padding at the end, at the start, a hole in the middle and a fully padded row
    (as many of these as the batch has rows)."""
    tokens = rng.integers(1, VOCAB, size=shape)
    batch, steps = shape
    for row in range(batch):
        kind = row % 4
        if kind == 0:
            tokens[row, rng.integers(1, steps + 1):] = 0
        elif kind == 1:
            tokens[row, :rng.integers(0, steps)] = 0
        elif kind == 2:
            tokens[row, steps // 2] = 0
        else:
            tokens[row] = 0
    return tokens.astype(dtype)


def _run(model, feeds):
    session = onnxruntime.InferenceSession(to_onnx(model).SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _tokens(batch, steps, seed=0):
    return padded_tokens("tokens", (batch, steps), "int64", np.random.default_rng(seed))


def test_an_encoder_receives_the_mask_of_a_positional_embedding():
    kgraph.utils.set_random_seed(0)
    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    encoded = TransformerEncoder(DIM, 16, 2)(PositionalEmbedding(LENGTH, VOCAB, DIM)(tokens))
    model = kgraph.Model(tokens, layers.Dense(3)(encoded))
    assert_parity(model, sampler=padded_tokens)
    for steps in (1, 5, LENGTH):  # padded rows give Keras's uniform attention there, not zeros
        x = _tokens(5, steps, seed=steps)
        np.testing.assert_allclose(_run(model, {"tokens": x}), model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def _translation_model():
    kgraph.utils.set_random_seed(1)
    encoder_inputs = kgraph.Input(shape=(None,), dtype="int64", name="encoder_inputs")
    x = PositionalEmbedding(LENGTH, VOCAB, DIM)(encoder_inputs)
    encoder_outputs = TransformerEncoder(DIM, 16, 2)(x)
    decoder_inputs = kgraph.Input(shape=(None,), dtype="int64", name="decoder_inputs")
    x = PositionalEmbedding(LENGTH, VOCAB, DIM)(decoder_inputs)
    x = TransformerDecoder(DIM, 16, 2)([x, encoder_outputs])
    x = layers.Dropout(0.5)(x)
    decoder_outputs = layers.Dense(VOCAB, activation="softmax")(x)
    return kgraph.Model({"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs}, decoder_outputs,
                        name="transformer")


def test_a_translation_transformer_exports_its_padding_and_causal_masks():
    model = _translation_model()
    encoder, decoder = _tokens(6, 7, seed=1), _tokens(6, 5, seed=2)[::-1].copy()
    model.compile("rmsprop", loss="sparse_categorical_crossentropy")
    model.fit({"encoder_inputs": encoder, "decoder_inputs": decoder}, decoder, epochs=1, verbose=0)
    proto = assert_parity(model, sampler=padded_tokens)
    assert {i.name for i in proto.graph.input} == {"decoder_inputs", "encoder_inputs"}
    feeds = {"encoder_inputs": encoder, "decoder_inputs": decoder}
    np.testing.assert_allclose(_run(model, feeds), model.predict(feeds, verbose=0), rtol=1e-5, atol=1e-5)


class MaskedMean(layers.Layer):
    """The mean over the unmasked steps, from the `mask` argument."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return None

    def call(self, inputs, mask=None):
        weights = ops.expand_dims(ops.cast(mask, inputs.dtype), -1)
        return ops.sum(inputs * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)


class Attend(layers.Layer):
    """A layer with `<argument>_mask` arguments: query steps attend to the unmasked context steps."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, query, context, context_mask=None):
        scores = ops.matmul(query, ops.transpose(context, (0, 2, 1)))
        scores = ops.where(ops.expand_dims(context_mask, 1), scores, -1e9)
        return ops.matmul(ops.softmax(scores, axis=-1), context)


class Recurrent(layers.Layer):
    """A layer whose `call` takes no mask: the Dense it calls passes its input's mask on, and the LSTM reads it,
    as when the model runs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(4)
        self.lstm = layers.LSTM(3)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return None

    def call(self, inputs):
        return self.lstm(self.dense(inputs))


class Shorter(layers.Layer):
    """Its own mask from the mask it receives: the last unmasked step is masked too (an int32 mask)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return inputs

    def compute_mask(self, inputs, mask=None):
        shifted = ops.concatenate([mask[:, 1:], ops.zeros_like(mask[:, :1])], axis=1)
        return ops.cast(ops.logical_and(mask, shifted), "int32")


@pytest.mark.parametrize("read", ["mask_argument", "argument_mask", "inner_lstm", "own_compute_mask"])
def test_masks_made_by_builtin_layers_reach_traced_layers(read):
    kgraph.utils.set_random_seed(2)
    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    e = layers.Embedding(VOCAB, 4, mask_zero=True)(tokens)
    if read == "mask_argument":
        out = MaskedMean()(layers.Dense(4)(e))
    elif read == "argument_mask":
        out = layers.GlobalAveragePooling1D()(Attend()(layers.Dense(4)(e), e))
    elif read == "inner_lstm":
        out = Recurrent()(e)
    else:
        out = layers.GRU(2)(Shorter()(e))
    model = kgraph.Model(tokens, out)
    assert_parity(model, sampler=padded_tokens)


def test_a_masking_layer_mask_reaches_a_traced_layer():
    inp = kgraph.Input((None, 2), name="x")
    model = kgraph.Model(inp, MaskedMean()(layers.Masking(mask_value=-1.0)(inp)))
    x = np.random.default_rng(0).standard_normal((3, 5, 2)).astype("float32")
    x[0, 3:] = -1.0
    x[1, :2] = -1.0
    np.testing.assert_allclose(_run(model, {"x": x}), model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)


def test_multi_head_attention_called_by_keywords_with_masks():
    """query/value/key by keyword, an attention_mask input and padding masks filled in; with and without the
    scores (which zero fully masked rows, where the output alone keeps them uniform over the keys)."""
    kgraph.utils.set_random_seed(3)
    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    allowed = kgraph.Input((None, None), dtype="int32", name="allowed")
    e = PositionalEmbedding(LENGTH, VOCAB, DIM)(tokens)
    output, scores = layers.MultiHeadAttention(2, 4)(query=e, value=e, key=e, attention_mask=allowed,
                                                      return_attention_scores=True)
    plain = layers.MultiHeadAttention(2, 4)(query=e, value=layers.Dense(DIM)(e), key=e)
    model = kgraph.Model([tokens, allowed], [output, scores, plain])
    x = _tokens(4, 6, seed=4)
    mask = (np.random.default_rng(5).random((4, 6, 6)) > 0.3).astype("int32")
    session = onnxruntime.InferenceSession(to_onnx(model).SerializeToString(), providers=["CPUExecutionProvider"])
    for got, want in zip(session.run(None, {"tokens": x, "allowed": mask}),
                         model.predict([x, mask], verbose=0)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


class NumpyMask(layers.Layer):
    """A compute_mask that needs values (a NumPy function): it cannot be traced into ops."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return ops.expand_dims(ops.cast(inputs, "float32"), -1)

    def compute_mask(self, inputs, mask=None):
        return ops.convert_to_tensor(np.not_equal(np.asarray(inputs), 0))


def test_a_mask_that_cannot_be_expressed_is_refused_naming_both_layers():
    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    made = NumpyMask(name="numpy_mask")(tokens)
    assert to_onnx(kgraph.Model(tokens, layers.Dense(2)(made))) is not None  # a mask nobody reads is not traced
    with pytest.raises(ExportError, match=r"'mean' \(MaskedMean\): it reads a mask made by layer 'numpy_mask' "
                                          r"\(NumpyMask\), and that mask could not be expressed in ONNX \(tracing "
                                          r"the `compute_mask` of layer 'numpy_mask'"):
        to_onnx(kgraph.Model(tokens, MaskedMean(name="mean")(made)))


def test_a_mask_reaching_an_unsupported_reader_inside_a_traced_layer_is_refused():
    class Simple(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.rnn = layers.SimpleRNN(2, name="simple")
            self.supports_masking = True

        def compute_mask(self, inputs, mask=None):
            return None

        def call(self, inputs):
            return self.rnn(inputs)

    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    model = kgraph.Model(tokens, Simple(name="outer")(PositionalEmbedding(LENGTH, VOCAB, 4, name="pe")(tokens)))
    with pytest.raises(ExportError, match=r"'outer' \(Simple\) through its traced `call`: Cannot export layer "
                                          r"'simple' \(SimpleRNN\): it reads a mask made by layer 'pe'"):
        to_onnx(model)


@pytest.mark.parametrize("cell", [layers.LSTMCell, layers.GRUCell])
@pytest.mark.parametrize("return_sequences", [False, True])
def test_an_rnn_of_a_builtin_cell_reads_the_mask_as_its_fused_layer(cell, return_sequences):
    """RNN(LSTMCell) exports as a native LSTM node: it skips the masked steps as the LSTM layer does."""
    kgraph.utils.set_random_seed(4)
    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    e = layers.Embedding(VOCAB, 4, mask_zero=True)(tokens)
    model = kgraph.Model(tokens, layers.RNN(cell(3), return_sequences=return_sequences)(e))
    assert_parity(model, sampler=padded_tokens)


def test_an_rnn_of_a_user_cell_reading_a_mask_is_refused():
    class Half(layers.Layer):
        state_size = 2

        def call(self, x, states):
            return x[:, :2] * 0.5 + states[0], [x[:, :2] * 0.5 + states[0]]

    tokens = kgraph.Input((None,), dtype="int64", name="tokens")
    e = layers.Embedding(VOCAB, 4, mask_zero=True, name="embed")(tokens)
    with pytest.raises(ExportError, match=r"'scanned' \(RNN\): it reads a mask made by layer 'embed'"):
        to_onnx(kgraph.Model(tokens, layers.RNN(Half(), name="scanned")(e)))
