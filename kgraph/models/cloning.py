"""Models from configs and JSON, and ``clone_model`` (a fresh model from another's config)."""
import json

from kgraph.models.functional import Functional
from kgraph.models.sequential import Sequential
from kgraph.saving.serialization import deserialize_layer


def model_from_config(config, custom_objects=None):
    """A model from ``{"class_name": ..., "config": ...}``."""
    return deserialize_layer(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """A model from ``model.to_json()`` output."""
    return model_from_config(json.loads(json_string), custom_objects)


def clone_model(model, input_tensors=None, clone_function=None):
    """A new model with the same architecture as ``model`` and freshly initialized weights (Keras's rule)."""
    if input_tensors is not None or clone_function is not None:
        raise ValueError("clone_model supports the model alone here; rebuild with `input_tensors` or a "
                         "`clone_function` by calling the layers yourself. Received: input_tensors="
                         f"{input_tensors!r}, clone_function={clone_function!r}")
    if not isinstance(model, (Functional, Sequential)):
        raise ValueError(f"clone_model expects a Functional or Sequential model. Received: {type(model).__name__} "
                         f"'{model.name}'; a subclassed model is cloned with `type(model).from_config(...)`.")
    return type(model).from_config(model.get_config())
