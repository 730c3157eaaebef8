"""Keras 2's HDF5 weight files (``.h5``: ``keras.applications``' ImageNet weights, ``model.save_weights`` of
Keras 2, and the ``model_weights`` group of a legacy full-model ``.h5``), read into a kgraph model.

The layout: the root (or ``model_weights``) lists ``layer_names`` in its attributes; each layer's group lists
``weight_names``, the datasets holding that layer's variables, trainable ones first. Loading goes by order as
Keras's does: the i-th saved layer that has weights fills the i-th model layer that has weights. Every array is
checked before any variable is set, so a file that does not fit leaves the model as it was.
"""
from __future__ import annotations

import os

import numpy as np

from kgraph.saving.keras_weights_h5 import is_hdf5


def _h5py():
    from kgraph.saving.keras_weights import h5py_module
    return h5py_module()


def _text(value):
    return value.decode("utf8") if isinstance(value, bytes) else str(value)


def _attribute_list(group, name):
    """An attribute holding a list of names; big lists are split over ``name0``, ``name1``, ... as Keras writes."""
    if name in group.attrs:
        return [_text(v) for v in group.attrs[name]]
    values, chunk = [], 0
    while f"{name}{chunk}" in group.attrs:
        values.extend(_text(v) for v in group.attrs[f"{name}{chunk}"])
        chunk += 1
    return values


def _weights_root(f):
    """The group with ``layer_names``: the file's root, or ``model_weights`` of a full-model file; else None."""
    if "layer_names" in f.attrs or "layer_names0" in f.attrs:
        return f
    if "model_weights" in f:
        group = f["model_weights"]
        if "layer_names" in group.attrs or "layer_names0" in group.attrs:
            return group
    return None


def is_legacy_h5(filepath: os.PathLike[str] | str) -> bool:
    """Whether ``filepath`` is an HDF5 file in Keras 2's weights layout (not Keras 3's ``.weights.h5``)."""
    path = os.fspath(filepath)
    if not is_hdf5(path):
        return False
    with _h5py().File(path, "r") as f:
        return _weights_root(f) is not None


def _legacy_variables(layer):
    """A layer's variables in the order Keras 2 saved them: trainable first, then non-trainable."""
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def _saved_layers(root, source):
    """``[(layer name, [arrays])]`` for each saved layer that has weights, in file order."""
    saved = []
    for name in _attribute_list(root, "layer_names"):
        if name not in root:
            raise ValueError(f"Cannot load weights from '{source}': layer '{name}' is listed in `layer_names` but "
                             "has no group in the file.")
        group = root[name]
        arrays = []
        for weight_name in _attribute_list(group, "weight_names"):
            if weight_name not in group:
                raise ValueError(f"Cannot load weights from '{source}': weight '{weight_name}' of layer '{name}' "
                                 "is listed but missing from the file.")
            arrays.append(np.asarray(group[weight_name]))
        if arrays:
            saved.append((name, arrays))
    return saved


def _pairs(model, saved, source):
    """``[(variable, array)]`` matching saved layers to the model's layers by order, every shape checked."""
    layers = [layer for layer in model.layers if _legacy_variables(layer)]
    if len(layers) != len(saved):
        raise ValueError(f"Cannot load weights from '{source}': layer count mismatch. The model has "
                         f"{len(layers)} layers with weights, the file {len(saved)} saved layers.")
    pairs = []
    for k, (layer, (name, arrays)) in enumerate(zip(layers, saved)):
        variables = _legacy_variables(layer)
        if len(variables) != len(arrays):
            raise ValueError(f"Weight count mismatch for layer #{k} (named {layer.name} in the current model, "
                             f"{name} in the save file). Layer expects {len(variables)} weight(s). Received "
                             f"{len(arrays)} saved weight(s)")
        for variable, array in zip(variables, arrays):
            if tuple(variable.shape) != tuple(array.shape):
                raise ValueError(f"Shape mismatch in layer #{k} (named {layer.name} in the current model, {name} "
                                 f"in the save file) for weight {variable.path}: the model's has shape "
                                 f"{tuple(variable.shape)}, the saved one {tuple(array.shape)}.")
            pairs.append((variable, array))
    return pairs


def load_legacy_weights(model, filepath: os.PathLike[str] | str) -> None:
    """Set ``model``'s weights from a Keras 2 HDF5 weights file (or a legacy full-model ``.h5``), by layer order."""
    source = os.fspath(filepath)
    if not os.path.exists(source):
        raise FileNotFoundError(f"No file or directory found at {source}")
    if not is_hdf5(source):
        raise ValueError(f"Cannot load weights from '{source}': it is not an HDF5 file.")
    with _h5py().File(source, "r") as f:
        root = _weights_root(f)
        if root is None:
            raise ValueError(f"Cannot load weights from '{source}': it has no `layer_names` attribute, so it is not "
                             "a Keras 2 HDF5 weights file (a Keras 3 `.weights.h5` loads with "
                             "`model.load_weights`).")
        pairs = _pairs(model, _saved_layers(root, source), source)
    for variable, array in pairs:
        variable.assign(array.astype(variable.dtype, copy=False))
