"""Utilities of ``keras.utils``: seeding, naming sessions, data helpers, datasets, plotting, PyDataset,
registration, ``get_file``, image conversion and files, progress bars, logging and bounding boxes."""
from kgraph.saving.registration import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)
from kgraph.saving.serialization_lib import deserialize_keras_object, serialize_keras_object
from kgraph.trainers.data_adapter import pack_x_y_sample_weight, unpack_x_y_sample_weight
from kgraph.trainers.py_dataset import PyDataset
from kgraph.utils import bounding_boxes, legacy
from kgraph.utils.config import Config
from kgraph.utils.data import normalize, pad_sequences, to_categorical
from kgraph.utils.dataset_utils import (
    FeatureSpace,
    audio_dataset_from_directory,
    image_dataset_from_directory,
    split_dataset,
    text_dataset_from_directory,
    timeseries_dataset_from_array,
)
from kgraph.utils.file_utils import get_file
from kgraph.utils.image_utils import array_to_img, img_to_array, load_img, save_img
from kgraph.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from kgraph.utils.plotting import model_to_dot, plot_model
from kgraph.utils.progbar import Progbar
from kgraph.utils.session import clear_session, set_random_seed
from kgraph.utils.tensor_utils import get_source_inputs, is_keras_tensor, standardize_dtype

Sequence = PyDataset  # Keras 3 keeps the Keras 2 name

__all__ = ["Config", "CustomObjectScope", "FeatureSpace", "Progbar", "PyDataset", "Sequence", "array_to_img",
           "audio_dataset_from_directory", "bounding_boxes", "clear_session", "custom_object_scope",
           "deserialize_keras_object", "disable_interactive_logging", "enable_interactive_logging",
           "get_custom_objects", "get_file", "get_registered_name", "get_registered_object", "get_source_inputs",
           "image_dataset_from_directory", "img_to_array", "is_interactive_logging_enabled", "is_keras_tensor",
           "legacy", "load_img", "model_to_dot", "normalize", "pack_x_y_sample_weight", "pad_sequences",
           "plot_model", "register_keras_serializable", "save_img", "serialize_keras_object", "set_random_seed",
           "split_dataset", "standardize_dtype", "text_dataset_from_directory", "timeseries_dataset_from_array",
           "to_categorical", "unpack_x_y_sample_weight"]
