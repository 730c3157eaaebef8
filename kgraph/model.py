"""Model: a Layer that groups layers and trains them; ``Model(inputs, outputs)`` is a Functional."""
import json

from kgraph.layer import Layer
from kgraph.trainer import Trainer


class Model(Trainer, Layer):
    """Keras's Model: ``Model(inputs, outputs)`` builds a Functional; subclass it to write ``call``."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "outputs" in kwargs or ("inputs" in kwargs and args)):
            from kgraph.functional import Functional
            return super().__new__(Functional)
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        trainable = kwargs.pop("trainable", True)
        name = kwargs.pop("name", None)
        if args or kwargs.keys() - {"dtype"}:
            raise TypeError(f"Unrecognized arguments to Model: args={args}, kwargs={kwargs}. "
                            "Use `Model(inputs, outputs, name=None)` or subclass Model.")
        Layer.__init__(self, trainable=trainable, name=name, dtype=kwargs.get("dtype"))
        Trainer.__init__(self)

    @property
    def layers(self):
        return list(self._layers)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A model from ``get_config()`` output: a functional config builds the graph, as in Keras."""
        if isinstance(config, dict) and {"layers", "input_layers", "output_layers"} <= set(config):
            from kgraph.functional import Functional
            from kgraph.serialization import functional_from_config
            return functional_from_config(Functional if cls is Model else cls, config, custom_objects)
        return cls(**config)

    def get_layer(self, name=None, index=None):
        """A layer by ``name`` or by ``index`` in ``model.layers``."""
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: index={index}, name={name}.")
        layers = self.layers
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"Was asked to retrieve layer at index {index} but model '{self.name}' only "
                                 f"has {len(layers)} layers.")
            return layers[index]
        if name is not None:
            for layer in layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: {[layer.name for layer in layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    def summary(self, line_length=None, positions=None, print_fn=None):
        """Print the Keras-style table of layers, output shapes, parameters and connections."""
        from kgraph.summary import print_summary
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn)

    def to_json(self, **kwargs):
        """The architecture as JSON (``kgraph.models.model_from_json`` reads it back)."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)

    def save(self, filepath, overwrite=True):
        """Save architecture, weights, compile configuration and optimizer state to a ``.pkl`` file."""
        from kgraph.saving import save_model
        save_model(self, filepath, overwrite=overwrite)

    def save_weights(self, filepath, overwrite=True):
        from kgraph.saving import save_weights
        save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        from kgraph.saving import load_weights
        load_weights(self, filepath)
