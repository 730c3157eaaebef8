"""Embedding: maps integer indices to rows of a trainable ``(input_dim, output_dim)`` matrix; ReversibleEmbedding
also maps hidden states back to logits over those rows."""
import warnings

import numpy as np

from kgraph import backend, constraints, initializers, ops, regularizers
from kgraph.backend.autodiff import no_cotangent, primitive
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.graph.shape_inference import on_placeholders
from kgraph.layers.arguments import reject_unsupported, serialize_regularizer
from kgraph.layers.layer import Layer


def _positive_int(layer_name, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"Layer '{layer_name}': `{name}` must be a positive integer. "
                         f"Received: {name}={value!r} (of type {type(value).__name__}).")
    return int(value)


def _dtype_name(layer_name, dtype):
    try:
        return backend.standardize_dtype(dtype)
    except TypeError:
        raise ValueError(f"Layer '{layer_name}': `reverse_dtype` must be None or a dtype name such as 'float32'. "
                         f"Received: reverse_dtype={dtype!r}") from None


@primitive(num_inputs=1)
def _indices(inputs, input_dim, layer_name):
    """``inputs`` as integer indices, checked to lie in ``[0, input_dim)`` (integral floats cast to int64). One op
    without a gradient, so that a replayed training step checks every batch's indices too."""
    indices = np.asarray(inputs)
    if indices.dtype.kind == "f":
        if indices.size and not np.all(np.isfinite(indices)):
            raise ValueError(f"Layer '{layer_name}' received non-finite indices; expected integers in "
                             f"[0, {input_dim}).")
        indices = indices.astype(np.int64)
    elif indices.dtype.kind not in "iub":
        raise TypeError(f"Layer '{layer_name}' expects integer or float indices. "
                        f"Received: inputs of dtype {indices.dtype}")
    if indices.size and on_placeholders():
        # Output-shape inference runs on values that mean nothing: any index of the right shape will do.
        return np.clip(indices, 0, input_dim - 1), no_cotangent
    if indices.size:
        low, high = indices.min(), indices.max()
        if low < 0 or high >= input_dim:
            bad = int(low if low < 0 else high)
            raise ValueError(f"Layer '{layer_name}' received index {bad}, which is out of range: expected "
                             f"indices in [0, input_dim) with input_dim={input_dim}.")
    return indices, no_cotangent


class Embedding(Layer):
    """Looks up ``embeddings[indices]``; indices may be integers or integral floats in ``[0, input_dim)``."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, weights=None, lora_rank=None, lora_alpha=None,
                 quantization_config=None, **kwargs):
        name = kwargs.get("name") or "embedding"
        self.input_dim = _positive_int(name, "input_dim", input_dim)
        self.output_dim = _positive_int(name, "output_dim", output_dim)
        if kwargs.pop("input_length", None) is not None:
            warnings.warn("Argument `input_length` is deprecated. Just remove it.", stacklevel=2)
        super().__init__(**kwargs)
        reject_unsupported(self, lora_rank=lora_rank, lora_alpha=lora_alpha, quantization_config=quantization_config)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        # Keras's "uniform" is RandomUniform(-0.05, 0.05).
        self.embeddings_initializer = (initializers.RandomUniform() if embeddings_initializer == "uniform"
                                       else initializers.get(embeddings_initializer))
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)
        self.embeddings_constraint = constraints.get(embeddings_constraint)
        if weights is not None:
            self._set_initial_weights(weights)

    def _set_initial_weights(self, weights):
        """Keras's ``weights`` argument: the initial embeddings matrix (or a list holding it), set when built."""
        self.build()
        self.set_weights(weights if isinstance(weights, list) and len(weights) == 1 else [weights])

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint, name="embeddings")
        self.built = True

    def call(self, inputs):
        return ops.take(self.embeddings, _indices(inputs, self.input_dim, self.name), axis=0)

    def compute_mask(self, inputs, previous_mask=None):
        """With ``mask_zero``, index 0 is padding: the mask is ``inputs != 0``."""
        return ops.not_equal(inputs, 0) if self.mask_zero else None

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "input_dim": self.input_dim, "output_dim": self.output_dim,
            "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
            "embeddings_regularizer": serialize_regularizer(self.embeddings_regularizer),
            "embeddings_constraint": constraints.serialize(self.embeddings_constraint),
            "mask_zero": self.mask_zero,
            "quantization_config": None,  # quantized layers are refused at construction
        })
        return config


class ReversibleEmbedding(Embedding):
    """An Embedding that also projects hidden states back to vocabulary logits with ``call(x, reverse=True)``.

    Forward, it is ``Embedding``. Reversed, ``x @ embeddings.T`` (weights tied,
    the default) or ``x @ reverse_embeddings`` (``tie_weights=False``: a second
    ``(output_dim, input_dim)`` weight created after ``embeddings``), computed in
    ``reverse_dtype`` when given, then ``tanh(logits / cap) * cap`` with
    ``logit_soft_cap=cap``.
    """

    def __init__(self, input_dim, output_dim, tie_weights=True, embeddings_initializer="uniform",
                 embeddings_regularizer=None, embeddings_constraint=None, mask_zero=False, reverse_dtype=None,
                 logit_soft_cap=None, weights=None, **kwargs):
        super().__init__(input_dim, output_dim, embeddings_initializer=embeddings_initializer,
                         embeddings_regularizer=embeddings_regularizer, embeddings_constraint=embeddings_constraint,
                         mask_zero=mask_zero, **kwargs)
        if not isinstance(tie_weights, (bool, np.bool_)):
            raise ValueError(f"Layer '{self.name}': `tie_weights` must be a boolean. "
                             f"Received: tie_weights={tie_weights!r}")
        if logit_soft_cap is not None and (isinstance(logit_soft_cap, bool) or
                                           not isinstance(logit_soft_cap, (int, float, np.number)) or
                                           not logit_soft_cap > 0):
            raise ValueError(f"Layer '{self.name}': `logit_soft_cap` must be None or a positive number. "
                             f"Received: logit_soft_cap={logit_soft_cap!r}")
        self.tie_weights = bool(tie_weights)
        self.reverse_dtype = None if reverse_dtype is None else _dtype_name(self.name, reverse_dtype)
        self.logit_soft_cap = logit_soft_cap
        # compute_mask has no `reverse` argument: the direction of the current call, so that logits carry no mask.
        self._reverse_call = False
        if weights is not None:  # set last: building needs tie_weights
            self._set_initial_weights(weights)

    def build(self, input_shape=None):
        super().build(input_shape)
        if not self.tie_weights:
            self.reverse_embeddings = self.add_weight(shape=(self.output_dim, self.input_dim),
                                                      initializer=self.embeddings_initializer,
                                                      name="reverse_embeddings")

    def __call__(self, inputs, reverse=False, **kwargs):
        self._reverse_call = bool(reverse)
        if reverse:
            kwargs["reverse"] = True
        return super().__call__(inputs, **kwargs)

    def call(self, inputs, reverse=False):
        if not reverse:
            if isinstance(inputs, KerasTensor):  # traced for export: the index checks need values
                indices = inputs if "int" in str(inputs.dtype) else ops.cast(inputs, "int64")
                return ops.take(self.embeddings, indices, axis=0)
            return super().call(inputs)
        kernel = ops.transpose(self.embeddings) if self.tie_weights else self.reverse_embeddings
        if self.reverse_dtype is not None:
            inputs, kernel = ops.cast(inputs, self.reverse_dtype), ops.cast(kernel, self.reverse_dtype)
        logits = ops.matmul(inputs, kernel)
        if self.logit_soft_cap is not None:
            logits = ops.multiply(ops.tanh(ops.divide(logits, self.logit_soft_cap)), self.logit_soft_cap)
        return logits

    def compute_mask(self, inputs, previous_mask=None):
        """Forward calls with ``mask_zero`` mask index 0; logits of a reverse call carry no mask."""
        return None if self._reverse_call else super().compute_mask(inputs, previous_mask)

    def compute_output_shape(self, input_shape, reverse=False):
        if reverse:
            return tuple(input_shape)[:-1] + (self.input_dim,)
        return super().compute_output_shape(input_shape)

    def compute_output_spec(self, inputs, reverse=False):
        dtype = (self.reverse_dtype or self.compute_dtype) if reverse else self.compute_dtype
        return KerasTensor(self.compute_output_shape(inputs.shape, reverse), dtype=dtype, name=self.name)

    def get_config(self):
        config = super().get_config()
        config.update({"tie_weights": self.tie_weights, "reverse_dtype": self.reverse_dtype,
                       "logit_soft_cap": self.logit_soft_cap})
        return config
