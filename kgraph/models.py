"""Model constructors and readers: Model, Sequential, Functional, model_from_json, load_model."""
import json

from kgraph.functional import Functional
from kgraph.model import Model
from kgraph.saving import load_model
from kgraph.sequential import Sequential
from kgraph.serialization import deserialize_layer


def model_from_config(config, custom_objects=None):
    """A model from ``{"class_name": ..., "config": ...}``."""
    return deserialize_layer(config, custom_objects)


def model_from_json(json_string, custom_objects=None):
    """A model from ``model.to_json()`` output."""
    return model_from_config(json.loads(json_string), custom_objects)


__all__ = ["Functional", "Model", "Sequential", "load_model", "model_from_config", "model_from_json"]
