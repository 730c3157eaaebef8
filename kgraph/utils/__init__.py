"""Utilities of ``keras.utils``: seeding, naming sessions, data helpers, plotting, PyDataset, registration,
``get_file``, image conversion and files."""
from kgraph.saving.registration import custom_object_scope, get_custom_objects, register_keras_serializable
from kgraph.saving.serialization_lib import deserialize_keras_object, serialize_keras_object
from kgraph.trainers.py_dataset import PyDataset
from kgraph.utils.data import normalize, pad_sequences, to_categorical
from kgraph.utils.file_utils import get_file
from kgraph.utils.image_utils import array_to_img, img_to_array, load_img, save_img
from kgraph.utils.plotting import model_to_dot, plot_model
from kgraph.utils.session import clear_session, set_random_seed

__all__ = ["PyDataset", "array_to_img", "clear_session", "custom_object_scope", "deserialize_keras_object",
           "get_custom_objects", "get_file", "img_to_array", "load_img", "save_img", "serialize_keras_object",
           "model_to_dot", "normalize", "pad_sequences", "plot_model", "register_keras_serializable",
           "set_random_seed", "to_categorical"]
