"""Model: a Layer that groups layers and trains them; ``Model(inputs, outputs)`` is a Functional."""
import json

import numpy as np

from kgraph.layers.layer import Layer
from kgraph.trainers.trainer import Trainer


class Model(Trainer, Layer):
    """Keras's Model: ``Model(inputs, outputs)`` builds a Functional; subclass it to write ``call``."""

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or "outputs" in kwargs or ("inputs" in kwargs and args)):
            from kgraph.models.functional import Functional
            return super().__new__(Functional)
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        from kgraph.models.functional import Functional
        if _functional_init_arguments(args, kwargs) and not isinstance(self, Functional):
            # As Keras: a subclass called as `MyModel(inputs, outputs)` becomes a Functional subclass.
            _inject_functional(type(self), Functional)
            Functional.__init__(self, *args, **kwargs)
            return
        trainable = kwargs.pop("trainable", True)
        name = kwargs.pop("name", None)
        if args or kwargs.keys() - {"dtype"}:
            raise TypeError(f"Unrecognized arguments to Model: args={args}, kwargs={kwargs}. "
                            "Use `Model(inputs, outputs, name=None)` or subclass Model.")
        Layer.__init__(self, trainable=trainable, name=name, dtype=kwargs.get("dtype"))
        Trainer.__init__(self)

    @property
    def layers(self):
        return list(self._sublayers())

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A model from ``get_config()`` output: a functional config builds the graph, as in Keras."""
        if isinstance(config, dict) and {"layers", "input_layers", "output_layers"} <= set(config):
            from kgraph.models.functional import Functional
            from kgraph.saving.serialization import functional_from_config
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

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        """Print the Keras-style table of layers, output shapes, parameters and connections."""
        from kgraph.utils.summary import print_summary
        print_summary(self, line_length=line_length, positions=positions, print_fn=print_fn,
                      expand_nested=expand_nested, show_trainable=show_trainable, layer_range=layer_range)

    def to_json(self, **kwargs):
        """The architecture as JSON (``kgraph.models.model_from_json`` reads it back)."""
        return json.dumps({"class_name": type(self).__name__, "config": self.get_config()}, **kwargs)

    def save(self, filepath, overwrite=True):
        """Save architecture, weights, compile configuration and optimizer state: ``.keras`` or ``.pkl``."""
        from kgraph.saving import save_model
        save_model(self, filepath, overwrite=overwrite)

    def export(self, filepath, format="onnx", verbose=None, input_signature=None, opset_version=None, **kwargs):
        """Write the inference graph to ``filepath`` as ONNX, as Keras's ``model.export(..., format="onnx")`` does.

        ONNX is kgraph's export format, so it is also the default (Keras defaults to ``"tf_saved_model"``, which
        needs TensorFlow). ``opset_version`` picks the opset (the exporter's default when None);
        ``input_signature``, if given, must describe the model's own inputs (one spec per input, shapes
        compatible, same dtypes): the exported graph keeps the model's unknown dimensions dynamic. Returns the
        ``onnx.ModelProto``.
        """
        if format != "onnx":
            raise ValueError(f"Unrecognized format={format!r}. kgraph exports ONNX only: use format='onnx' (serve "
                             "the file with `python -m serve`, or write a Triton repository with "
                             "`python -m export model.pkl --triton-repo DIR`).")
        if kwargs:
            raise ValueError(f"Unexpected arguments for ONNX export: {sorted(kwargs)}. Expected `verbose`, "
                             "`input_signature` and `opset_version`.")
        if input_signature is not None:
            _check_input_signature(self, input_signature)
        from export import to_onnx
        proto = to_onnx(self, str(filepath), opset=opset_version)
        if verbose is None or verbose:
            print(f"Saved artifact at '{filepath}'.")
        return proto

    def save_weights(self, filepath, overwrite=True):
        """Save the weights: ``.weights.h5`` (Keras 3's HDF5 layout) or ``.pkl``."""
        from kgraph.saving import save_weights
        save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath):
        """Load weights written by ``save_weights`` (Keras's or kgraph's ``.weights.h5``, or ``.pkl``)."""
        from kgraph.saving import load_weights
        load_weights(self, filepath)


def _functional_init_arguments(args, kwargs):
    return len(args) == 2 or (len(args) == 1 and "outputs" in kwargs) or {"inputs", "outputs"} <= kwargs.keys()


def _inject_functional(cls, functional):
    """Rebase ``cls`` from Model onto Functional (as Keras's ``inject_functional_model_class``)."""
    if cls is Model:
        return functional
    if not issubclass(cls, Model) or issubclass(cls, functional):
        return cls
    cls.__bases__ = tuple(_inject_functional(base, functional) for base in cls.__bases__)
    # Layer's per-class facts (does `call` take `training`, `mask`...) now come from Functional's `call`.
    super(cls, cls).__init_subclass__()
    return cls


def _check_input_signature(model, signature):
    """Raise a ValueError unless ``signature`` (specs with ``shape`` and ``dtype``) matches ``model.inputs``."""
    from kgraph import tree
    specs = tree.flatten(signature)
    inputs = getattr(model, "inputs", None)
    if not inputs:
        raise ValueError(f"Model '{model.name}' has no symbolic inputs to check `input_signature` against; "
                         "call it on data once, or export without `input_signature`.")
    if len(specs) != len(inputs):
        raise ValueError(f"`input_signature` has {len(specs)} specs but model '{model.name}' has {len(inputs)} "
                         "inputs.")
    for spec, tensor in zip(specs, inputs):
        shape = getattr(spec, "shape", None)
        if shape is None:
            raise ValueError(f"Each `input_signature` entry needs a `shape` (an InputSpec, KerasTensor or array). "
                             f"Received: {spec!r}")
        shape, expected = tuple(shape), tuple(tensor.shape)
        if len(shape) != len(expected) or any(a is not None and b is not None and a != b
                                              for a, b in zip(shape, expected)):
            raise ValueError(f"`input_signature` shape {shape} does not match input '{tensor.name}' of shape "
                             f"{expected}.")
        dtype = getattr(spec, "dtype", None)
        if dtype is not None and str(np.dtype(dtype)) != str(np.dtype(tensor.dtype)):
            raise ValueError(f"`input_signature` dtype {dtype} does not match input '{tensor.name}' of dtype "
                             f"{tensor.dtype}.")
