"""``keras.saving``'s entry points: the file's suffix picks the format, and an unknown suffix is refused by name.

- ``save_model`` / ``model.save``: ``.keras`` (Keras 3's archive) or ``.pkl`` (kgraph's restricted pickle).
- ``save_weights`` / ``load_weights``: ``.weights.h5`` (Keras 3's HDF5 layout) or ``.pkl``; loading goes by the
  file's content, so an HDF5 file is read as Keras's layout whatever its name.
- ``load_model``: ``.keras`` archives and kgraph model files; an HDF5 file (Keras's legacy format) is named as such.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kgraph.saving import keras_weights_h5, pickle_format

if TYPE_CHECKING:
    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

MODEL_SUFFIXES = (".keras", ".pkl")
WEIGHTS_SUFFIXES = (keras_weights_h5.SUFFIX, ".pkl")
_LEGACY_H5 = (".h5", ".hdf5")


def save_model(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Save ``model`` to a ``.keras`` archive (Keras 3 loads it) or a ``.pkl`` file, atomically."""
    path = os.fspath(filepath)
    if path.endswith(".keras"):
        from kgraph.saving.keras_file import save_keras_model
        return save_keras_model(model, path, overwrite=overwrite)
    if path.endswith(".pkl"):
        return pickle_format.save_model(model, path, overwrite=overwrite)
    if path.endswith(_LEGACY_H5):
        raise ValueError("Saving a model as an HDF5 file (the legacy Keras format) is not supported. Use instead the "
                         "native Keras format, e.g. `model.save('my_model.keras')` or "
                         "`keras.saving.save_model(model, 'my_model.keras')`; for the weights alone, "
                         f"`model.save_weights('my_model.weights.h5')`. Received: filepath={path}")
    raise ValueError("Invalid filepath extension for saving. Please add either a `.keras` extension for the native "
                     "Keras format (recommended) or a `.pkl` extension for kgraph's pickle format. Use "
                     "`model.export(filepath)` to write an ONNX file for serving. "
                     f"Received: filepath={path}")


def load_model(filepath: os.PathLike[str] | str, custom_objects: CustomObjects | None = None,
               compile: bool = True) -> Model:
    """Load a model saved by ``model.save()`` or a Keras 3 ``.keras`` archive; no code from the file ever runs."""
    path = os.fspath(filepath)
    if keras_weights_h5.is_hdf5(path):
        weights_only = path.endswith(keras_weights_h5.SUFFIX)
        raise ValueError(f"Cannot load '{path}': it is an HDF5 file, " + (
            "which holds weights only: build the model, then call `model.load_weights(...)` on it."
            if weights_only else "Keras's legacy model format, which kgraph does not read. Re-save the model in "
            "Keras with `model.save('my_model.keras')` and load that file."))
    return pickle_format.load_model(path, custom_objects, compile=compile)


def save_weights(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Save the weights: ``.weights.h5`` in Keras 3's HDF5 layout, or ``.pkl`` (kgraph's pickle)."""
    path = os.fspath(filepath)
    if path.endswith(keras_weights_h5.SUFFIX):
        return keras_weights_h5.save_weights_h5(model, path, overwrite=overwrite)
    if path.endswith(".pkl"):
        return pickle_format.save_weights(model, path, overwrite=overwrite)
    raise ValueError(f"The filename must end in `{keras_weights_h5.SUFFIX}` (Keras's HDF5 weights) or `.pkl` "
                     f"(kgraph's pickle). Received: filepath={path}")


def load_weights(model: Model, filepath: os.PathLike[str] | str) -> None:
    """Load weights saved by ``save_weights`` (a Keras or kgraph ``.weights.h5``, or a ``.pkl``) into ``model``."""
    path = os.fspath(filepath)
    if not path.endswith(keras_weights_h5.SUFFIX) and keras_weights_h5.is_hdf5(path):
        from kgraph.saving import legacy_h5_weights
        if legacy_h5_weights.is_legacy_h5(path):  # Keras 2's .h5 (the applications' ImageNet weight files)
            return legacy_h5_weights.load_legacy_weights(model, path)
    if path.endswith(keras_weights_h5.SUFFIX) or keras_weights_h5.is_hdf5(path):
        return keras_weights_h5.load_weights_h5(model, path)
    if path.endswith(".keras"):
        raise ValueError(f"Cannot load weights from '{path}': kgraph reads the weights of a .keras archive with "
                         "`kgraph.load_model(...)`, or from a `.weights.h5` file (`model.save_weights(...)`).")
    return pickle_format.load_weights(model, path)
