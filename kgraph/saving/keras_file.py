"""Keras 3 ``.keras`` files: ``load_keras_model`` reads one into a kgraph model, ``save_keras_model`` writes one.

Both sides keep what Keras keeps: the architecture, the weights (a layer's own ``save_own_variables`` and
``load_own_variables`` where it defines them), the assets of layers that define ``save_assets``/``load_assets``,
the ``compile_config`` and the optimizer's variables (``optimizer/vars`` of the weights file), so a reloaded
model evaluates and resumes training at the same optimizer step.
"""
from __future__ import annotations

import datetime
import os
import tempfile
import warnings
from typing import TYPE_CHECKING

from kgraph.saving import keras_archive, keras_weights
from kgraph.saving.file_limits import SLACK_BYTES, WeightBudget, short_repr, short_text, weights_limited
from kgraph.saving.keras_compile import compile_config, optimizer_variables, restore_compile, set_optimizer_variables
from kgraph.saving.keras_config_reader import layer_from_keras
from kgraph.saving.keras_config_writer import model_to_keras
from kgraph.saving.layer_state import asset_readers, load_assets, saved_assets
from kgraph.saving.pickle_format import rebuilding
from kgraph.saving.registration import CustomObjectScope, custom_objects_in_effect
from kgraph.saving.serialization import deserialize_layer

if TYPE_CHECKING:
    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

KERAS_FORMAT_VERSION = "3.15.1"  # the Keras release whose archive format save_keras_model writes
OPTIMIZER_COPIES = 3  # slots per weight an optimizer keeps (Adam with amsgrad: three)
H5_HEADER_BYTES = 16 << 10  # HDF5's headers in a weights file, per group and per array (Keras's take about 2 KB)


def load_keras_model(filepath: os.PathLike[str] | str, custom_objects: CustomObjects | None = None,
                     compile: bool = True) -> Model:
    """Load a Keras 3 ``.keras`` archive; no code from it runs; unknown classes need ``custom_objects``.

    Whatever is wrong with the file, the error is a ValueError naming the problem.
    """
    source = os.fspath(filepath)
    keras_weights.h5py_module()  # without h5py, say which extra to install before reading anything
    archive = keras_archive.read_archive(source)
    objects = custom_objects_in_effect(custom_objects)
    with CustomObjectScope(objects):
        model = rebuilding(source, _rebuild, archive, objects, source)
        saved_optimizer = rebuilding(source, _read_state, model, archive, source)
        if compile and rebuilding(source, restore_compile, model, archive.config.get("compile_config"), source,
                                  objects) and saved_optimizer is not None and getattr(model, "optimizer", None):
            rebuilding(source, set_optimizer_variables, model, saved_optimizer, source)
    return model


def _rebuild(archive, objects, source):
    """The model ``config.json`` describes, its weights counted against the bytes the weights file declares."""
    held = archive.weights_size or 0
    with weights_limited(WeightBudget(held, source, f"its {keras_archive.WEIGHTS} of {held} bytes")):
        model = deserialize_layer(layer_from_keras(archive.config, objects), objects)
    if not hasattr(model, "layers"):
        raise ValueError(f"Cannot load '{source}': it holds a {short_repr(archive.config.get('class_name'))}, not "
                         "a model.")
    return model


def weights_limits(model: Model) -> tuple[int, int]:
    """The most bytes the arrays of ``model``'s weights file may hold (its weights and its optimizer's), and the
    most the file itself may (HDF5's headers besides: a group per layer and per array)."""
    weights = model.weights
    arrays = (1 + OPTIMIZER_COPIES) * sum(v.value.nbytes for v in weights) + SLACK_BYTES
    groups = len(keras_weights.owned_groups(model, complete=False))
    return arrays, arrays + H5_HEADER_BYTES * (groups + len(weights))


def _read_state(model, archive, source):
    """Weights and assets into ``model``; the optimizer's saved variables (None if the file has none)."""
    saved_optimizer = None
    if archive.weights_size is not None:
        arrays, file_bytes = weights_limits(model)
        with tempfile.TemporaryDirectory(prefix="kgraph-load-") as folder:
            path = keras_archive.extract_weights(source, folder, file_bytes)
            _check_h5_sizes(path, arrays, source)
            saved_optimizer = keras_weights.read_weights(model, path, source)
    elif model.weights:
        raise ValueError(f"Cannot load '{source}': the archive has no {keras_archive.WEIGHTS} for the model's "
                         f"{len(model.weights)} weights.")
    names = [name[len(keras_archive.ASSETS):] for name in archive.assets]
    read = asset_readers(model, names)
    assets = {name[len(keras_archive.ASSETS):]: payload for name, payload in
              keras_archive.read_assets(source, [keras_archive.ASSETS + name for name in read]).items()}
    unread = sorted(set(names) - load_assets(model, assets))
    if unread:
        raise ValueError(f"Cannot load '{source}': it holds assets ({short_repr(unread[:3])}), such as the adapted "
                         "vocabulary of a lookup layer, that no layer of the model reads: kgraph hands assets only "
                         "to a layer that defines `load_assets`.")
    return saved_optimizer


def _check_h5_sizes(path, limit, source):
    """Refuse a weights file whose arrays, decompressed (HDF5 compresses inside the file too), exceed ``limit``."""
    h5py = keras_weights.h5py_module()
    total = 0

    def count(name, node):
        nonlocal total
        if isinstance(node, h5py.Dataset):
            total += node.size * node.dtype.itemsize
            if total > limit:
                raise ValueError(f"Refusing to load '{source}': the arrays of its {keras_archive.WEIGHTS} hold more "
                                 f"than {limit} bytes once decompressed (at {short_repr(name)}), more than the model "
                                 "and its optimizer can use.")
    try:
        with h5py.File(path, "r") as f:
            f.visititems(count)
    except OSError as err:
        raise ValueError(f"Cannot load '{source}': its {keras_archive.WEIGHTS} is not a readable HDF5 file "
                         f"({short_text(err)}).") from None


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
