"""Keras's saving hooks of a layer beyond its weights: ``save_own_variables``/``load_own_variables`` and
``save_assets``/``load_assets``, called with what Keras gives them (a key -> array store, a directory path).

A layer is found at its Keras path (``layers/text_vectorization``, ``""`` for the model): the path of its group in
a weights file, and of its folder under ``assets/`` in a ``.keras`` archive. Only a layer whose own class defines a
hook has it called; assets are written to and read from a private temporary directory.
"""
from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING

from kgraph.saving.keras_archive import unsafe_name
from kgraph.saving.keras_weights import owned_groups, user_hook

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    import numpy as np

    from kgraph.models.model import Model

MAX_ASSET_FILES = 256


def _hooked(model, name, complete):
    """``[(path, bound hook)]`` for each layer of ``model`` whose class defines ``name``."""
    found, seen = [], set()
    for path, _, owner in owned_groups(model, complete=complete):
        hook = user_hook(owner, name)
        if hook is not None and id(owner) not in seen:
            seen.add(id(owner))
            found.append((path, hook))
    return found


def saved_assets(model: Model, complete: bool = True) -> dict[str, bytes]:
    """``{name under the assets folder: bytes}`` of what each layer's ``save_assets(dir_path)`` writes."""
    # Each layer writes into its own folder: ``layers/text_vectorization/vocabulary.txt``.
    out = {}
    for path, hook in _hooked(model, "save_assets", complete):
        with tempfile.TemporaryDirectory(prefix="kgraph-assets-") as folder:
            hook(folder)
            for root, _, names in os.walk(folder):
                for name in names:
                    full = os.path.join(root, name)
                    with open(full, "rb") as f:
                        out[_join(path, os.path.relpath(full, folder).replace(os.sep, "/"))] = f.read()
        if len(out) > MAX_ASSET_FILES:
            raise ValueError(f"The layers of model '{model.name}' saved {len(out)} asset files; at most "
                             f"{MAX_ASSET_FILES} fit in a model file.")
    return out


def asset_readers(model: Model, names: Iterable[str], complete: bool = True) -> list[str]:
    """Those of the asset ``names`` that a layer of ``model`` would be given by ``load_assets`` (in its folder)."""
    prefixes = [f"{path}/" if path else "" for path, _ in _hooked(model, "load_assets", complete)]
    return [name for name in names if any(name.startswith(prefix) for prefix in prefixes)]


def load_assets(model: Model, assets: dict[str, bytes], complete: bool = True) -> set[str]:
    """Call each layer's ``load_assets(dir_path)`` on a copy of its folder; return the names handed to a layer."""
    for name, payload in assets.items():
        if not isinstance(name, str) or unsafe_name(name) or not isinstance(payload, bytes):
            raise ValueError(f"Refusing to load the asset {name!r}: an asset is a file (bytes) under the assets "
                             "folder, and its name may not be absolute nor leave the folder.")
    used = set()
    for path, hook in _hooked(model, "load_assets", complete):
        prefix = f"{path}/" if path else ""
        files = {name[len(prefix):]: payload for name, payload in assets.items() if name.startswith(prefix)}
        if not files:
            continue
        with tempfile.TemporaryDirectory(prefix="kgraph-assets-") as folder:
            for name, payload in files.items():
                target = os.path.join(folder, *name.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as f:
                    f.write(payload)
            hook(folder)
        used.update(prefix + name for name in files)
    return used


def _join(path, name):
    return f"{path}/{name}" if path else name


def saved_own_variables(model: Model) -> dict[str, dict[str, np.ndarray]]:
    """``{layer path: store}`` that each layer's ``save_own_variables(store)`` fills."""
    out = {}
    for path, hook in _hooked(model, "save_own_variables", complete=False):
        store = {}
        hook(store)
        out[path] = store
    return out


def load_own_variables(model: Model, stores: dict[str, dict[str, Any]]) -> None:
    """Call each layer's ``load_own_variables(store)`` with the store saved for its path."""
    for path, hook in _hooked(model, "load_own_variables", complete=False):
        if path in stores:
            hook(stores[path])
