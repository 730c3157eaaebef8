"""Embedding: maps integer indices to rows of a trainable ``(input_dim, output_dim)`` matrix."""
import numpy as np

from kgraph import initializers, ops, regularizers
from kgraph.layer import Layer
from kgraph.layers.convolutional import reject_unsupported, serialize_regularizer


def _positive_int(layer_name, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"Layer '{layer_name}': `{name}` must be a positive integer. "
                         f"Received: {name}={value!r} (of type {type(value).__name__}).")
    return int(value)


class Embedding(Layer):
    """Looks up ``embeddings[indices]``; indices may be integers or integral floats in ``[0, input_dim)``."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, **kwargs):
        name = kwargs.get("name") or "embedding"
        self.input_dim = _positive_int(name, "input_dim", input_dim)
        self.output_dim = _positive_int(name, "output_dim", output_dim)
        super().__init__(**kwargs)
        reject_unsupported(self, embeddings_constraint=embeddings_constraint)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        # Keras's "uniform" is RandomUniform(-0.05, 0.05).
        self.embeddings_initializer = (initializers.RandomUniform() if embeddings_initializer == "uniform"
                                       else initializers.get(embeddings_initializer))
        self.embeddings_regularizer = regularizers.get(embeddings_regularizer)

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer, name="embeddings")
        self.built = True

    def _indices(self, inputs):
        indices = np.asarray(inputs)
        if indices.dtype.kind == "f":
            if indices.size and not np.all(np.isfinite(indices)):
                raise ValueError(f"Layer '{self.name}' received non-finite indices; expected integers in "
                                 f"[0, {self.input_dim}).")
            indices = indices.astype(np.int64)
        elif indices.dtype.kind not in "iub":
            raise TypeError(f"Layer '{self.name}' expects integer or float indices. "
                            f"Received: inputs of dtype {indices.dtype}")
        if indices.size:
            low, high = indices.min(), indices.max()
            if low < 0 or high >= self.input_dim:
                bad = int(low if low < 0 else high)
                raise ValueError(f"Layer '{self.name}' received index {bad}, which is out of range: expected "
                                 f"indices in [0, input_dim) with input_dim={self.input_dim}.")
        return indices

    def call(self, inputs):
        return ops.take(self.embeddings, self._indices(inputs), axis=0)

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
            "mask_zero": self.mask_zero,
        })
        return config
