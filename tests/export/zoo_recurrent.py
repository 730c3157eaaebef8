"""Zoo models of the recurrent and attention layers: LSTM, GRU, SimpleRNN, Bidirectional, transformer blocks.

Every input has a dynamic time axis (``Input(shape=(None, features))``).
"""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly

RTOL, ATOL = 1e-4, 1e-5


def _sequence_model(name, features, build, dtype=None):
    x = kgraph.Input(shape=(None, features) if dtype is None else (None,), name="sequence", dtype=dtype)
    return train_briefly(kgraph.Model(x, build(x), name=name))


@register_zoo_model("lstm_classifier", rtol=RTOL, atol=ATOL)
def lstm_classifier():
    """64 features per step, LSTM(128), Dense(10) softmax: the training benchmark's model."""
    return _sequence_model("lstm_classifier", 64,
                           lambda x: L.Dense(10, activation="softmax")(L.LSTM(128)(x)))


@register_zoo_model("embedding_lstm_classifier", rtol=RTOL, atol=ATOL)
def embedding_lstm_classifier():
    """Token ids, Embedding, LSTM, Dense softmax: a sequence classifier."""
    return _sequence_model("embedding_lstm_classifier", None,
                           lambda x: L.Dense(3, activation="softmax")(L.LSTM(12)(L.Embedding(40, 8)(x))),
                           dtype="int32")


def _stacked_gru(name, reset_after):
    def build(x):
        h = L.GRU(8, return_sequences=True, reset_after=reset_after)(x)
        h = L.GRU(6, return_sequences=True, reset_after=reset_after)(h)
        return L.Dense(2)(h)
    return _sequence_model(name, 3, build)


@register_zoo_model("stacked_gru", rtol=RTOL, atol=ATOL)
def stacked_gru():
    """Two GRUs returning sequences (reset_after=True, Keras's default) and a per-step Dense."""
    return _stacked_gru("stacked_gru", True)


@register_zoo_model("stacked_gru_reset_before", rtol=RTOL, atol=ATOL)
def stacked_gru_reset_before():
    """Two GRUs returning sequences with reset_after=False and a per-step Dense."""
    return _stacked_gru("stacked_gru_reset_before", False)


def _bidirectional(name, merge_mode):
    def build(x):
        h = L.Bidirectional(L.LSTM(6, return_sequences=True), merge_mode=merge_mode)(x)
        return L.Dense(2)(L.Bidirectional(L.LSTM(4), merge_mode=merge_mode)(h))
    return _sequence_model(name, 3, build)


@register_zoo_model("bidirectional_lstm_concat", rtol=RTOL, atol=ATOL)
def bidirectional_lstm_concat():
    """Two Bidirectional LSTMs (sequences, then last state) merged by concatenation."""
    return _bidirectional("bidirectional_lstm_concat", "concat")


@register_zoo_model("bidirectional_lstm_sum", rtol=RTOL, atol=ATOL)
def bidirectional_lstm_sum():
    """Two Bidirectional LSTMs (sequences, then last state) merged by summation."""
    return _bidirectional("bidirectional_lstm_sum", "sum")


@register_zoo_model("simple_rnn_backwards", rtol=RTOL, atol=ATOL)
def simple_rnn_backwards():
    """SimpleRNNs reading the sequence backwards: one returning its reversed sequence, one its last state."""
    def build(x):
        h = L.SimpleRNN(6, go_backwards=True, return_sequences=True)(x)
        return L.Dense(2)(L.SimpleRNN(4, go_backwards=True, activation="relu")(h))
    return _sequence_model("simple_rnn_backwards", 3, build)


@register_zoo_model("lstm_return_state", rtol=RTOL, atol=ATOL)
def lstm_return_state():
    """An LSTM returning its sequence and final states as three outputs."""
    def build(x):
        sequence, h, c = L.LSTM(5, return_sequences=True, return_state=True)(x)
        return [L.Dense(2)(sequence), h, c]
    return _sequence_model("lstm_return_state", 3, build)


def _encoder_block(x, causal):
    attended = L.MultiHeadAttention(num_heads=2, key_dim=8)(x, x, use_causal_mask=causal)
    h = L.LayerNormalization()(L.Add()([x, attended]))
    feed_forward = L.Dense(16)(L.Dense(32, activation="relu")(h))
    return L.LayerNormalization()(L.Add()([h, feed_forward]))


@register_zoo_model("transformer_encoder", rtol=RTOL, atol=ATOL)
def transformer_encoder():
    """A transformer encoder block (self-attention, residuals, LayerNormalization, feed-forward), pooled head."""
    return _sequence_model("transformer_encoder", 16,
                           lambda x: L.Dense(3)(L.GlobalAveragePooling1D()(_encoder_block(x, False))))


@register_zoo_model("transformer_encoder_causal", rtol=RTOL, atol=ATOL)
def transformer_encoder_causal():
    """A causal (decoder-style) transformer block returning a per-step output."""
    return _sequence_model("transformer_encoder_causal", 16, lambda x: L.Dense(4)(_encoder_block(x, True)))


def _mask_sampler(name, shape, dtype, rng):
    if name == "mask":
        return (rng.random(shape) < 0.7).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@register_zoo_model("attention_with_mask", rtol=RTOL, atol=ATOL, sampler=_mask_sampler)
def attention_with_mask():
    """Cross-attention with an attention-mask input, returning outputs and attention scores."""
    query = kgraph.Input(shape=(None, 6), name="query")
    context = kgraph.Input(shape=(None, 4), name="context")
    mask = kgraph.Input(shape=(None, None), name="mask")
    output, scores = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=5)(
        query, context, attention_mask=mask, return_attention_scores=True)
    return train_briefly(kgraph.Model([query, context, mask], [output, scores], name="attention_with_mask"))

