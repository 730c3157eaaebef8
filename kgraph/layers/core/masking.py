"""Masking: marks timesteps whose features all equal ``mask_value`` as padding."""
from kgraph import ops
from kgraph.layers.layer import Layer


class Masking(Layer):
    """Zeroes the timesteps of ``(batch, timesteps, features)`` whose every feature is ``mask_value`` and masks them."""

    _preserves_dtype = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def _keep(self, inputs):
        return ops.any(ops.not_equal(inputs, self.mask_value), axis=-1, keepdims=True)

    def call(self, inputs):
        return ops.multiply(inputs, ops.cast(self._keep(inputs), inputs.dtype))

    def compute_mask(self, inputs, previous_mask=None):
        return ops.any(ops.not_equal(inputs, self.mask_value), axis=-1)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}
