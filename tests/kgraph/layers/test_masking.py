"""Masks with Keras 3's semantics: made by Embedding(mask_zero)/Masking, consumed by RNNs, attention, pooling.

Padded and unpadded runs are compared at float32 rounding (atol 1e-6); Keras parity (where Keras is
installed) at 1e-5, the float32 difference of two implementations of the same recurrence.
"""
import importlib.util
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from tests.gradcheck import check_gradients

SEQUENCES = [[3, 4, 5], [7, 8], [1, 2, 3, 4, 5, 6], [9]]
LABELS = np.array([0, 1, 1, 0])


def padded(length=6):
    out = np.zeros((len(SEQUENCES), length), "int32")
    for i, s in enumerate(SEQUENCES):
        out[i, :len(s)] = s
    return out


def build(K, kind):
    """The same small text model in kgraph or Keras (``K`` is the module)."""
    L = K.layers
    inp = K.Input((None,), dtype="int32")
    e = L.Embedding(20, 4, mask_zero=True)(inp)
    if kind == "bilstm":
        h = L.Bidirectional(L.LSTM(3))(e)
    elif kind == "bigru_sequences":
        h = L.GlobalAveragePooling1D()(L.Bidirectional(L.GRU(3, return_sequences=True))(e))
    elif kind == "rnn_backwards":
        h = L.GlobalAveragePooling1D()(L.SimpleRNN(3, return_sequences=True, go_backwards=True)(e))
    else:
        a = L.MultiHeadAttention(2, 3)(e, e)
        h = L.GlobalAveragePooling1D()(L.Add()([a, e]))
    return K.Model(inp, L.Dense(2, activation="softmax")(h))


KINDS = ["bilstm", "bigru_sequences", "rnn_backwards", "attention"]
# A go_backwards RNN returns its sequence in processing (reversed) order while the mask stays in input order,
# as in Keras, so a model pooling that sequence is not padding-invariant: it is checked against Keras only.
INVARIANT = ["bilstm", "bigru_sequences", "attention"]


def test_embedding_mask_is_metadata_of_the_symbolic_output():
    inp = kgraph.Input((None,), dtype="int32")
    e = layers.Embedding(10, 3, mask_zero=True)(inp)
    assert e._keras_mask is not None and e._keras_mask.shape == (None, None) and e._keras_mask.dtype == "bool"
    assert layers.LSTM(2, return_sequences=True)(e)._keras_mask is not None
    assert layers.LSTM(2)(e)._keras_mask is None
    assert layers.Embedding(10, 3)(inp)._keras_mask is None


@pytest.mark.parametrize("kind", INVARIANT)
def test_padded_sequences_give_the_unpadded_outputs(kind):
    kgraph.utils.set_random_seed(0)
    model = build(kgraph, kind)
    outputs = model.predict(padded(6), verbose=0)
    longer = model.predict(padded(9), verbose=0)
    for i, sequence in enumerate(SEQUENCES):
        alone = model.predict(np.array([sequence], "int32"), verbose=0)[0]
        np.testing.assert_allclose(outputs[i], alone, atol=1e-6)
        np.testing.assert_allclose(longer[i], alone, atol=1e-6)


@pytest.mark.parametrize("kind", INVARIANT)
def test_masked_training_learns_and_ignores_padding(kind):
    kgraph.utils.set_random_seed(1)
    model = build(kgraph, kind)
    model.compile(optimizer=kgraph.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
    history = model.fit(padded(6), LABELS, epochs=15, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    np.testing.assert_allclose(model.predict(padded(6), verbose=0), model.predict(padded(8), verbose=0), atol=1e-6)


@pytest.mark.parametrize("op", ["simple_rnn", "lstm", "gru"])
@pytest.mark.parametrize("go_backwards", [False, True])
@pytest.mark.parametrize("zero_output", [False, True])
def test_masked_recurrence_gradients(op, go_backwards, zero_output):
    gates = {"simple_rnn": 1, "lstm": 4, "gru": 3}[op]
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 0], [0, 1, 1, 1, 1]], bool)

    def fn(xs):
        outs = getattr(ops, op)(xs[0], xs[1], go_backwards=go_backwards, step_mask=mask,
                                zero_output_for_mask=zero_output)
        return ops.concatenate([ops.reshape(o, (3, -1)) for o in outs], axis=-1)

    check_gradients(fn, [rng.standard_normal((3, 5, 2 * gates)), 0.5 * rng.standard_normal((2, 2 * gates))])


def test_masking_layer_and_merge_masks():
    x = kgraph.Input((None, 2))
    masked = layers.Masking(mask_value=-1.0)(x)
    out = layers.GlobalAveragePooling1D()(layers.Dense(3, name="d")(masked))
    model = kgraph.Model(x, out)
    data = np.random.default_rng(2).standard_normal((2, 5, 2)).astype("float32")
    data[0, 3:] = -1.0
    expected = model.predict(data[:1, :3], verbose=0)
    np.testing.assert_allclose(model.predict(data, verbose=0)[0], expected[0], atol=1e-6)
    a, b = kgraph.Input((4,), dtype="int32"), kgraph.Input((4,), dtype="int32")
    ea, eb = layers.Embedding(5, 2, mask_zero=True)(a), layers.Embedding(5, 2, mask_zero=True)(b)
    assert layers.Add()([ea, eb])._keras_mask is not None
    assert layers.Concatenate(axis=1)([ea, eb])._keras_mask.shape == (None, 8)


def test_a_layer_without_masking_drops_the_mask_with_keras_warning():
    inp = kgraph.Input((4,), dtype="int32")
    e = layers.Embedding(5, 2, mask_zero=True)(inp)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        flat = layers.Flatten()(e)
    assert flat._keras_mask is None
    assert any("does not support masking" in str(w.message) for w in caught)


def test_op_nodes_do_not_propagate_masks():
    inp = kgraph.Input((4,), dtype="int32")
    e = layers.Embedding(5, 2, mask_zero=True)(inp)
    assert (e * 2.0)._keras_mask is None


KERAS_SIDE = """
import os, sys
os.environ["KERAS_BACKEND"] = "torch"
import numpy as np, keras
sys.path.insert(0, {root!r})
from tests.kgraph.layers.test_masking import build, padded, LABELS
kind = sys.argv[1]
weights = np.load(sys.argv[2])
model = build(keras, kind)
model.set_weights([weights[f"arr_{{i}}"] for i in range(len(weights.files))])
prediction = model.predict(padded(6), verbose=0)
model.compile(optimizer=keras.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy")
losses = [float(model.train_on_batch(padded(6), LABELS)) for _ in range(3)]
np.savez(sys.argv[3], prediction=prediction, losses=np.array(losses))
"""


@pytest.mark.skipif(importlib.util.find_spec("keras") is None or importlib.util.find_spec("torch") is None,
                    reason="Keras 3 with its torch backend is not installed")
@pytest.mark.parametrize("kind", KINDS)
def test_outputs_and_training_losses_match_keras(kind, tmp_path):
    kgraph.utils.set_random_seed(0)
    model = build(kgraph, kind)
    np.savez(tmp_path / "w.npz", *model.get_weights())
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    subprocess.run([sys.executable, "-c", KERAS_SIDE.format(root=root), kind, str(tmp_path / "w.npz"),
                    str(tmp_path / "keras.npz")], check=True, timeout=600)
    keras_side = np.load(tmp_path / "keras.npz")
    np.testing.assert_allclose(model.predict(padded(6), verbose=0), keras_side["prediction"], atol=1e-5)
    model.compile(optimizer=kgraph.optimizers.SGD(0.5), loss="sparse_categorical_crossentropy")
    losses = [float(model.train_on_batch(padded(6), LABELS)) for _ in range(3)]
    np.testing.assert_allclose(losses, keras_side["losses"], rtol=1e-5)
