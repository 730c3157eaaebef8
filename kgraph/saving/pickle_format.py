"""Saving and loading models as pickles, read back only through a restricted unpickler.

A model file holds plain data only: dicts, lists, strings, bytes, numbers and
NumPy arrays (architecture config, weights, Keras's compile config, optimizer
state, and what layers' own saving hooks store: variables and asset files). The
unpickler refuses every global except the few NumPy functions that rebuild
numeric arrays, so loading a file never imports or calls anything else.
"""
from __future__ import annotations

import io
import math
import os
import pickle
import struct
import tempfile
import warnings
from typing import TYPE_CHECKING

import numpy as np

try:
    from numpy._core import multiarray as np_multiarray
except ImportError:  # NumPy 1.x
    from numpy.core import multiarray as np_multiarray

from kgraph.saving.file_limits import (
    WeightBudget,
    array_bytes,
    check_structure,
    short_repr,
    short_text,
    weights_limited,
)
from kgraph.saving.registration import get_registered_name, get_registered_object, register_keras_serializable  # noqa: F401 (keras.saving names)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

FORMAT = "kgraph-model"
FORMAT_VERSION = 1

_RECONSTRUCT = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct")}
_SCALAR = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}
_FROMBUFFER = {("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer")}
_MAX_MESSAGE = 2000
_DTYPE_KINDS = "biufcSU"  # numbers, booleans and fixed-width strings: no objects, no records, no dates


class RefusedContent(pickle.UnpicklingError):
    """The file asks for something a kgraph model file may not contain."""


class _NDArrayClass:
    """Stands for ``numpy.ndarray`` in a file: only ``_reconstruct`` may take it (the class itself is not callable
    from a file, or ``ndarray((10**9,), object)`` would allocate whatever a file asks)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _NDArrayClass:
        raise RefusedContent("refusing to call numpy.ndarray: a kgraph model file builds arrays from its own bytes")


def _safe_dtype(*args, **kwargs):
    dtype = np.dtype(*args, **kwargs)
    _check_dtype(dtype)
    return dtype


def _check_dtype(dtype):
    if not isinstance(dtype, np.dtype):
        raise RefusedContent(f"expected a NumPy dtype, received {short_repr(dtype)}")
    if dtype.hasobject:
        raise RefusedContent("the file contains a NumPy object array, which could run code on load")
    if dtype.kind not in _DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise RefusedContent(f"the file contains an array of dtype {short_repr(dtype)}; a kgraph model file holds "
                             "numeric, boolean and string arrays only")


def _safe_frombuffer(buffer, dtype, shape, order):
    _check_dtype(dtype)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order=order).copy()


def _safe_scalar(dtype, data):
    _check_dtype(dtype)
    if not isinstance(data, bytes) or len(data) != dtype.itemsize:
        raise RefusedContent(f"a NumPy {dtype} scalar needs {dtype.itemsize} bytes of data")
    return np_multiarray.scalar(dtype, data)


def _safe_reconstruct(cls, shape, dtype):
    # NumPy pickles an array that is not contiguous as ``_reconstruct(ndarray, (0,), b"b")`` and a BUILD with
    # its shape, dtype and bytes; nothing else is accepted, so the file's bytes bound the array.
    if cls is not _NDArrayClass or shape != (0,) or not isinstance(dtype, (bytes, str)):
        what = "numpy.ndarray" if cls is _NDArrayClass else short_repr(cls)
        raise RefusedContent(f"refusing NumPy's _reconstruct of {what} with shape {short_repr(shape)} and dtype "
                             f"{short_repr(dtype)}: only the empty array NumPy's own pickles start from is allowed")
    return np_multiarray._reconstruct(np.ndarray, (0,), _safe_dtype(dtype))


def _check_array_state(state):
    """The BUILD state of an array NumPy pickled: ``(version, shape, dtype, fortran, bytes)``, sizes matching."""
    if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[1], tuple)
            and all(isinstance(d, int) and d >= 0 for d in state[1]) and isinstance(state[4], (bytes, bytearray))):
        raise RefusedContent(f"an array's state must be (version, shape, dtype, fortran, bytes); received "
                             f"{short_repr(state)}")
    _check_dtype(state[2])
    if math.prod(state[1]) * state[2].itemsize != len(state[4]):
        raise RefusedContent(f"an array of shape {short_repr(state[1])} and dtype {state[2]} needs "
                             f"{math.prod(state[1]) * state[2].itemsize} bytes; the file gives {len(state[4])}")


def _check_dtype_state(dtype, state):
    """The BUILD state of a dtype NumPy pickled: byte order, and the sizes and flags NumPy itself gave it."""
    # A state could set a dtype's flags (marking plain bytes as Python objects) or its item size.
    if not (isinstance(state, tuple) and len(state) == 8 and state[1] in ("<", ">", "|", "=")
            and state[2:5] == (None, None, None) and state[5] in (-1, dtype.itemsize)
            and state[6] in (-1, dtype.alignment) and state[7] == dtype.flags):
        raise RefusedContent(f"refusing the state {short_repr(state)} for dtype {dtype}: it is not one NumPy "
                             "writes for a plain dtype")


class RestrictedUnpickler(pickle._Unpickler):
    """Unpickles plain data and numeric NumPy arrays; refuses every other global.

    NumPy's functions are replaced by checking versions: dtypes of numbers and strings only, arrays sized by the
    bytes the file gives, ``_reconstruct`` only as NumPy's own pickles call it, and the state that BUILD applies
    checked first (an array's shape against its bytes, a dtype's flags unchanged).
    """

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, **kwargs):
        super().__init__(file, **kwargs)
        self._empty_arrays = {}

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in _RECONSTRUCT:
            return self._reconstruct
        found = {("numpy", "ndarray"): _NDArrayClass, ("numpy", "dtype"): _safe_dtype}.get(key) or \
            (_safe_scalar if key in _SCALAR else _safe_frombuffer if key in _FROMBUFFER else None)
        if found is None:
            raise RefusedContent(
                f"refusing to load global {short_repr(f'{module}.{name}')}: kgraph model files may only contain "
                "plain data and numeric NumPy arrays")
        return found

    def _reconstruct(self, cls, shape, dtype):
        array = _safe_reconstruct(cls, shape, dtype)
        self._empty_arrays[id(array)] = array
        return array

    def _load_build(self):
        state, target = self.stack[-1], self.stack[-2]
        if isinstance(target, np.ndarray) and self._empty_arrays.pop(id(target), None) is target:
            _check_array_state(state)
        elif isinstance(target, np.dtype):
            _check_dtype_state(target, state)
        else:
            raise RefusedContent(f"refusing to set the state of a {type(target).__name__}: a kgraph model file "
                                 "sets the state of NumPy arrays and dtypes only")
        pickle._Unpickler.load_build(self)

    dispatch[pickle.BUILD[0]] = _load_build

    def _load_bytearray8(self):
        # Read before allocating: a length alone (11 bytes of file) must not make a bytearray of gigabytes.
        size, = struct.unpack("<Q", self.read(8))
        data = self.read(size)
        if len(data) != size:
            raise pickle.UnpicklingError(f"a bytearray declares {size} bytes; the file holds {len(data)} more")
        self.append(bytearray(data))

    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8


def safe_loads(payload: bytes, source: str = "<bytes>") -> Any:
    """Unpickle ``payload`` with the restricted unpickler, with clear errors for bad files."""
    try:
        return RestrictedUnpickler(io.BytesIO(payload)).load()
    except RefusedContent as err:
        raise ValueError(f"Cannot load '{source}': {err}.") from None
    except RecursionError:
        raise ValueError(f"Cannot load '{source}': it nests values too deeply to be read.") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError, MemoryError,
            UnicodeDecodeError, OverflowError, struct.error) as err:
        raise ValueError(f"Cannot load '{source}': the file is truncated or corrupt "
                         f"({type(err).__name__}: {short_text(err)}).") from None


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
    """Load a model saved by ``model.save()`` or a Keras 3 ``.keras`` archive; no code from the file ever runs.

    Whatever is wrong with the file, the error is a ValueError naming the problem.
    """
    if os.fspath(filepath).endswith(".keras"):
        from kgraph.saving.keras_file import load_keras_model
        return load_keras_model(filepath, custom_objects, compile=compile)
    source = os.fspath(filepath)
    payload = read_model_payload(_read(filepath), source)
    return rebuilding(source, _model_from_payload, payload, source, custom_objects, compile)


def read_model_payload(data: bytes, source: str) -> dict[str, Any]:
    """The payload of a kgraph model file's bytes, refused unless it is one and within the limits of file_limits."""
    payload = safe_loads(data, source)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"Cannot load '{source}': it is not a kgraph model file.")
    check_structure(payload, source, "model file")
    version = payload.get("format_version", 0)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(f"Cannot load '{source}': 'format_version' must be an integer. Received: "
                         f"{short_repr(version)}")
    if version > FORMAT_VERSION:
        raise ValueError(f"'{source}' was written by a newer kgraph (format {version}); this kgraph reads format "
                         f"{FORMAT_VERSION}.")
    for key, kind in (("model", dict), ("weights", list)):
        if not isinstance(payload.get(key), kind):
            raise ValueError(f"Cannot load '{source}': its '{key}' must be a {kind.__name__}. Received: "
                             f"{short_repr(payload.get(key))}")
    if not all(isinstance(w, np.ndarray) for w in payload["weights"]):
        raise ValueError(f"Cannot load '{source}': its 'weights' must be a list of arrays. Received: "
                         f"{short_repr(payload['weights'])}")
    return payload


def rebuilding(source: str, rebuild: Callable[..., Model], *args: Any) -> Model:
    """``rebuild(*args)``, any failure inside it a ValueError naming the file and the problem."""
    try:
        return rebuild(*args)
    except ValueError as err:
        if len(str(err)) <= _MAX_MESSAGE:
            raise
        raise ValueError(f"Cannot load '{source}': {short_text(err, _MAX_MESSAGE)}") from None
    except RecursionError:
        raise ValueError(f"Cannot load '{source}': the model it describes nests too deeply to be rebuilt.") from None
    except MemoryError:
        raise ValueError(f"Cannot load '{source}': the model it describes does not fit in memory.") from None
    except Exception as err:  # noqa: BLE001  (a malformed config fails anywhere inside a layer's from_config)
        raise ValueError(f"Cannot load '{source}': the model it describes cannot be rebuilt "
                         f"({type(err).__name__}: {short_text(err)}).") from None


def _model_from_payload(payload, source, custom_objects, compile):
    from kgraph.saving.keras_compile import restore_compile
    from kgraph.saving.layer_state import load_assets, load_own_variables
    from kgraph.saving.registration import CustomObjectScope, custom_objects_in_effect
    from kgraph.saving.serialization import deserialize_layer
    objects = custom_objects_in_effect(custom_objects)
    held = array_bytes([payload["weights"], payload.get("own_variables")])
    with CustomObjectScope(objects):
        with weights_limited(WeightBudget(held, source, "the file's weights")):
            model = deserialize_layer(payload["model"], objects)
        model.set_weights(payload["weights"])
        load_own_variables(model, payload.get("own_variables") or {})
        load_assets(model, payload.get("assets") or {}, complete=False)
        saved = payload.get("compile_config")
        state = payload.get("optimizer_state")
        if saved is None and isinstance(payload.get("compile"), dict):  # the layout of files before Keras's
            saved = {k: v for k, v in payload["compile"].items() if k != "optimizer_state"}
            state = payload["compile"].get("optimizer_state")
        if compile and restore_compile(model, saved, source, objects) and state and model.optimizer is not None:
            model.optimizer.set_slot_state(model.trainable_weights, state["slots"], state["iterations"])
            _restore_loss_scale(model.optimizer, state.get("loss_scale"), source)
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


def _restore_loss_scale(optimizer, saved, source):
    """A LossScaleOptimizer's step counter and scale, as saved (a file of another optimizer has none)."""
    if saved is None or not hasattr(optimizer, "dynamic_scale"):
        return
    if not (isinstance(saved, list) and len(saved) == 2 and all(isinstance(v, (int, float)) for v in saved)
            and saved[1] > 0):
        raise ValueError(f"Cannot load '{source}': its optimizer_state's 'loss_scale' must be [step_counter, "
                         f"scale > 0]. Received: {short_repr(saved)}")
    optimizer.step_counter, optimizer.dynamic_scale = int(saved[0]), float(saved[1])


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
    state = {"iterations": int(optimizer._step_counter().value), "slots": optimizer.get_slot_state(index)}
    if hasattr(optimizer, "dynamic_scale"):  # a LossScaleOptimizer's own state
        state["loss_scale"] = [int(optimizer.step_counter), float(optimizer.dynamic_scale)]
    return {"compile_config": config, "optimizer_state": state}
