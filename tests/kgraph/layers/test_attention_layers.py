"""Attention and AdditiveAttention: values, masks, gradients, saving; Keras parity where Keras is installed.

Float32 comparisons at 1e-6 (one softmax and two small matmuls); gradient checks in float64.
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import kgraph
from kgraph import layers
from tests.gradcheck import check_gradients, check_variable_gradients

MAKERS = {
    "dot": lambda **kw: layers.Attention(**kw),
    "dot_scale": lambda **kw: layers.Attention(use_scale=True, **kw),
    "concat": lambda **kw: layers.Attention(score_mode="concat", use_scale=True, **kw),
    "additive": lambda **kw: layers.AdditiveAttention(**kw),
}


def _inputs(dtype="float32"):
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3, 4)).astype(dtype), rng.standard_normal((2, 5, 4)).astype(dtype)


def _softmax(s):
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_dot_attention_matches_its_definition_with_masks():
    q, v = _inputs("float64")
    qm = np.array([[1, 1, 0], [1, 0, 0]], bool)
    vm = np.array([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]], bool)
    out = layers.Attention(dtype="float64")([q, v], mask=[qm, vm])
    scores = np.where(vm[:, None, :], q @ v.transpose(0, 2, 1), q @ v.transpose(0, 2, 1) - 1e9)
    np.testing.assert_allclose(out, (_softmax(scores) @ v) * qm[..., None], atol=1e-12)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_gradients(kind):
    q, v = _inputs("float64")
    layer = MAKERS[kind](dtype="float64")
    vm = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], bool)
    check_gradients(lambda xs: layer([xs[0], xs[1]], mask=[None, vm]), [q, v])
    if layer.weights:
        check_variable_gradients(lambda: layer([q, v], use_causal_mask=True), layer.weights)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_masks_flow_from_embeddings_and_models_save(kind, tmp_path):
    tokens_q, tokens_v = kgraph.Input((None,), dtype="int32"), kgraph.Input((None,), dtype="int32")
    embed = layers.Embedding(10, 4, mask_zero=True)
    attended = MAKERS[kind]()([embed(tokens_q), embed(tokens_v)])
    assert attended._keras_mask is not None
    model = kgraph.Model([tokens_q, tokens_v], layers.GlobalAveragePooling1D()(attended))
    a = np.array([[1, 2, 0], [3, 0, 0]], "int32")
    b = np.array([[4, 5, 6, 0], [7, 8, 0, 0]], "int32")
    padded = model.predict([a, b], verbose=0)
    np.testing.assert_allclose(padded[1], model.predict([a[1:, :1], b[1:, :2]], verbose=0)[0], atol=1e-6)
    model.save(tmp_path / "m.pkl")
    np.testing.assert_array_equal(kgraph.load_model(tmp_path / "m.pkl").predict([a, b], verbose=0), padded)


KERAS_SIDE = """
import os, sys
os.environ["KERAS_BACKEND"] = "torch"
import numpy as np, keras
d = np.load(sys.argv[1])
make = {"dot": lambda: keras.layers.Attention(), "dot_scale": lambda: keras.layers.Attention(use_scale=True),
        "concat": lambda: keras.layers.Attention(score_mode="concat", use_scale=True),
        "additive": lambda: keras.layers.AdditiveAttention()}[sys.argv[2]]
layer = make()
layer([d["q"], d["v"]])
layer.set_weights([d[f"w{i}"] for i in range(int(d["count"]))])
out = layer([d["q"], d["v"]], mask=[d["qm"], d["vm"]])
causal = layer([d["q"], d["v"]], use_causal_mask=True)
np.savez(sys.argv[3], out=np.asarray(out.detach()), causal=np.asarray(causal.detach()))
"""


@pytest.mark.skipif(importlib.util.find_spec("keras") is None or importlib.util.find_spec("torch") is None,
                    reason="Keras 3 with its torch backend is not installed")
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_matches_keras(kind, tmp_path):
    q, v = _inputs()
    qm = np.array([[1, 1, 0], [1, 0, 0]], bool)
    vm = np.array([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]], bool)
    layer = MAKERS[kind]()
    out, causal = layer([q, v], mask=[qm, vm]), layer([q, v], use_causal_mask=True)
    weights = {f"w{i}": w for i, w in enumerate(layer.get_weights())}
    np.savez(tmp_path / "in.npz", q=q, v=v, qm=qm, vm=vm, count=len(weights), **weights)
    subprocess.run([sys.executable, "-c", KERAS_SIDE, str(tmp_path / "in.npz"), kind, str(tmp_path / "out.npz")],
                   check=True, timeout=600, env=dict(os.environ, KERAS_BACKEND="torch"))
    keras_side = np.load(tmp_path / "out.npz")
    np.testing.assert_allclose(out, keras_side["out"], atol=1e-6)
    np.testing.assert_allclose(causal, keras_side["causal"], atol=1e-6)
