"""Sequence models in a replayed fit step: ``Embedding(mask_zero=True)``, ``Masking``, the recurrent layers and
attention reading the padding masks, ``RNN`` over kgraph's cells, inputs cast to the model's input dtype.

The masks, the input casts and the embedding's index checks are ops of the step, so a replayed step computes and
checks them on every batch: the same histories and weights as the step as written, and the same errors.
"""
import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.backend.autodiff import GradientTape
from kgraph.backend.step_trace import StepTrace
from tests.kgraph.trainers.test_replay import _assert_same_training, _programs


def _tokens(n=128, steps=10, vocabulary=30, seed=0):
    """Token ids with about 30 % padding (id 0) in random places, and three classes."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, vocabulary, (n, steps))
    tokens[rng.random((n, steps)) < 0.3] = 0
    return tokens, rng.integers(0, 3, n)


def _embedded(dtype=None):
    x = kgraph.Input((10,), dtype=dtype) if dtype else kgraph.Input((10,))  # float32 by default, as in Keras
    return x, layers.Embedding(30, 8, mask_zero=True)(x)


def _classifier(x, h):
    return kgraph.Model(x, layers.Dense(3, activation="softmax")(h))


def _lstm():
    x, h = _embedded()
    return _classifier(x, layers.LSTM(6)(h))


def _gru_int_input():
    x, h = _embedded("int32")
    return _classifier(x, layers.GRU(6)(h))


def _bidirectional():
    x, h = _embedded()
    return _classifier(x, layers.Bidirectional(layers.LSTM(4))(h))


def _stacked():
    x, h = _embedded()
    return _classifier(x, layers.LSTM(4)(layers.LSTM(6, return_sequences=True)(h)))


def _simple_rnn():
    x, h = _embedded()
    return _classifier(x, layers.SimpleRNN(5)(h))


def _sequential_lstm():
    return kgraph.Sequential([kgraph.Input((10,)), layers.Embedding(30, 8, mask_zero=True), layers.LSTM(6),
                              layers.Dense(3, activation="softmax")])


_RECURRENT = {"lstm": _lstm, "gru_int_input": _gru_int_input, "bidirectional": _bidirectional,
              "stacked": _stacked, "simple_rnn": _simple_rnn, "sequential": _sequential_lstm}


@pytest.mark.parametrize("name", sorted(_RECURRENT))
def test_masked_recurrent_models_replay_as_written(name):
    tokens, labels = _tokens()
    # (within float rounding: the recurrent kernels may split a batch between two threads, replayed or not)
    _assert_same_training(_RECURRENT[name], tokens, labels, exact=False, epochs=2, batch_size=32)


def _cell_model(cell, **kwargs):
    def build():
        x = kgraph.Input((10, 3))
        return _classifier(x, layers.RNN(cell(), **kwargs)(x))
    return build


_CELLS = {"lstm_cell": _cell_model(lambda: layers.LSTMCell(4)),
          "gru_cell": _cell_model(lambda: layers.GRUCell(4)),
          "simple_cell_backwards": _cell_model(lambda: layers.SimpleRNNCell(4), go_backwards=True),
          "stacked_cells": _cell_model(lambda: layers.StackedRNNCells([layers.LSTMCell(4), layers.GRUCell(3)]))}


@pytest.mark.parametrize("name", sorted(_CELLS))
def test_rnn_over_kgraph_cells_replays_bit_for_bit(name):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(96, 10, 3)).astype("float32")
    _assert_same_training(_CELLS[name], x, rng.integers(0, 3, 96), epochs=2, batch_size=32)


def test_rnn_over_a_masked_embedding_replays_bit_for_bit():
    tokens, labels = _tokens(seed=7)

    def build():
        x, h = _embedded()
        return _classifier(x, layers.RNN(layers.GRUCell(5))(h))
    _assert_same_training(build, tokens, labels, epochs=2, batch_size=32)


def test_a_cell_with_dropout_runs_as_written():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(96, 10, 3)).astype("float32")
    # (its dropout masks are drawn with NumPy outside the ops: the trace is refused)
    _assert_same_training(_cell_model(lambda: layers.LSTMCell(4, dropout=0.2)), x, rng.integers(0, 3, 96),
                          replayed=False, epochs=2, batch_size=32)


def _pooled():
    x, h = _embedded()
    return _classifier(x, layers.GlobalAveragePooling1D()(h))


def _self_attention():
    x, h = _embedded()
    attended = layers.MultiHeadAttention(2, 4)(h, h)
    h = layers.LayerNormalization()(layers.Add()([h, attended]))
    return _classifier(x, layers.GlobalAveragePooling1D()(h))


def _causal_attention_with_a_mask_input():
    x, allowed = kgraph.Input((10,)), kgraph.Input((10, 10), dtype="bool")
    h = layers.Embedding(30, 8)(x)
    attended = layers.MultiHeadAttention(2, 4)(h, h, attention_mask=allowed, use_causal_mask=True)
    return kgraph.Model([x, allowed], layers.Dense(3, activation="softmax")(layers.Flatten()(attended)))


@pytest.mark.parametrize("build", [_pooled, _self_attention], ids=["pooling", "attention"])
def test_masked_pooling_and_attention_replay_bit_for_bit(build):
    tokens, labels = _tokens(seed=1)
    _assert_same_training(build, tokens, labels, epochs=2, batch_size=32)


def test_attention_mask_input_and_causal_mask_replay_bit_for_bit():
    tokens, labels = _tokens(seed=2)
    allowed = np.random.default_rng(3).random((len(tokens), 10, 10)) < 0.8  # a different mask in every batch
    _assert_same_training(_causal_attention_with_a_mask_input, [tokens, allowed], labels, epochs=2, batch_size=32)


def test_masking_layer_replays_bit_for_bit():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(128, 10, 3)).astype("float32")
    x[rng.random((128, 10)) < 0.3] = 0.0  # padded timesteps: every feature the mask value

    def build():
        inputs = kgraph.Input((10, 3))
        return _classifier(inputs, layers.GlobalAveragePooling1D()(layers.Masking(0.0)(inputs)))
    _assert_same_training(build, x, rng.integers(0, 3, 128), epochs=2, batch_size=32)


def test_integer_data_for_a_float_input_replays_bit_for_bit():
    rng = np.random.default_rng(5)
    pixels = rng.integers(0, 256, (160, 16), dtype=np.uint8)  # cast to the input's float32 by an op of the step

    def build():
        x = kgraph.Input((16,))
        return _classifier(x, layers.Dense(8, activation="relu")(layers.Rescaling(1 / 255)(x)))
    _assert_same_training(build, pixels, rng.integers(0, 3, 160), epochs=2, batch_size=32)


def _replayed_fit(build, x, y):
    """A model fitted (replayed: ``jit_compile="auto"``) for one epoch of 4 batches of 32 rows."""
    kgraph.utils.set_random_seed(0)
    model = build()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
    assert any(type(p) is not str and p.confirmed for p in _programs(model).values())
    return model


def test_a_replayed_step_checks_every_batch_of_token_ids():
    tokens, labels = _tokens()
    model = _replayed_fit(_lstm, tokens, labels)
    bad = tokens.copy()
    bad[100, 3] = 30  # out of the embedding's range, in the fourth batch (the program replays every batch now)
    with pytest.raises(ValueError, match="index 30, which is out of range"):
        model.fit(bad, labels, batch_size=32, epochs=1, verbose=0, shuffle=False)
    bad[100, 3] = -1
    with pytest.raises(ValueError, match="index -1, which is out of range"):
        model.fit(bad, labels, batch_size=32, epochs=1, verbose=0, shuffle=False)


def test_a_replayed_step_checks_integer_inputs_in_every_batch():
    tokens, labels = _tokens()
    model = _replayed_fit(_gru_int_input, tokens, labels)
    floats = tokens.astype("float32")
    floats[100, 0] = 2.5  # the fourth batch: replayed
    with pytest.raises(ValueError, match="expects integer values"):
        model.fit(floats, labels, batch_size=32, epochs=1, verbose=0, shuffle=False)


def test_a_trace_reads_a_configuration_array_of_the_step_anew():
    """An op's configuration argument made by an earlier op of the step (a recurrent layer's mask) is the
    program's slot, not a constant: replayed on another batch, the op sees that batch's array."""
    def step(x):
        with GradientTape():
            mask = kgraph.ops.not_equal(x, 0)
            return kgraph.ops.where(mask, x, -1)

    first, second = np.array([[0, 1], [2, 0]]), np.array([[3, 0], [0, 4]])
    with StepTrace([first], [], 2) as trace:
        out = step(first)
    program = trace.program(None, None, [out], [])
    assert trace.failed is None
    np.testing.assert_array_equal(program.run([second])[1][0], [[3, -1], [-1, 4]])


def _tagger():
    """A masked output: one tag per token, the padding's losses and accuracies left out."""
    x, h = _embedded()
    return kgraph.Model(x, layers.Dense(4, activation="softmax")(layers.LSTM(6, return_sequences=True)(h)))


def test_a_masked_output_replays_with_its_mask():
    tokens, _ = _tokens(seed=9)
    tags = np.random.default_rng(10).integers(0, 4, tokens.shape)
    model = _assert_same_training(_tagger, tokens, tags, exact=False, epochs=2, batch_size=32)
    # the metrics, outside the replayed part, read the mask the replayed output carries
    assert set(model.history.history) == {"loss", "accuracy"}


def test_a_masked_output_with_sample_weights_replays():
    tokens, _ = _tokens(seed=11)
    rng = np.random.default_rng(12)
    tags, weights = rng.integers(0, 4, tokens.shape), rng.uniform(0.5, 2.0, tokens.shape)  # one per token
    _assert_same_training(_tagger, tokens, tags, exact=False, epochs=2, batch_size=32, sample_weight=weights)


def test_evaluate_and_predict_of_a_masked_output_replay_as_written():
    tokens, _ = _tokens(seed=13)
    tags = np.random.default_rng(14).integers(0, 4, tokens.shape)
    results = {}
    for mode in ("auto", False):
        kgraph.utils.set_random_seed(0)
        model = _tagger()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=mode)
        evaluated = [model.evaluate(tokens, tags, batch_size=32, verbose=0) for _ in range(2)]
        results[mode] = evaluated, model.predict(tokens, batch_size=32, verbose=0)
    np.testing.assert_allclose(results["auto"][0], results[False][0], rtol=1e-6)
    np.testing.assert_allclose(results["auto"][1], results[False][1], rtol=1e-6, atol=1e-7)
