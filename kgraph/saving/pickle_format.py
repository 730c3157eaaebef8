"""Saving and loading models as pickles, read back only through a restricted unpickler.

A model file holds plain data only: dicts, lists, strings, bytes, numbers and
NumPy arrays (architecture config, weights, Keras's compile config, optimizer
state, and what layers' own saving hooks store: variables and asset files). The
unpickler refuses every global except the few NumPy functions that rebuild
numeric arrays, so loading a file never imports or calls anything else.
"""
from __future__ import annotations

import io
import os
import pickle
import tempfile
import warnings
from typing import TYPE_CHECKING

import numpy as np

from kgraph.saving.registration import get_registered_name, get_registered_object, register_keras_serializable  # noqa: F401 (keras.saving names)

if TYPE_CHECKING:
    from typing import Any

    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

FORMAT = "kgraph-model"
FORMAT_VERSION = 1

_NUMPY_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
}


class RefusedContent(pickle.UnpicklingError):
    """The file asks for something a kgraph model file may not contain."""


def _safe_dtype(*args, **kwargs):
    dtype = np.dtype(*args, **kwargs)
    if dtype.hasobject:
        raise RefusedContent("the file contains a NumPy object array, which could run code on load")
    return dtype


def _safe_frombuffer(buffer, dtype, shape, order):
    dtype = _safe_dtype(dtype)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order=order).copy()


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles plain data and numeric NumPy arrays; refuses every other global."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _NUMPY_GLOBALS:
            if name == "dtype":
                return _safe_dtype
            if name == "_frombuffer":
                return _safe_frombuffer
            return super().find_class(module, name)
        raise RefusedContent(
            f"refusing to load global '{module}.{name}': kgraph model files may only contain plain data "
            "and numeric NumPy arrays")


def safe_loads(payload: bytes, source: str = "<bytes>") -> Any:
    """Unpickle ``payload`` with the restricted unpickler, with clear errors for bad files."""
    try:
        return RestrictedUnpickler(io.BytesIO(payload)).load()
    except RefusedContent as err:
        raise ValueError(f"Cannot load '{source}': {err}.") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError, MemoryError,
            UnicodeDecodeError, OverflowError) as err:
        raise ValueError(f"Cannot load '{source}': the file is truncated or corrupt "
                         f"({type(err).__name__}: {err}).") from None


def atomic_write(path: os.PathLike[str] | str, payload: bytes) -> None:
    """Write bytes to ``path`` through a temporary file and a rename, so a crash never leaves half a file."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read(filepath):
    filepath = os.fspath(filepath)
    if not os.path.exists(filepath):
        raise FileNotFoundError(f"No file or directory found at {filepath}")
    with open(filepath, "rb") as f:
        return f.read()


def _check_overwrite(filepath, overwrite):
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"{filepath} already exists and overwrite=False.")


def model_payload(model: Model) -> dict[str, Any]:
    """The plain-data dict that ``save_model`` pickles."""
    from kgraph.saving.layer_state import saved_assets, saved_own_variables
    from kgraph.saving.serialization import serialize_layer
    from kgraph.version import __version__
    payload = {"format": FORMAT, "format_version": FORMAT_VERSION, "kgraph_version": __version__,
               "model": serialize_layer(model), "weights": [np.array(w) for w in model.get_weights()],
               "compile_config": None, "optimizer_state": None,
               "own_variables": saved_own_variables(model), "assets": saved_assets(model, complete=False)}
    if getattr(model, "compiled", False):
        payload.update(_serialize_compile(model))
    return payload


def save_model(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Save ``model`` to ``filepath`` (a ``.pkl`` file, or a Keras 3 ``.keras`` archive), atomically."""
    filepath = os.fspath(filepath)
    if filepath.endswith(".keras"):
        from kgraph.saving.keras_file import save_keras_model
        return save_keras_model(model, filepath, overwrite=overwrite)
    _check_overwrite(filepath, overwrite)
    atomic_write(filepath, pickle.dumps(model_payload(model), protocol=pickle.HIGHEST_PROTOCOL))


def load_model(filepath: os.PathLike[str] | str, custom_objects: CustomObjects | None = None,
               compile: bool = True) -> Model:
    """Load a model saved by ``model.save()`` or a Keras 3 ``.keras`` archive; no code from the file ever runs."""
    if os.fspath(filepath).endswith(".keras"):
        from kgraph.saving.keras_file import load_keras_model
        return load_keras_model(filepath, custom_objects, compile=compile)
    payload = safe_loads(_read(filepath), os.fspath(filepath))
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"Cannot load '{os.fspath(filepath)}': it is not a kgraph model file.")
    if payload.get("format_version", 0) > FORMAT_VERSION:
        raise ValueError(f"'{os.fspath(filepath)}' was written by a newer kgraph (format "
                         f"{payload['format_version']}); this kgraph reads format {FORMAT_VERSION}.")
    return _model_from_payload(payload, os.fspath(filepath), custom_objects, compile)


def _model_from_payload(payload, source, custom_objects, compile):
    from kgraph.saving.keras_compile import restore_compile
    from kgraph.saving.layer_state import load_assets, load_own_variables
    from kgraph.saving.registration import CustomObjectScope, custom_objects_in_effect
    from kgraph.saving.serialization import deserialize_layer
    objects = custom_objects_in_effect(custom_objects)
    with CustomObjectScope(objects):
        model = deserialize_layer(payload["model"], objects)
        model.set_weights(payload["weights"])
        load_own_variables(model, payload.get("own_variables") or {})
        load_assets(model, payload.get("assets") or {}, complete=False)
        saved = payload.get("compile_config")
        state = payload.get("optimizer_state")
        if saved is None and payload.get("compile"):  # the layout of files kgraph wrote before Keras's
            saved = {k: v for k, v in payload["compile"].items() if k != "optimizer_state"}
            state = payload["compile"].get("optimizer_state")
        if compile and restore_compile(model, saved, source, objects) and state and model.optimizer is not None:
            model.optimizer.set_slot_state(model.trainable_weights, state["slots"], state["iterations"])
    return model


def save_weights(model: Model, filepath: os.PathLike[str] | str, overwrite: bool = True) -> None:
    """Save only the weights (a list of arrays, in ``model.weights`` order)."""
    filepath = os.fspath(filepath)
    _check_overwrite(filepath, overwrite)
    payload = {"format": "kgraph-weights", "weights": [np.array(w) for w in model.get_weights()]}
    atomic_write(filepath, pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))


def load_weights(model: Model, filepath: os.PathLike[str] | str) -> None:
    """Load weights saved by ``save_weights`` (or a full model file) into ``model``."""
    payload = safe_loads(_read(filepath), os.fspath(filepath))
    if not isinstance(payload, dict) or payload.get("format") not in ("kgraph-weights", FORMAT):
        raise ValueError(f"Cannot load weights from '{os.fspath(filepath)}': it is not a kgraph weights file.")
    model.set_weights(payload["weights"])


def _serialize_compile(model):
    """The model's Keras ``compile_config`` and its optimizer's state (iterations, slots by weight position)."""
    from kgraph.saving.keras_compile import compile_config
    try:
        config = compile_config(model)
    except (ValueError, TypeError) as err:
        warnings.warn(f"Model '{model.name}' is saved without its compile configuration ({err}); "
                      "it will load uncompiled.", stacklevel=4)
        return {}
    optimizer = model.optimizer
    if optimizer is None:
        return {"compile_config": config}
    index = {id(v): i for i, v in enumerate(model.trainable_weights)}
    return {"compile_config": config,
            "optimizer_state": {"iterations": int(optimizer.iterations), "slots": optimizer.get_slot_state(index)}}
