"""Keras 3 ``.weights.h5`` files: ``model.save_weights`` / ``load_weights`` in the HDF5 layout Keras writes.

A ``.weights.h5`` file holds what the ``model.weights.h5`` member of a ``.keras`` archive holds (each layer's
variables at ``<path>/vars/<i>``, the optimizer's under ``optimizer/vars`` for a compiled model), so
``keras_weights`` reads and writes both; files go through h5py from the ``keras`` extra.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kgraph.models.model import Model

SUFFIX = ".weights.h5"
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def is_hdf5(filepath: os.PathLike[str] | str) -> bool:
    """Whether the file starts with HDF5's signature (at offset 0, where h5py writes it)."""
    try:
        with open(filepath, "rb") as f:
            return f.read(len(HDF5_SIGNATURE)) == HDF5_SIGNATURE
    except OSError:
        return False


def save_weights_h5(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Write ``model``'s weights (and a compiled model's optimizer state) as a ``.weights.h5`` Keras 3 loads."""
    from kgraph.saving import keras_weights
    from kgraph.saving.keras_compile import optimizer_variables
    from kgraph.saving.pickle_format import atomic_write
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} already exists and overwrite=False.")
    keras_weights.h5py_module()  # without h5py, name the extra before any work
    optimizer = None
    if getattr(model, "compiled", False) and getattr(model, "optimizer", None) is not None:
        optimizer = optimizer_variables(model)
    atomic_write(filepath, keras_weights.weights_bytes(model, optimizer))


def load_weights_h5(model: Model, filepath: os.PathLike[str] | str) -> None:
    """Set ``model``'s weights from a ``.weights.h5`` file (Keras's or kgraph's), every array checked first.

    The optimizer state in the file is restored into a compiled model; an uncompiled one ignores it, as Keras does.
    """
    from kgraph.saving import keras_weights
    from kgraph.saving.keras_compile import set_optimizer_variables
    source = os.fspath(filepath)
    if not os.path.exists(source):
        raise FileNotFoundError(f"No file or directory found at {source}")
    if not is_hdf5(source):
        raise ValueError(f"Cannot load weights from '{source}': it is not an HDF5 file. Expected a `{SUFFIX}` file "
                         "written by `model.save_weights()` (Keras 3's or kgraph's).")
    keras_weights.h5py_module()
    with open(source, "rb") as f:
        payload = f.read()
    saved_optimizer = keras_weights.read_weights(model, payload, source)
    if saved_optimizer and getattr(model, "compiled", False) and getattr(model, "optimizer", None) is not None:
        set_optimizer_variables(model, saved_optimizer, source)
