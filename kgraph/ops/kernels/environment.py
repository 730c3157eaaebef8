"""Environment variables read on hot paths (at every kernel call), without ``os.environ.get``'s exception.

``os.environ.get`` of an unset name raises and catches a ``KeyError`` inside ``Mapping.get``: about 0.7 µs,
read by every compiled-kernel decision (a dozen a training step). CPython's ``os.environ`` keeps its
encoded keys and values in a dict (``_data``, with ``encodekey`` and ``decodevalue``); where that is so the
lookup is one dict read (about 0.05 µs) of the same, live mapping that ``os.environ`` and ``setenv`` change.
Anywhere else (another Python, or ``os.environ`` replaced by another mapping) it is ``os.environ.get``.
"""
import os

__all__ = ["read"]

_environ = os.environ
_data = getattr(_environ, "_data", None)
_encode = getattr(_environ, "encodekey", None)
_decode = getattr(_environ, "decodevalue", None)
_fast = isinstance(_data, dict) and callable(_encode) and callable(_decode)
_keys = {}  # name -> its encoded key


def read(name):
    """``os.environ.get(name)``: the variable's value, or None where it is not set."""
    environ = os.environ
    if not _fast or environ is not _environ:
        return environ.get(name)
    key = _keys.get(name)
    if key is None:
        key = _keys[name] = _encode(name)
    raw = _data.get(key)
    return None if raw is None else _decode(raw)
