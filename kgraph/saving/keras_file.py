"""Keras 3 ``.keras`` files: ``load_keras_model`` reads one into a kgraph model, ``save_keras_model`` writes one."""
from __future__ import annotations

import datetime
import os
from typing import TYPE_CHECKING

from kgraph.saving import keras_archive, keras_weights
from kgraph.saving.keras_compile import compile_from_keras
from kgraph.saving.keras_config_reader import layer_from_keras
from kgraph.saving.keras_config_writer import model_to_keras
from kgraph.saving.serialization import deserialize_layer

if TYPE_CHECKING:
    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

KERAS_FORMAT_VERSION = "3.15.1"  # the Keras release whose archive format save_keras_model writes


def load_keras_model(filepath: os.PathLike[str] | str, custom_objects: CustomObjects | None = None,
                     compile: bool = True) -> Model:
    """Load a Keras 3 ``.keras`` archive; no code from it runs; unknown classes need ``custom_objects``."""
    source = os.fspath(filepath)
    keras_weights.h5py_module()  # without h5py, say which extra to install before reading anything
    config, _, weights = keras_archive.read_archive(source)
    try:
        model = deserialize_layer(layer_from_keras(config, dict(custom_objects or {})), custom_objects)
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(f"Cannot load '{source}': the model its {keras_archive.CONFIG} describes cannot be rebuilt "
                         f"({type(err).__name__}: {err}).") from None
    if not hasattr(model, "layers"):
        raise ValueError(f"Cannot load '{source}': it holds a {config.get('class_name')}, not a model.")
    if weights is not None:
        keras_weights.read_weights(model, weights, source)
    elif model.weights:
        raise ValueError(f"Cannot load '{source}': the archive has no {keras_archive.WEIGHTS} for the model's "
                         f"{len(model.weights)} weights.")
    if compile:
        compile_from_keras(model, config.get("compile_config"), source, dict(custom_objects or {}))
    return model


def save_keras_model(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Write ``model`` as a ``.keras`` archive that Keras 3 loads with ``keras.saving.load_model``."""
    from kgraph.saving import atomic_write
    from kgraph.version import __version__
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} already exists and overwrite=False.")
    metadata = {"keras_version": KERAS_FORMAT_VERSION, "kgraph_version": __version__,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    payload = keras_archive.archive_bytes(model_to_keras(model), metadata, keras_weights.weights_bytes(model))
    atomic_write(filepath, payload)
