"""Optional compiled kernels: fused elementwise loops, compiled by numba where it is installed.

NumPy makes one pass over memory per operation, and each pass of a small
array costs a call: Adam's update is 12 passes over every weight (SGD's with
momentum 4, RMSprop's 7 to 11), one LSTM or GRU step's gates a dozen or two calls,
a max pooling's maximum and gradient routing two passes per window tap. With numba installed (the ``fast`` extra:
``pip install "kgraph-engine[fast]"``) such sequences run as one loop each
(``kgraph.ops.kernels.fused``), in the same operations and order as the NumPy
code beside them, so values are the same element for element (the pooling's
gradient routing: every finite value; see ``fused_pool``); without numba
everything runs in NumPy as before. ``KGRAPH_COMPILED_KERNELS=0`` keeps NumPy
even where numba is installed (``1`` or unset: compiled where available).

numba compiles each kernel on its first call, about half a second each, and
keeps the machine code in ``__pycache__`` (or numba's user-wide cache where
that is read-only), so later processes load it in milliseconds. numba itself is imported on the first
kernel call with at least ``LOAD_WORK`` elements (never by ``import kgraph``, by
inference, or by small models).
"""
import importlib
import threading

import numpy as np

from kgraph.ops.kernels import environment

__all__ = ["LOAD_WORK", "VARIABLE", "constants", "flat", "kernels", "loaded", "usable"]

VARIABLE = "KGRAPH_COMPILED_KERNELS"
_ON = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}

# Loading numba costs about half a second and 110 MiB: a kernel call on fewer elements than this (1 MiB of
# float32) does not load it (NumPy computes the same values), so small models and scripts never pay for it; once
# it is loaded, every call uses it. Adam over this many elements saves about 0.2 ms a step. The digits CNN loads
# it for its first pooling (692k convolution cells at batch 128), whose compiled passes make its step 10-15 %
# faster (its weights alone, the largest 205k elements, would stay below).
LOAD_WORK = 1 << 18

_lock = threading.Lock()
_loaded = []  # [module or None] once numba's import has been tried
_setting = [None, True]  # the variable's last value, and what it meant


def _wanted():
    value = environment.read(VARIABLE)
    if value != _setting[0]:
        if value is not None and value.strip().lower() not in _ON:
            raise ValueError(f"{VARIABLE}={value!r}: expected 1 (compiled kernels where numba is installed) or 0 "
                             "(NumPy only)")
        _setting[:] = [value, True if value is None else _ON[value.strip().lower()]]
    return _setting[1]


def _load():
    with _lock:
        if not _loaded:
            try:
                fused = importlib.import_module("kgraph.ops.kernels.fused")
            except ImportError:  # numba absent, or a numba that does not work with this NumPy
                fused = None
            _loaded.append(fused)
    return _loaded[0]


def kernels(work=None):
    """The module of compiled kernels (``kgraph.ops.kernels.fused``), or None: numba is not installed or does
    not import, or ``KGRAPH_COMPILED_KERNELS=0``, or numba is not loaded yet and ``work`` (the elements a kernel
    would take) is below ``LOAD_WORK``."""
    if not _wanted():
        return None
    if _loaded:
        return _loaded[0]
    if work is not None and work < LOAD_WORK:
        return None
    return _load()


def loaded():
    """The compiled kernels if numba is loaded already (and they are not turned off), else None; never loads."""
    return _loaded[0] if _loaded and _wanted() else None


def constants(dtype, *values):
    """``values`` cast to ``dtype`` as NumPy casts a Python number used beside an array of that dtype, or None
    when one is not a Python int or float (a NumPy float64 scalar would widen NumPy's arithmetic instead)."""
    if any(type(v) not in (int, float) for v in values):
        return None
    return [dtype.type(v) for v in values]


def flat(*arrays):
    """Each array as a flat view (``usable`` arrays are C-contiguous); None as an empty array of the first's
    dtype (a slot the update does not use)."""
    empty = np.empty(0, dtype=arrays[0].dtype)
    return [empty if a is None else a.reshape(-1) for a in arrays]


def usable(*arrays):
    """Whether a kernel may take these arrays (None: an unused slot): C-contiguous, one float32 or float64 dtype."""
    dtype = arrays[0].dtype
    if dtype.kind != "f" or dtype.itemsize not in (4, 8):
        return False
    for a in arrays:  # a loop, not all() over a generator: called for every variable at every step
        if a is not None and (a.dtype != dtype or not a.flags.c_contiguous):
            return False
    return True
