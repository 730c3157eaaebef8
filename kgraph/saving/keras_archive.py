"""The ``.keras`` zip archive: members are size-checked before any byte is decompressed.

Its JSON members and assets are read in memory; the weights file is decompressed, streamed, into a temporary file
(``extract_weights``) once the rebuilt model says how many bytes it may need. Nothing else is extracted to disk
but the assets of a layer whose own ``load_assets`` reads them (into a temporary directory of its own, see
``keras_file``). Refused before reading: unsafe member names (absolute, ``..``, backslashes,
drive letters), duplicate names, too many members, declared sizes over the limits, and members whose declared
size is far larger than what is stored (decompression bombs). A member that decompresses to more than it
declared is refused while reading.
"""
from __future__ import annotations

import io
import json
import os
import struct
import zipfile
import zlib
from typing import TYPE_CHECKING, NamedTuple

from kgraph.saving.file_limits import check_structure, short_repr, short_text

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = "model.weights.h5"
ASSETS = "assets/"
MAX_MEMBERS = 256
MAX_JSON_BYTES = 64 << 20
MAX_WEIGHTS_BYTES = 16 << 30
MAX_ASSETS_BYTES = 256 << 20  # in all: vocabularies and the like, read only for a layer that loads assets
MAX_RATIO = 200  # deflate needs ratios near 1,000 only for long runs of one byte, never for real weights or JSON
RATIO_FLOOR_BYTES = 1 << 20
_CHUNK = 1 << 20
# What zipfile raises for a damaged archive (RuntimeError: an encrypted member; struct.error: a short header).
_CORRUPT = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, KeyError, OverflowError, RuntimeError,
            struct.error)


def unsafe_name(name: str) -> bool:
    """True for a member name that is empty, absolute or leaves the archive (``..``, backslashes, drives)."""
    parts = name.split("/")
    return (not name or "\\" in name or "\x00" in name or name.startswith("/") or ":" in parts[0]
            or any(part in ("..", ".") for part in parts))


def _check_members(zf, source):
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ValueError(f"Refusing to load '{source}': the archive has {len(infos)} members; a .keras archive "
                         f"has at most {MAX_MEMBERS}.")
    seen = set()
    for info in infos:
        if unsafe_name(info.filename):
            raise ValueError(f"Refusing to load '{source}': the archive member name {info.filename!r} is absolute "
                             "or leaves the archive (path traversal).")
        if info.filename in seen:
            raise ValueError(f"Refusing to load '{source}': the archive holds {info.filename!r} twice.")
        seen.add(info.filename)
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ValueError(f"Refusing to load '{source}': member {info.filename!r} declares {info.file_size} "
                             f"bytes but stores {info.compress_size} (a ratio over {MAX_RATIO}: a decompression "
                             "bomb).")
    total = sum(info.file_size for info in infos)
    if total > MAX_JSON_BYTES * 2 + MAX_WEIGHTS_BYTES:
        raise ValueError(f"Refusing to load '{source}': its members declare {total} bytes in all, over the "
                         f"limit of {MAX_JSON_BYTES * 2 + MAX_WEIGHTS_BYTES}.")
    return seen


def _stream_member(zf, name, limit, source, out):
    """Decompress member ``name`` into ``out`` chunk by chunk, never past ``limit`` nor past its declared size."""
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise ValueError(f"Refusing to load '{source}': member {name!r} declares {info.file_size} bytes, over the "
                         f"limit of {limit} for it.")
    written = 0
    with zf.open(info) as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            if written > info.file_size:
                raise ValueError(f"Refusing to load '{source}': member {name!r} decompresses to more than the "
                                 f"{info.file_size} bytes it declares.")
            out.write(chunk)


def _read_member(zf, name, limit, source):
    out = io.BytesIO()
    _stream_member(zf, name, limit, source, out)
    return out.getvalue()


def _json(payload, name, source):
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"Cannot load '{source}': its {name} is not valid JSON ({err}).") from None
    except RecursionError:
        raise ValueError(f"Refusing to load '{source}': its {name} nests lists and objects too deeply.") from None
    if not isinstance(value, dict):
        raise ValueError(f"Cannot load '{source}': its {name} must hold a JSON object. "
                         f"Received: {type(value).__name__}")
    check_structure(value, source, name)
    return value


class Archive(NamedTuple):
    """The members of a ``.keras`` archive: its JSON configs, the size its weights file declares (None without
    one; ``extract_weights`` reads it), the sizes of its assets by archive path (``read_assets`` reads them)."""

    config: dict[str, Any]
    metadata: dict[str, Any]
    weights_size: int | None
    assets: dict[str, int]


def _corrupt(source, err):
    return ValueError(f"Cannot load '{source}': the .keras archive is truncated or corrupt "
                      f"({type(err).__name__}: {short_text(err)}).")


def read_archive(filepath: os.PathLike[str] | str) -> Archive:
    """The JSON members and assets of a ``.keras`` file, read safely in memory; the weights are left in it."""
    source = os.fspath(filepath)
    if not os.path.exists(source):
        raise FileNotFoundError(f"No file or directory found at {source}")
    try:
        with zipfile.ZipFile(source) as zf:
            names = _check_members(zf, source)
            if CONFIG not in names:
                raise ValueError(f"Cannot load '{source}': it is not a .keras archive (no {CONFIG}). "
                                 f"Received members: {short_repr(sorted(names))}")
            config = _json(_read_member(zf, CONFIG, MAX_JSON_BYTES, source), CONFIG, source)
            metadata = _json(_read_member(zf, METADATA, MAX_JSON_BYTES, source), METADATA, source) \
                if METADATA in names else {}
            weights = zf.getinfo(WEIGHTS).file_size if WEIGHTS in names else None
            assets = {name: zf.getinfo(name).file_size for name in sorted(names)
                      if name.startswith(ASSETS) and not name.endswith("/")}
    except _CORRUPT + (OSError,) as err:
        if isinstance(err, FileNotFoundError):
            raise
        raise _corrupt(source, err) from None
    return Archive(config, metadata, weights, assets)


def read_assets(filepath: os.PathLike[str] | str, names: Iterable[str]) -> dict[str, bytes]:
    """The bytes of the asset members ``names``, refused if they declare more than ``MAX_ASSETS_BYTES`` in all."""
    source = os.fspath(filepath)
    try:
        with zipfile.ZipFile(source) as zf:
            _check_members(zf, source)
            infos = [zf.getinfo(name) for name in names]
            total = sum(info.file_size for info in infos)
            if total > MAX_ASSETS_BYTES:
                raise ValueError(f"Refusing to load '{source}': its assets declare {total} bytes in all, over the "
                                 f"limit of {MAX_ASSETS_BYTES}.")
            return {info.filename: _read_member(zf, info.filename, MAX_ASSETS_BYTES, source) for info in infos}
    except _CORRUPT as err:
        raise _corrupt(source, err) from None


def extract_weights(filepath: os.PathLike[str] | str, folder: str, limit: int) -> str:
    """Decompress the archive's weights file into ``folder``, streamed, refused past ``limit`` bytes; its path."""
    source = os.fspath(filepath)
    target = os.path.join(folder, WEIGHTS)
    try:
        with zipfile.ZipFile(source) as zf, open(target, "wb") as out:
            _check_members(zf, source)
            _stream_member(zf, WEIGHTS, limit, source, out)
    except _CORRUPT as err:
        raise _corrupt(source, err) from None
    return target


def archive_bytes(config: Mapping[str, Any], metadata: Mapping[str, Any], weights: bytes,
                  assets: Mapping[str, bytes] | None = None) -> bytes:
    """The bytes of a ``.keras`` archive with these members (stored uncompressed, as Keras writes them)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr(METADATA, json.dumps(metadata))
        zf.writestr(CONFIG, json.dumps(config))
        zf.writestr(WEIGHTS, weights)
        for name, payload in (assets or {}).items():
            zf.writestr(name, payload)
    return buffer.getvalue()
