"""Activation: applies an activation function by name or callable."""
from kgraph import activations
from kgraph.layers.layer import Layer


class Activation(Layer):
    """Applies an activation function by name or callable."""

    _masking = True

    _preserves_dtype = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config
