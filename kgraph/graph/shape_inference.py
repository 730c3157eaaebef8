"""Output specs of an eager function, found by running it on placeholder arrays.

Unknown dimensions (``None``) are set to 83 in a first run and to 89 in a
second; output dimensions that differ between the runs are unknown. Known
dimensions are used as they are, so the result is exact for any function that
runs on arrays. Placeholders are zeros; warnings from the placeholder values
(log of zero, division by zero) are silenced, and so are checks of values in layers (an
``Embedding``'s index range: ``on_placeholders``), since the values mean nothing.
"""
import threading
import warnings

import numpy as np

from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor

_SIZES = (83, 89)
class _State(threading.local):
    sizes = ()  # a class default: reading an absent thread-local attribute raises (and catches) an AttributeError


_state = _State()


def on_placeholders():
    """The placeholder size of unknown dimensions while this thread runs a function on placeholder arrays, else
    None. Layers skip checks of values then, and a model built meanwhile (a Sequential built by its first call)
    takes dimensions of that size as unknown."""
    sizes = _state.sizes
    return sizes[-1] if sizes else None


def _placeholder(tensor, size):
    shape = tuple(size if d is None else d for d in tensor.shape)
    return np.zeros(shape, dtype=tensor.dtype)


def _run(fn, args, kwargs, size):
    fill = lambda v: _placeholder(v, size) if isinstance(v, KerasTensor) else v  # noqa: E731
    args = tree.map_structure(fill, list(args))
    kwargs = tree.map_structure(fill, kwargs)
    if "sizes" not in _state.__dict__:
        _state.sizes = []
    _state.sizes.append(size)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    finally:
        _state.sizes.pop()


def output_spec(fn, args, kwargs, name):
    """KerasTensors with the shapes and dtypes of ``fn(*args, **kwargs)`` for KerasTensor arguments.

    Args:
        fn: the eager function (it receives NumPy arrays where the KerasTensors were).
        name: the operation's name, for the KerasTensors and for error messages.
    """
    tensors = [t for t in tree.flatten([list(args), kwargs]) if isinstance(t, KerasTensor)]
    unknown = any(d is None for t in tensors for d in t.shape)
    try:
        first = _run(fn, args, kwargs, _SIZES[0])
        second = _run(fn, args, kwargs, _SIZES[1]) if unknown else first
    except Exception as err:  # the user's function: any failure is reported with the specs it got
        specs = ", ".join(f"shape={t.shape}, dtype={t.dtype}" for t in tensors)
        raise ValueError(f"Could not infer the output of '{name}' for symbolic inputs ({specs}): running it on "
                         f"placeholder arrays raised {type(err).__name__}: {err}") from err
    leaves_a, leaves_b = tree.flatten(first), tree.flatten(second)
    outs = []
    for i, (a, b) in enumerate(zip(leaves_a, leaves_b)):
        if not isinstance(a, (np.ndarray, np.generic)):
            outs.append(a)
            continue
        shape = tuple(da if da == db else None for da, db in zip(np.shape(a), np.shape(b)))
        outs.append(KerasTensor(shape, dtype=a.dtype.name, name=name if len(leaves_a) == 1 else f"{name}_{i}"))
    return tree.pack_sequence_as(first, outs)
