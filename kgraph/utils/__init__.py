"""Utilities of ``keras.utils``: seeding, naming sessions, data helpers, plotting, PyDataset, registration,
``get_file``."""
from kgraph.saving.registration import custom_object_scope, get_custom_objects, register_keras_serializable
from kgraph.saving.serialization_lib import deserialize_keras_object, serialize_keras_object
from kgraph.trainers.py_dataset import PyDataset
from kgraph.utils.data import normalize, pad_sequences, to_categorical
from kgraph.utils.file_utils import get_file
from kgraph.utils.plotting import model_to_dot, plot_model
from kgraph.utils.session import clear_session, set_random_seed

__all__ = ["PyDataset", "clear_session", "custom_object_scope", "deserialize_keras_object", "get_custom_objects",
           "get_file", "serialize_keras_object", "model_to_dot", "normalize", "pad_sequences", "plot_model",
           "register_keras_serializable", "set_random_seed", "to_categorical"]
