"""``keras.models``: Model, Functional, Sequential, cloning and model readers."""
from kgraph.models.cloning import clone_model, model_from_config, model_from_json
from kgraph.models.functional import Functional
from kgraph.models.model import Model
from kgraph.models.sequential import Sequential
from kgraph.saving.saving_api import load_model, save_model

__all__ = ["Functional", "Model", "Sequential", "clone_model", "load_model", "model_from_config",
           "model_from_json", "save_model"]
