"""GroupQueryAttention: attention whose key/value heads are shared by groups of query heads (Keras's weights)."""
import math

import numpy as np

from kgraph import constraints, initializers, ops, regularizers
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.arguments import serialize_regularizer
from kgraph.layers.attention.multi_head_attention import causal_mask, large_negative
from kgraph.layers.core.einsum_dense import EinsumDense
from kgraph.layers.layer import Layer
from kgraph.layers.regularization.dropout import Dropout
from kgraph.utils import naming


class GroupQueryAttention(Layer):
    """Scaled dot-product attention with ``num_query_heads`` query heads and ``num_key_value_heads`` key/value heads.

    Each key/value head serves ``num_query_heads // num_key_value_heads``
    consecutive query heads. Weights, in Keras's order: the ``query``, ``key``,
    (``gate`` with ``use_gate``), ``value`` and ``attention_output`` EinsumDense
    kernels and biases. ``sliding_window=w`` lets position ``i`` attend to
    positions ``j`` with ``|i - j| < w``. Masked positions get probability 0,
    and a query that may see no position gets all-zero probabilities (as on
    Keras's path that returns the scores). ``flash_attention`` is accepted
    for Keras compatibility: the values do not depend on it. As in Keras,
    ``activity_regularizer`` penalizes each projection and the layer's outputs.
    """
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    _masking = True  # the output keeps the query's mask

    def __init__(self, head_dim, num_query_heads, num_key_value_heads, dropout=0.0, use_bias=True,
                 sliding_window=None, flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None, **kwargs):
        if not kwargs.get("name"):  # Keras's class is GroupedQueryAttention: its layers are named after that
            kwargs["name"] = naming.uniquify("grouped_query_attention")
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        for argument, value in (("head_dim", head_dim), ("num_query_heads", num_query_heads),
                                ("num_key_value_heads", num_key_value_heads)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"GroupQueryAttention layer '{self.name}' expects `{argument}` to be a positive "
                                 f"integer. Received: {argument}={value!r}")
        if num_query_heads % num_key_value_heads:
            raise ValueError("`num_query_heads` must be divisible by `num_key_value_heads`. Received: "
                             f"num_query_heads={num_query_heads}, num_key_value_heads={num_key_value_heads}")
        if sliding_window is not None and (not isinstance(sliding_window, int) or sliding_window <= 0):
            raise ValueError(f"`sliding_window` must be `None` or a positive integer. "
                             f"Received: sliding_window={sliding_window}")
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"GroupQueryAttention layer '{self.name}' expects `dropout` between 0 and 1. "
                             f"Received: dropout={dropout!r}")
        if flash_attention and dropout > 0.0:
            raise ValueError("Dropout is not supported when flash attention is enabled. "
                             "Please set dropout to 0.0 to use flash attention.")
        self.head_dim, self.num_query_heads = int(head_dim), int(num_query_heads)
        self.num_key_value_heads = int(num_key_value_heads)
        self.num_repeats = self.num_query_heads // self.num_key_value_heads
        self.dropout, self.use_bias, self.use_gate = float(dropout), bool(use_bias), bool(use_gate)
        self.sliding_window, self.seed = sliding_window, seed
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self._flash_attention = bool(flash_attention)

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None:
            raise ValueError(f"GroupQueryAttention layer '{self.name}' expects `value` as its second argument "
                             "(call it as `gqa(query, value)` for self-attention: `gqa(x, x)`). Received none.")
        # key travels positionally so that build() sees its shape.
        args = (query, value) if key is None else (query, value, key)
        return super().__call__(*args, **kwargs)

    def _dense(self, equation, heads, bias_axes, name, input_shape, activation=None):
        """A projection sublayer with its own copies of the initializers, the regularizers and constraints, built."""
        layer = EinsumDense(
            equation, output_shape=(None,) + heads, bias_axes=bias_axes if self.use_bias else None,
            activation=activation, name=name,
            kernel_initializer=initializers.get(initializers.serialize(self.kernel_initializer)),
            bias_initializer=initializers.get(initializers.serialize(self.bias_initializer)),
            kernel_regularizer=self.kernel_regularizer, bias_regularizer=self.bias_regularizer,
            activity_regularizer=self.activity_regularizer, kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint, dtype=self.dtype)
        layer.build(input_shape)
        return layer

    def build(self, query_shape, value_shape, key_shape=None):
        self._input_shapes = {"query_shape": query_shape, "value_shape": value_shape, "key_shape": key_shape}
        key_shape = value_shape if key_shape is None else key_shape
        for shape, argument in ((query_shape, "query"), (value_shape, "value"), (key_shape, "key")):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(f"GroupQueryAttention layer '{self.name}' expects `{argument}` of shape (batch, "
                                 f"time, features) with known features. Received: {argument}.shape={tuple(shape)}")
        query_heads, kv_heads = (self.num_query_heads, self.head_dim), (self.num_key_value_heads, self.head_dim)
        self.query_dense = self._dense("bqm,muh->bquh", query_heads, "uh", "query", query_shape)
        self.key_dense = self._dense("bkm,mvh->bkvh", kv_heads, "vh", "key", key_shape)
        if self.use_gate:
            self.gate_dense = self._dense("bqm,muh->bquh", query_heads, "uh", "gate", query_shape, "sigmoid")
        self.value_dense = self._dense("bkm,mvh->bkvh", kv_heads, "vh", "value", value_shape)
        self.output_dense = self._dense("bquh,uhm->bqm", (int(query_shape[-1]),), "m", "attention_output",
                                         (None, None) + query_heads)
        self._dropout_layer = Dropout(self.dropout, seed=self.seed, dtype=self.dtype)
        self.built = True

    def get_build_config(self):
        if not self.built:
            return None
        return {k: None if v is None else list(v) for k, v in self._input_shapes.items()}

    def build_from_config(self, config):
        if config and not self.built:
            shapes = {k: None if v is None else tuple(v) for k, v in config.items()}
            self.build(shapes["query_shape"], shapes["value_shape"], shapes.get("key_shape"))

    def _attention_mask(self, query, value, query_mask, value_mask, key_mask, attention_mask, use_causal_mask):
        """Keras's ``(B or 1, T, S)`` boolean mask from every source given, or None."""
        masks = []
        if query_mask is not None:
            masks.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
        for mask in (value_mask, key_mask):
            if mask is not None:
                masks.append(ops.expand_dims(ops.cast(mask, "bool"), -2))
        steps = (query.shape[1], value.shape[1])
        if use_causal_mask:
            masks.append(causal_mask(*steps)[None])
        if self.sliding_window is not None:
            distance = np.abs(np.arange(steps[0])[:, None] - np.arange(steps[1])[None, :])
            masks.append((distance < self.sliding_window)[None])
        if attention_mask is not None:
            masks.insert(0, ops.cast(attention_mask, "bool"))
        if not masks:
            return None
        combined = masks[0]
        for mask in masks[1:]:
            combined = ops.logical_and(combined, mask)
        return combined

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        if self._flash_attention and return_attention_scores:
            raise ValueError("Returning attention scores is not supported when flash attention is enabled. "
                             "Please disable flash attention to access attention scores.")
        key = value if key is None else key
        mask = self._attention_mask(query, value, query_mask, value_mask, key_mask, attention_mask, use_causal_mask)
        gate = self.gate_dense(query) if self.use_gate else None
        # (B, T, heads, depth) -> (B, heads, T, depth); key and value heads repeated for their query heads.
        q = ops.transpose(self.query_dense(query), (0, 2, 1, 3))
        k = ops.transpose(ops.repeat(self.key_dense(key), self.num_repeats, axis=2), (0, 2, 3, 1))
        v = ops.transpose(ops.repeat(self.value_dense(value), self.num_repeats, axis=2), (0, 2, 1, 3))
        q = ops.multiply(q, np.asarray(1.0 / math.sqrt(self.head_dim), dtype=q.dtype))
        scores = ops.matmul(q, k)
        if mask is not None:
            # (B, T, S) -> (B, 1, T, S): one mask for every head; masked rows that are all masked give zeros.
            mask = ops.expand_dims(mask, 1)
            scores = ops.where(mask, scores, large_negative(scores.dtype))
        probabilities = ops.softmax(scores, axis=-1)
        if mask is not None:
            probabilities = ops.where(mask, probabilities, 0.0)
        attended = self._dropout_layer(probabilities, training=training) if self.dropout > 0.0 else probabilities
        output = ops.transpose(ops.matmul(attended, v), (0, 2, 1, 3))
        if gate is not None:
            output = ops.multiply(output, gate)
        output = self.output_dense(output)
        return (output, probabilities) if return_attention_scores else output

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        return tuple(query_shape)

    def compute_output_spec(self, query, value, key=None, attention_mask=None, return_attention_scores=False,
                            training=None, use_causal_mask=False, **masks):
        output = KerasTensor(tuple(query.shape), dtype=self.compute_dtype, name=self.name)
        if not return_attention_scores:
            return output
        scores = KerasTensor((query.shape[0], self.num_query_heads, query.shape[1], value.shape[1]),
                             dtype=self.compute_dtype, name=f"{self.name}_scores")
        return output, scores

    def get_config(self):
        config = super().get_config()
        config.update({
            "head_dim": self.head_dim, "num_query_heads": self.num_query_heads,
            "num_key_value_heads": self.num_key_value_heads, "use_bias": self.use_bias, "use_gate": self.use_gate,
            "sliding_window": self.sliding_window, "dropout": self.dropout,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint), "seed": self.seed,
        })
        return config
