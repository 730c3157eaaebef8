"""The ``.keras`` zip archive, read in memory: members are size-checked before any byte is decompressed.

Nothing is extracted to disk but the assets of a layer whose own ``load_assets`` reads them (into a temporary
directory of its own, see ``keras_file``). Refused before reading: unsafe member names (absolute, ``..``, backslashes,
drive letters), duplicate names, too many members, declared sizes over the limits, and members whose declared
size is far larger than what is stored (decompression bombs). A member that decompresses to more than it
declared is refused while reading.
"""
from __future__ import annotations

import io
import json
import os
import zipfile
import zlib
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

CONFIG = "config.json"
METADATA = "metadata.json"
WEIGHTS = "model.weights.h5"
ASSETS = "assets/"
MAX_MEMBERS = 256
MAX_JSON_BYTES = 64 << 20
MAX_WEIGHTS_BYTES = 16 << 30
MAX_RATIO = 200  # deflate needs ratios near 1,000 only for long runs of one byte, never for real weights or JSON
RATIO_FLOOR_BYTES = 1 << 20
_CHUNK = 1 << 20


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


def _read_member(zf, name, limit, source):
    info = zf.getinfo(name)
    if info.file_size > limit:
        raise ValueError(f"Refusing to load '{source}': member {name!r} declares {info.file_size} bytes, over the "
                         f"limit of {limit} for it.")
    out = io.BytesIO()
    with zf.open(info) as f:
        while True:
            chunk = f.read(_CHUNK)
            if not chunk:
                break
            if out.tell() + len(chunk) > info.file_size:
                raise ValueError(f"Refusing to load '{source}': member {name!r} decompresses to more than the "
                                 f"{info.file_size} bytes it declares.")
            out.write(chunk)
    return out.getvalue()


def _json(payload, name, source):
    try:
        value = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"Cannot load '{source}': its {name} is not valid JSON ({err}).") from None
    if not isinstance(value, dict):
        raise ValueError(f"Cannot load '{source}': its {name} must hold a JSON object. "
                         f"Received: {type(value).__name__}")
    return value


class Archive(NamedTuple):
    """The members of a ``.keras`` archive: its JSON configs, its weights file, its assets by archive path."""

    config: dict[str, Any]
    metadata: dict[str, Any]
    weights: bytes | None
    assets: dict[str, bytes]


def read_archive(filepath: os.PathLike[str] | str) -> Archive:
    """The members of a ``.keras`` file, read safely in memory."""
    source = os.fspath(filepath)
    if not os.path.exists(source):
        raise FileNotFoundError(f"No file or directory found at {source}")
    try:
        with zipfile.ZipFile(source) as zf:
            names = _check_members(zf, source)
            if CONFIG not in names:
                raise ValueError(f"Cannot load '{source}': it is not a .keras archive (no {CONFIG}). "
                                 f"Received members: {sorted(names)[:10]}")
            config = _json(_read_member(zf, CONFIG, MAX_JSON_BYTES, source), CONFIG, source)
            metadata = _json(_read_member(zf, METADATA, MAX_JSON_BYTES, source), METADATA, source) \
                if METADATA in names else {}
            weights = _read_member(zf, WEIGHTS, MAX_WEIGHTS_BYTES, source) if WEIGHTS in names else None
            assets = {name: _read_member(zf, name, MAX_JSON_BYTES, source) for name in sorted(names)
                      if name.startswith(ASSETS) and not name.endswith("/")}
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as err:
        raise ValueError(f"Cannot load '{source}': the .keras archive is truncated or corrupt "
                         f"({type(err).__name__}: {err}).") from None
    return Archive(config, metadata, weights, assets)


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
