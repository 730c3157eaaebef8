"""Loading a model file for the command line: each bad file, field or module is one clear error.

The file is read only through kgraph's restricted unpickler (plain data and
numeric arrays); its top-level fields are checked before kgraph rebuilds
the model, so a malformed payload is named, not a traceback.
"""
from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING

import numpy as np

from kgraph import saving
from kgraph.saving.file_limits import check_structure, short_repr, short_text

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from kgraph.models.model import Model


class LoadError(ValueError):
    """A model file or a module named on the command line cannot be loaded."""


def import_modules(names: Iterable[str]) -> None:
    """Import each module named with ``--import`` (the current directory importable, as with ``python -m``).

    A name ending in ``.py`` is a file: the training script itself, imported under its file's name (so its
    ``if __name__ == "__main__":`` part does not run), whose classes then stand for the ones a model saved
    from ``__main__`` names."""
    if os.getcwd() not in [os.path.abspath(p or os.curdir) for p in sys.path]:
        sys.path.insert(0, os.getcwd())
    for name in names:
        try:
            if name.endswith(".py"):
                _import_script(name)
            else:
                importlib.import_module(name)
        except BaseException as err:  # noqa: BLE001  (a user module may raise anything, SystemExit included)
            if isinstance(err, KeyboardInterrupt):
                raise
            raise LoadError(f"Cannot import module '{name}' given with --import: {_describe(err)}. Expected an "
                            "importable module (a .py file in the current directory or a package on the "
                            "Python path) that defines the model's custom layers.") from None


def _import_script(path: str) -> None:
    """Import the script at ``path`` as a module named after its file; its classes answer for ``__main__``."""
    import importlib.util

    from kgraph.saving.registration import stand_in_for_main
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no file '{path}'")
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_kgraph_script_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # the script's own imports resolve beside it
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    stand_in_for_main(name)


def read_payload(path: os.PathLike[str] | str) -> dict[str, Any]:
    """The unpickled payload of the model file ``path``, its top-level fields checked."""
    if os.path.isdir(path):
        raise LoadError(f"Cannot load '{path}': it is a directory. Expected a model file written by model.save().")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise LoadError(f"Cannot load '{path}': {err.strerror or err}.") from None
    if not data:
        raise LoadError(f"Cannot load '{path}': the file is empty. Expected a model file written by model.save().")
    try:
        payload = saving.safe_loads(data, path)
        check_structure(payload, os.fspath(path), "model file")
    except ValueError as err:
        raise LoadError(_one_line(err)) from None
    _check_fields(path, payload)
    return payload


def _check_fields(path, payload):
    """Raise a LoadError naming the first top-level field of ``payload`` that is missing or of the wrong type."""
    if not isinstance(payload, dict) or payload.get("format") != saving.FORMAT:
        raise LoadError(f"Cannot load '{path}': it is not a kgraph model file (expected a dict with "
                        f"format='{saving.FORMAT}'; received {_kind(payload)}).")
    expected = {"format_version": "an integer", "model": "a dict (the model's config)",
                "weights": "a list of arrays"}
    for key, what in expected.items():
        if key not in payload:
            raise LoadError(f"Cannot load '{path}': the model file has no '{key}' field (expected {what}).")
    version = payload["format_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise LoadError(f"Cannot load '{path}': 'format_version' must be an integer; received {_kind(version)}.")
    if version > saving.FORMAT_VERSION:
        raise LoadError(f"Cannot load '{path}': it was written by a newer kgraph (format {version}); this kgraph "
                        f"reads format {saving.FORMAT_VERSION}.")
    if not isinstance(payload["model"], dict):
        raise LoadError(f"Cannot load '{path}': 'model' must be a dict (the model's config); received "
                        f"{_kind(payload['model'])}.")
    weights = payload["weights"]
    if not isinstance(weights, list) or not all(isinstance(w, np.ndarray) for w in weights):
        raise LoadError(f"Cannot load '{path}': 'weights' must be a list of arrays; received {_kind(weights)}.")


def load(path: os.PathLike[str] | str) -> Model:
    """The kgraph model saved at ``path`` (a kgraph .pkl or a Keras 3 .keras archive), or a LoadError saying why not."""
    if os.path.isdir(path) or not str(path).endswith(".keras"):
        read_payload(path)  # a .keras archive is checked by kgraph's own reader
    import kgraph
    try:
        return kgraph.load_model(path, compile=False)
    except (OSError, MemoryError) as err:
        raise LoadError(f"Cannot load '{path}': {_describe(err)}.") from None
    except Exception as err:  # noqa: BLE001  (a user's layer may raise anything while it is rebuilt)
        if isinstance(err, ValueError) and str(err).startswith(("Cannot load", "Refusing to load")):
            raise LoadError(_one_line(err)) from None  # kgraph's loader named the file and the problem
        hint = " Name the module defining it with --import MODULE." if "Unknown layer class" in str(err) else ""
        raise LoadError(f"Cannot load '{path}': the model it describes cannot be rebuilt "
                        f"({_describe(err)}).{hint}") from None


def _describe(err):
    return _one_line(f"{type(err).__name__}: {err}")


def _one_line(text):
    return short_text(text, 2000)


def _kind(value):
    text = short_repr(value)  # bounded: a file's list may be a deep or self-sharing structure
    return f"{text if len(text) <= 40 else text[:37] + '...'} ({type(value).__name__})"
