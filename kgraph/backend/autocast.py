"""Keras's AutocastScope: inside a ``mixed_float16`` layer's call, its float32 Variables are read as float16.

``kgraph.backend.autodiff._value`` (how every op reads a Variable) consults ``_autocast.dtype``; layers enter
``autocast`` around their ``call`` (``kgraph.layers.layer``).
"""
import contextlib
import threading

import numpy as np


class _State(threading.local):
    """``dtype``: the compute dtype Variables are read in, inside a mixed-policy layer; None elsewhere (a class
    default: every op reads it, and a thread-local attribute that is absent costs a raised AttributeError)."""

    dtype = None


_autocast = _State()


@contextlib.contextmanager
def autocast(dtype):
    """Within it, floating Variables of another float type are read as ``dtype`` by every op (Keras's
    AutocastScope: a ``mixed_float16`` layer's float32 weights take part in its float16 computation). The tape
    records the Variable's own array, so its gradient comes back in the Variable's dtype."""
    previous = getattr(_autocast, "dtype", None)
    _autocast.dtype = None if dtype is None else np.dtype(dtype)
    try:
        yield
    finally:
        _autocast.dtype = previous
