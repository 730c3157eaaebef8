"""Keras 3 ``.keras`` files: ``load_keras_model`` reads one into a kgraph model, ``save_keras_model`` writes one.

Both sides keep what Keras keeps: the architecture, the weights (a layer's own ``save_own_variables`` and
``load_own_variables`` where it defines them), the assets of layers that define ``save_assets``/``load_assets``,
the ``compile_config`` and the optimizer's variables (``optimizer/vars`` of the weights file), so a reloaded
model evaluates and resumes training at the same optimizer step.
"""
from __future__ import annotations

import datetime
import os
import warnings
from typing import TYPE_CHECKING

from kgraph.saving import keras_archive, keras_weights
from kgraph.saving.keras_compile import compile_config, optimizer_variables, restore_compile, set_optimizer_variables
from kgraph.saving.keras_config_reader import layer_from_keras
from kgraph.saving.keras_config_writer import model_to_keras
from kgraph.saving.layer_state import load_assets, saved_assets
from kgraph.saving.registration import CustomObjectScope, custom_objects_in_effect
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
    archive = keras_archive.read_archive(source)
    objects = custom_objects_in_effect(custom_objects)
    with CustomObjectScope(objects):
        model = _rebuild(archive.config, objects, source)
        saved_optimizer = _read_state(model, archive, source)
        if compile and restore_compile(model, archive.config.get("compile_config"), source, objects) \
                and saved_optimizer is not None and getattr(model, "optimizer", None) is not None:
            set_optimizer_variables(model, saved_optimizer, source)
    return model


def _rebuild(config, objects, source):
    try:
        model = deserialize_layer(layer_from_keras(config, objects), objects)
    except (KeyError, TypeError, AttributeError, IndexError) as err:
        raise ValueError(f"Cannot load '{source}': the model its {keras_archive.CONFIG} describes cannot be rebuilt "
                         f"({type(err).__name__}: {err}).") from None
    if not hasattr(model, "layers"):
        raise ValueError(f"Cannot load '{source}': it holds a {config.get('class_name')}, not a model.")
    return model


def _read_state(model, archive, source):
    """Weights and assets into ``model``; the optimizer's saved variables (None if the file has none)."""
    saved_optimizer = None
    if archive.weights is not None:
        saved_optimizer = keras_weights.read_weights(model, archive.weights, source)
    elif model.weights:
        raise ValueError(f"Cannot load '{source}': the archive has no {keras_archive.WEIGHTS} for the model's "
                         f"{len(model.weights)} weights.")
    assets = {name[len(keras_archive.ASSETS):]: payload for name, payload in archive.assets.items()}
    unread = sorted(set(assets) - load_assets(model, assets))
    if unread:
        raise ValueError(f"Cannot load '{source}': it holds assets ({', '.join(unread[:3])}), such as the adapted "
                         "vocabulary of a lookup layer, that no layer of the model reads: kgraph hands assets only "
                         "to a layer that defines `load_assets`.")
    return saved_optimizer


def save_keras_model(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Write ``model`` as a ``.keras`` archive that Keras 3 loads with ``keras.saving.load_model``."""
    from kgraph.saving import atomic_write
    from kgraph.version import __version__
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} already exists and overwrite=False.")
    metadata = {"keras_version": KERAS_FORMAT_VERSION, "kgraph_version": __version__,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    config, optimizer = model_to_keras(model), None
    if getattr(model, "compiled", False):
        try:
            config["compile_config"] = compile_config(model)
            optimizer = optimizer_variables(model) if getattr(model, "optimizer", None) is not None else None
        except (ValueError, TypeError) as err:
            warnings.warn(f"Model '{model.name}' is saved without its compile configuration ({err}); it will load "
                          "uncompiled.", stacklevel=3)
    assets = {keras_archive.ASSETS + name: payload for name, payload in saved_assets(model).items()}
    payload = keras_archive.archive_bytes(config, metadata, keras_weights.weights_bytes(model, optimizer), assets)
    atomic_write(filepath, payload)
