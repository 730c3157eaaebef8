"""Wrapper: the base class of layers that hold another layer (``self.layer``) and change how it is applied."""
from kgraph.layers.layer import Layer
from kgraph.saving.serialization import deserialize_layer, serialize_layer


class Wrapper(Layer):
    """Keras's abstract wrapper: keeps ``layer``, builds it, and saves it under ``"layer"`` in the config.

    Subclasses define ``call`` (``TimeDistributed`` is one). Building a wrapper
    builds the wrapped layer on the same input shape unless a subclass says
    otherwise.
    """

    def __init__(self, layer, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"{type(self).__name__} expects `layer` to be a kgraph Layer instance. "
                             f"Received: layer={layer!r}")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape=None):
        if not self.layer.built:
            self.layer.build(input_shape)
            self.layer.built = True
            self.layer._build_input_shape = input_shape
        self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"Layer '{self.name}' ({type(self).__name__}) is a Wrapper, an abstract base "
                                  "class: a subclass must define `call` (for example TimeDistributed).")

    def get_config(self):
        return {**super().get_config(), "layer": serialize_layer(self.layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        return cls(deserialize_layer(config.pop("layer"), custom_objects), **config)
