"""MultiHeadAttention with Keras's arguments, masking rules and weight layout."""
import math

import numpy as np

from kgraph import constraints, initializers, ops, regularizers
from kgraph.backend.autodiff import no_cotangent, primitive
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.arguments import reject_unsupported, serialize_regularizer
from kgraph.layers.layer import Layer
from kgraph.random import generator


def large_negative(dtype):
    """The score Keras gives masked positions before the softmax."""
    return -3e4 if np.dtype(dtype) == np.float16 else -1e9


def causal_mask(query_length, value_length):
    """``(query_length, value_length)`` booleans: query ``i`` sees values ``j <= i``."""
    return np.arange(query_length)[:, None] >= np.arange(value_length)[None, :]


def _with_sequence_masks(attention_mask, query_mask, value_mask, key_mask):
    """Keras's attention mask from the query/value/key padding masks: ``(B, T, S)``, and-ed with the given one."""
    auto = None
    if query_mask is not None:
        auto = np.asarray(query_mask, dtype=bool)[:, :, None]
    for mask in (value_mask, key_mask):
        if mask is not None:
            expanded = np.asarray(mask, dtype=bool)[:, None, :]
            auto = expanded if auto is None else auto & expanded
    if auto is None:
        return attention_mask
    return auto if attention_mask is None else np.asarray(attention_mask, dtype=bool) & auto


@primitive(num_inputs=4)
def _head_mask(attention_mask, query_mask, value_mask, key_mask, expected, use_causal_mask, name):
    """The boolean mask of every head's scores, ``(B, 1, T, S)`` or broadcastable to it: ``attention_mask`` and-ed
    with the padding masks (and the causal mask); ``expected`` is ``(B, T, S)``. One op without a gradient, so that
    a replayed step builds each batch's mask as the step as written does."""
    mask = np.asarray(_with_sequence_masks(attention_mask, query_mask, value_mask, key_mask)).astype(bool)
    shape = mask.shape
    mask = mask.reshape((1,) * (3 - mask.ndim) + mask.shape) if mask.ndim <= 3 else mask
    if mask.ndim > 3 or any(m not in (1, e) for m, e in zip(mask.shape, expected)):
        raise ValueError(f"MultiHeadAttention layer '{name}' expects `attention_mask` of shape {tuple(expected)} "
                         f"(or broadcastable to it). Received: shape={shape}")
    mask = mask[:, None]  # (B, T, S) -> (B, 1, T, S): one mask for every head
    if use_causal_mask:
        mask = mask & causal_mask(expected[1], expected[2])
    return mask, no_cotangent


class MultiHeadAttention(Layer):
    """Multi-head scaled dot-product attention, ``mha(query, value, key=None, ...)``.

    Weights, in Keras's order: query, key and value kernels ``(dim,
    num_heads, key_dim or value_dim)`` each followed by its bias ``(num_heads,
    key_dim or value_dim)``, then the output kernel ``(num_heads, value_dim,
    *output_shape)`` and bias ``output_shape``. Masked positions (False in
    ``attention_mask`` or above the diagonal with ``use_causal_mask``) score
    -1e9 before the softmax and get probability 0 after it.

    As in Keras, ``activity_regularizer`` penalizes the four projections (the
    query, key and value heads and the output), each divided by the batch
    size; ``flash_attention`` does not change the values.
    """
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    _masking = True  # the output keeps the query's mask

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, output_shape=None,
                 attention_axes=None, sliding_window=None, flash_attention=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, use_gate=False, seed=None, **kwargs):
        super().__init__(**kwargs)
        # The ONNX converter of this layer (export) implements neither the band mask nor the gate.
        reject_unsupported(self, sliding_window=sliding_window)
        reject_unsupported(self, allowed=(False,), use_gate=use_gate)
        if flash_attention and dropout > 0.0:
            raise ValueError("Dropout is not supported when flash attention is enabled. "
                             "Please set dropout to 0.0 to use flash attention.")
        for argument, value in (("num_heads", num_heads), ("key_dim", key_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"MultiHeadAttention layer '{self.name}' expects `{argument}` to be a positive "
                                 f"integer. Received: {argument}={value!r}")
        if attention_axes not in (None, 1, (1,), [1]):
            raise ValueError(f"MultiHeadAttention layer '{self.name}' supports only attention over the time axis "
                             f"of (batch, time, features) inputs; expected attention_axes=None. "
                             f"Received: attention_axes={attention_axes!r}")
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"MultiHeadAttention layer '{self.name}' expects `dropout` between 0 and 1. "
                             f"Received: dropout={dropout!r}")
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim is not None else self.key_dim
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        if output_shape is not None and isinstance(output_shape, (int, np.integer)):
            output_shape = (int(output_shape),)
        self._output_shape = tuple(int(d) for d in output_shape) if output_shape is not None else None
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer) if kernel_regularizer else None
        self.bias_regularizer = regularizers.get(bias_regularizer) if bias_regularizer else None
        # Keras gives it to the projection sublayers, not to the layer's own output.
        self._activity_regularizer = regularizers.get(activity_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self._flash_attention = bool(flash_attention)
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None

    def __call__(self, query, value=None, key=None, **kwargs):
        if value is None:
            raise ValueError(f"MultiHeadAttention layer '{self.name}' expects `value` as its second argument "
                             "(call it as `mha(query, value)` for self-attention: `mha(x, x)`). Received none.")
        # key travels positionally so that build() sees its shape.
        args = (query, value) if key is None else (query, value, key)
        return super().__call__(*args, **kwargs)

    # ----- weights -------------------------------------------------------------
    def _check_rank(self, shape, argument):
        if len(shape) != 3 or shape[-1] is None:
            raise ValueError(f"MultiHeadAttention layer '{self.name}' expects `{argument}` of shape (batch, time, "
                             f"features) with known features. Received: {argument}.shape={tuple(shape)}")

    def _projection(self, name, input_dim, depth):
        kernel = self.add_weight(shape=(input_dim, self.num_heads, depth), initializer=self.kernel_initializer,
                                 regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                 name=f"{name}_kernel")
        bias = self.add_weight(shape=(self.num_heads, depth), initializer=self.bias_initializer,
                               regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                               name=f"{name}_bias") if self.use_bias else None
        return kernel, bias

    def build(self, query_shape, value_shape, key_shape=None):
        self._input_shapes = {"query_shape": query_shape, "value_shape": value_shape, "key_shape": key_shape}
        key_shape = value_shape if key_shape is None else key_shape
        for shape, argument in ((query_shape, "query"), (value_shape, "value"), (key_shape, "key")):
            self._check_rank(shape, argument)
        self.query_kernel, self.query_bias = self._projection("query", query_shape[-1], self.key_dim)
        self.key_kernel, self.key_bias = self._projection("key", key_shape[-1], self.key_dim)
        self.value_kernel, self.value_bias = self._projection("value", value_shape[-1], self.value_dim)
        out_shape = self._output_shape or (int(query_shape[-1]),)
        self.output_kernel = self.add_weight(
            shape=(self.num_heads, self.value_dim) + out_shape, initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer, constraint=self.kernel_constraint, name="attention_output_kernel")
        self.output_bias = self.add_weight(shape=out_shape, initializer=self.bias_initializer,
                                           regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                           name="attention_output_bias") if self.use_bias else None
        self.built = True

    def get_build_config(self):
        if not self.built:
            return None
        return {k: None if v is None else list(v) for k, v in self._input_shapes.items()}

    def build_from_config(self, config):
        if config and not self.built:
            shapes = {k: None if v is None else tuple(v) for k, v in config.items()}
            self.build(shapes["query_shape"], shapes["value_shape"], shapes.get("key_shape"))
            self.built = True

    @property
    def output_dims(self):
        """The trailing output dimensions (``output_shape``, or the query's feature size)."""
        return tuple(self.output_kernel.shape[2:])

    # ----- computing -----------------------------------------------------------
    def _heads(self, x, kernel, bias):
        """Project ``(B, T, dim)`` to ``(B, heads, T, depth)`` with one matmul."""
        dim, heads, depth = kernel.shape
        flat_bias = None if bias is None else ops.reshape(bias, (heads * depth,))
        y = ops.reshape(ops.dense(x, ops.reshape(kernel, (dim, heads * depth)), flat_bias),
                        (x.shape[0], x.shape[1], heads, depth))
        self._add_projection_loss(y)
        return ops.transpose(y, (0, 2, 1, 3))

    def _add_projection_loss(self, projection):
        """Keras's activity penalty of one projection ``(B, T, ...)``: ``activity_regularizer(p) / B``."""
        if self._activity_regularizer is not None:
            loss = self._activity_regularizer(projection)
            self.add_loss(ops.divide_no_nan(loss, np.asarray(projection.shape[0], dtype=np.asarray(loss).dtype)))

    def _mask(self, masks, use_causal_mask, batch, query_length, value_length):
        """A boolean mask broadcastable to ``(B, heads, T, S)`` from ``masks`` (the attention, query, value and key
        masks), or None."""
        if all(m is None for m in masks):
            return causal_mask(query_length, value_length) if use_causal_mask else None
        return _head_mask(*masks, (batch, query_length, value_length), use_causal_mask, self.name)

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None, attention_mask=None,
             return_attention_scores=False, training=None, use_causal_mask=False):
        if self._flash_attention and return_attention_scores:
            raise ValueError("Returning attention scores is not supported when flash attention is enabled. "
                             "Please disable flash attention to access attention scores.")
        value = self._convert_input(value)
        key = value if key is None else self._convert_input(key)
        for x, argument in ((query, "query"), (value, "value"), (key, "key")):
            self._check_rank(np.shape(x), argument)
        q = self._heads(query, self.query_kernel, self.query_bias)
        q = ops.multiply(q, np.asarray(1.0 / math.sqrt(self.key_dim), dtype=q.dtype))
        k = self._heads(key, self.key_kernel, self.key_bias)
        v = self._heads(value, self.value_kernel, self.value_bias)
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
        mask = self._mask((attention_mask, query_mask, value_mask, key_mask), use_causal_mask, query.shape[0],
                          query.shape[1], value.shape[1])
        if mask is not None:
            scores = ops.where(mask, scores, large_negative(scores.dtype))
        probabilities = ops.softmax(scores, axis=-1)
        if mask is not None and (self.dropout > 0.0 or return_attention_scores):
            # As Keras 3.15: its masked softmax (taken with dropout or when the scores are returned) zeroes a fully
            # masked row; its fused dot-product attention (otherwise) leaves it uniform over the keys.
            probabilities = ops.where(mask, probabilities, 0.0)
        attended = probabilities
        if training and self.dropout > 0.0:
            keep = (self._rng or generator()).random(probabilities.shape) >= self.dropout
            scale = 0.0 if self.dropout >= 1.0 else 1.0 / (1.0 - self.dropout)
            attended = ops.multiply(probabilities, keep.astype(probabilities.dtype) * scale)
        context = ops.transpose(ops.matmul(attended, v), (0, 2, 1, 3))
        batch, steps = context.shape[0], context.shape[1]
        context = ops.reshape(context, (batch, steps, self.num_heads * self.value_dim))
        out_size = int(np.prod(self.output_dims))
        flat_bias = None if self.output_bias is None else ops.reshape(self.output_bias, (out_size,))
        output = ops.dense(context, ops.reshape(self.output_kernel, (self.num_heads * self.value_dim, out_size)),
                           flat_bias)
        output = ops.reshape(output, (batch, steps) + self.output_dims)
        self._add_projection_loss(output)
        if return_attention_scores:
            return output, probabilities
        return output

    def compute_output_shape(self, query_shape, value_shape=None, key_shape=None):
        return tuple(query_shape[:-1]) + self.output_dims

    def compute_output_spec(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
                            attention_mask=None, return_attention_scores=False, training=None, use_causal_mask=False):
        output = KerasTensor(self.compute_output_shape(query.shape), dtype=self.compute_dtype, name=self.name)
        if not return_attention_scores:
            return output
        scores = KerasTensor((query.shape[0], self.num_heads, query.shape[1], value.shape[1]),
                             dtype=self.compute_dtype, name=f"{self.name}_scores")
        return output, scores

    def get_config(self):
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads, "key_dim": self.key_dim, "value_dim": self.value_dim,
            "dropout": self.dropout, "use_bias": self.use_bias,
            "output_shape": list(self._output_shape) if self._output_shape else None, "attention_axes": None,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer) if self.kernel_regularizer
            else None,
            "bias_regularizer": regularizers.serialize(self.bias_regularizer) if self.bias_regularizer else None,
            "activity_regularizer": serialize_regularizer(self._activity_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "seed": self.seed,
        })
        return config
