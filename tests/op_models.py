"""Functional models written with tensor operators and ``kgraph.ops`` (Keras 3 functional-guide style).

Each builder returns ``(model, reference)``: the model, and a function computing
the same outputs from its weights with NumPy (or an equivalent model built only
from layers), so tests can check predictions, training, saving and export.
"""
import numpy as np

import kgraph
from kgraph import layers, ops


def _dense(model, name, x):
    kernel, bias = model.get_layer(name).get_weights()
    return x @ kernel + bias


def residual():
    """``h + x`` (a residual connection) between Dense layers."""
    x = kgraph.Input(shape=(6,), name="x")
    h = layers.Dense(6, activation="tanh", name="d1")(x)
    y = layers.Dense(3, name="head")(h + x)
    model = kgraph.Model(x, y, name="residual")
    return model, lambda a: _dense(model, "head", np.tanh(_dense(model, "d1", a)) + a)


def concat_slices():
    """``ops.concatenate`` of slices, scalar arithmetic and a unary minus."""
    x = kgraph.Input(shape=(6,), name="x")
    h = layers.Dense(8, name="d1")(x)
    parts = ops.concatenate([h[:, :3] * 0.5 + 1.0, -h[:, 5:], 2.0 - x[..., ::2]], axis=-1)
    y = layers.Dense(2, name="head")(parts)
    model = kgraph.Model(x, y, name="concat_slices")

    def reference(a):
        ha = _dense(model, "d1", a)
        return _dense(model, "head", np.concatenate([ha[:, :3] * 0.5 + 1.0, -ha[:, 5:], 2.0 - a[..., ::2]], -1))
    return model, reference


def reductions():
    """``ops.mean`` and ``ops.sum`` over axes of a sequence, ``x / y`` and ``ops.sqrt``."""
    x = kgraph.Input(shape=(5, 4), name="seq")
    h = layers.Dense(4, activation="sigmoid", name="d1")(x)
    mean = ops.mean(h, axis=1)
    total = ops.sum(h * h, axis=-1, keepdims=True)
    scaled = ops.sqrt(total + 1.0) / 3.0
    y = layers.Dense(2, name="head")(ops.concatenate([mean, ops.squeeze(ops.max(scaled, axis=1), -1)[:, None]], -1))
    model = kgraph.Model(x, y, name="reductions")

    def reference(a):
        ha = 1 / (1 + np.exp(-_dense(model, "d1", a)))
        sc = np.sqrt(np.sum(ha * ha, -1, keepdims=True) + 1.0) / 3.0
        return _dense(model, "head", np.concatenate([ha.mean(1), sc.max(1)], -1))
    return model, reference


def softmax_axis():
    """``ops.softmax`` over the sequence axis, weighting a sum (attention pooling)."""
    x = kgraph.Input(shape=(5, 4), name="seq")
    scores = layers.Dense(1, name="score")(x)
    weights = ops.softmax(scores, axis=1)
    pooled = ops.sum(weights * x, axis=1)
    y = layers.Dense(3, activation="softmax", name="head")(pooled)
    model = kgraph.Model(x, y, name="softmax_axis")

    def reference(a):
        s = _dense(model, "score", a)
        w = np.exp(s - s.max(1, keepdims=True))
        w /= w.sum(1, keepdims=True)
        logits = _dense(model, "head", (w * a).sum(1))
        e = np.exp(logits - logits.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    return model, reference


def add_as_layers():
    """The residual model built from layers only (``layers.Add``), for an equal-output check."""
    x = kgraph.Input(shape=(6,), name="x")
    h = layers.Dense(6, activation="tanh", name="d1")(x)
    y = layers.Dense(3, name="head")(layers.Add()([h, x]))
    return kgraph.Model(x, y, name="residual_layers")


BUILDERS = [residual, concat_slices, reductions, softmax_axis]


def inputs_for(model, batch, seed=0):
    """Seeded float32 inputs for every input of ``model`` at ``batch`` rows."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch,) + t.shape[1:]).astype("float32") for t in model.inputs]
