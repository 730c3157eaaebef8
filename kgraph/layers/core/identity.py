"""Identity: returns its inputs (and their mask) unchanged."""
import numpy as np
from kgraph import activations, initializers, ops, regularizers
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.random import generator


class Identity(Layer):
    """Returns its input unchanged."""

    _masking = True

    _preserves_dtype = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)
