"""Identity: returns its inputs (and their mask) unchanged."""
from kgraph.layers.layer import Layer


class Identity(Layer):
    """Returns its input unchanged."""

    _masking = True

    _preserves_dtype = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)
