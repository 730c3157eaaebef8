"""Attention (dot-product, Luong-style) and AdditiveAttention (Bahdanau-style), with Keras's masking rules.

Both take ``[query, value]`` or ``[query, value, key]`` (``key`` defaults to
``value``) and an optional ``mask=[query_mask, value_mask]``: value positions
where the mask is False get a score lowered by 1e9 before the softmax, and
output rows where the query mask is False are zero. The output keeps the
query's mask.
"""
import numpy as np

from kgraph import ops
from kgraph.layers.layer import Layer
from kgraph.random import generator

_PADDING_SCORE = 1.0e9


class BaseDenseAttention(Layer):
    """Scores from ``_scores(query, key)``, masked softmax over the value axis, weighted sum of the values."""

    def __init__(self, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"{type(self).__name__} layer '{self.name}' expects `dropout` in [0, 1]. "
                             f"Received: dropout={dropout!r}")
        self.dropout = float(dropout)
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None
        self.supports_masking = True

    def _check(self, inputs, mask=None):
        if not isinstance(inputs, (list, tuple)) or len(inputs) not in (2, 3):
            raise ValueError(f"{type(self).__name__} layer '{self.name}' expects a list [query, value] or "
                             f"[query, value, key]. Received: {inputs!r}")
        if mask is not None and (not isinstance(mask, (list, tuple)) or len(mask) not in (2, 3)):
            raise ValueError(f"{type(self).__name__} layer '{self.name}' expects `mask` as a list "
                             f"[query_mask, value_mask]. Received: mask={mask!r}")

    def build(self, input_shape):
        self._check(input_shape)
        self.built = True

    def call(self, inputs, mask=None, training=False, return_attention_scores=False, use_causal_mask=False):
        self._check(inputs, mask)
        query, value = inputs[0], inputs[1]
        key = inputs[2] if len(inputs) > 2 else value
        query_mask = mask[0] if mask else None
        value_mask = mask[1] if mask else None
        scores = self._scores(query, key)
        allowed = None
        if value_mask is not None:
            allowed = ops.expand_dims(ops.cast(value_mask, "bool"), -2)
        if use_causal_mask:
            rows, cols = scores.shape[-2], scores.shape[-1]
            causal = np.tril(np.ones((rows, cols), dtype=bool))[None]
            allowed = causal if allowed is None else ops.logical_and(allowed, causal)
        if allowed is not None:
            scores = ops.where(allowed, scores, ops.subtract(scores, _PADDING_SCORE))
        weights = ops.softmax(scores, axis=-1)
        attended = weights
        if training and self.dropout > 0.0:
            keep = (self._rng or generator()).random(np.shape(weights)) >= self.dropout
            scale = 0.0 if self.dropout >= 1.0 else 1.0 / (1.0 - self.dropout)
            attended = ops.multiply(weights, keep.astype(weights.dtype) * scale)
        output = ops.matmul(attended, value)
        if query_mask is not None:
            output = ops.where(ops.expand_dims(ops.cast(query_mask, "bool"), -1), output, 0.0)
        return (output, weights) if return_attention_scores else output

    def compute_mask(self, inputs, previous_mask=None):
        if previous_mask is None or not isinstance(previous_mask, (list, tuple)) or previous_mask[0] is None:
            return None
        return previous_mask[0]

    def compute_output_shape(self, input_shape):
        query, value = input_shape[0], input_shape[1]
        return tuple(query[:-1]) + (value[-1],)

    def get_config(self):
        return {**super().get_config(), "dropout": self.dropout, "seed": self.seed}


class Attention(BaseDenseAttention):
    """Dot-product attention: ``scores = query @ key^T`` (times a learned scalar with ``use_scale``);
    ``score_mode="concat"`` scores ``sum(tanh(query + key))`` instead."""

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"Attention layer '{self.name}' expects `score_mode` in ['dot', 'concat']. "
                             f"Received: score_mode={score_mode!r}")
        self.use_scale = bool(use_scale)
        self.score_mode = score_mode

    def build(self, input_shape):
        super().build(input_shape)
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale") if self.use_scale else None
        self.concat_score_weight = (self.add_weight(shape=(), initializer="ones", name="concat_score_weight")
                                    if self.score_mode == "concat" else None)
        self.built = True

    def _scores(self, query, key):
        if self.score_mode == "dot":
            scores = ops.matmul(query, ops.swapaxes(key, -2, -1))
            return scores if self.scale is None else ops.multiply(scores, self.scale)
        pairs = ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3))
        if self.scale is not None:
            pairs = ops.multiply(pairs, self.scale)
        return ops.multiply(self.concat_score_weight, ops.sum(ops.tanh(pairs), axis=-1))

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": self.score_mode}


class AdditiveAttention(BaseDenseAttention):
    """Additive attention: ``scores = sum(scale * tanh(query + key), axis=-1)``, ``scale`` learned per feature."""

    def __init__(self, use_scale=True, dropout=0.0, seed=None, **kwargs):
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.use_scale = bool(use_scale)

    def build(self, input_shape):
        super().build(input_shape)
        dim = input_shape[1][-1]
        self.scale = self.add_weight(shape=(dim,), initializer="glorot_uniform", name="scale") \
            if self.use_scale else None
        self.built = True

    def _scores(self, query, key):
        pairs = ops.tanh(ops.add(ops.expand_dims(query, -2), ops.expand_dims(key, -3)))
        if self.scale is not None:
            pairs = ops.multiply(pairs, self.scale)
        return ops.sum(pairs, axis=-1)

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale}
