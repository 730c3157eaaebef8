"""Bounds on what a model file may make kgraph build, checked before the work or the memory is spent.

A model file is small; what it describes need not be. Shared references in a pickle make a 700-byte file describe
millions of layers, a nested list a structure too deep for any recursive walk, a config a 20000 x 20000 ``Dense``
kernel the file holds no weights for. So, before anything is rebuilt:

- ``check_structure`` walks a loaded config or payload once, iteratively, counting every node as often as it is
  referenced (a shared sub-structure costs what its copies would), against ``MAX_DEPTH``, ``MAX_NODES`` and
  ``MAX_LAYERS``;
- ``WeightBudget`` is consulted by ``Layer.add_weight`` before each weight is allocated: the weights a config
  declares may not need more bytes than the file holds (``SLACK_BYTES`` aside), nor more than ``MAX_WEIGHT_BYTES``;
- ``short_repr`` gives a value's ``repr`` within a few hundred characters whatever the value's size or shape.
"""
from __future__ import annotations

import contextlib
import itertools
import math
import reprlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

MAX_DEPTH = 200  # nesting of lists and dicts; each model nested in another adds four levels
MAX_NODES = 2_000_000  # containers and values, each counted as often as it is referenced
MAX_LAYERS = 100_000  # Keras objects (``{"class_name", "config"}``), counted the same way
MAX_WEIGHT_BYTES = 16 << 30
SLACK_BYTES = 1 << 20  # weights a layer may create beyond what the file holds (a scratch variable, a counter)

class _ShortRepr(reprlib.Repr):
    """``reprlib``'s bounded repr, bytes included (``reprlib`` would write out a whole bytes value first)."""

    def repr_bytes(self, value: bytes, level: int) -> str:
        text = repr(value[:self.maxstring])
        return text if len(value) <= self.maxstring else f"{text}...({len(value)} bytes)"

    repr_bytearray = repr_bytes


_REPR = _ShortRepr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 80, 80
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6
_MAX_REPR = 300


def short_repr(value: Any) -> str:
    """``repr(value)`` in at most a few hundred characters: bounded in depth and items, so never slow."""
    text = _REPR.repr(value)
    return text if len(text) <= _MAX_REPR else text[:_MAX_REPR - 3] + "..."


def short_text(text: Any, limit: int = _MAX_REPR) -> str:
    """``str(text)`` on one line, in at most ``limit`` characters (an error message quoting a file's content)."""
    text = " ".join(str(text)[:limit * 4].split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _children(value):
    if isinstance(value, dict):
        return itertools.chain.from_iterable(value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return value
    return None


def check_structure(value: Any, source: str, what: str) -> None:
    """Refuse ``value`` (a loaded config or payload) if it is deeper, larger or holds more layers than the limits.

    Shared references count once per reference, so the cost of every later walk over ``value`` is bounded too.
    """
    stack: list[Iterator[Any]] = [iter((value,))]
    nodes = layers = 0
    while stack:
        for item in stack[-1]:
            nodes += 1
            if nodes > MAX_NODES:
                raise ValueError(f"Refusing to load '{source}': its {what} holds more than {MAX_NODES} values "
                                 "(shared references counted each time they are used).")
            children = _children(item)
            if children is None:
                continue
            if isinstance(item, dict) and "class_name" in item and "config" in item:
                layers += 1
                if layers > MAX_LAYERS:
                    raise ValueError(f"Refusing to load '{source}': its {what} describes more than {MAX_LAYERS} "
                                     "layers and objects (shared references counted each time they are used).")
            if len(stack) >= MAX_DEPTH:
                raise ValueError(f"Refusing to load '{source}': its {what} nests lists and dicts more than "
                                 f"{MAX_DEPTH} levels deep.")
            stack.append(iter(children))
            break
        else:
            stack.pop()


def array_bytes(value: Any) -> int:
    """Bytes of the distinct NumPy arrays in ``value`` (a list or dict of arrays, nested), each counted once."""
    seen, total, stack = set(), 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray):
            if id(item) not in seen:
                seen.add(id(item))
                total += item.nbytes
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


class WeightBudget:
    """The bytes of weights a model rebuilt from a file may allocate; ``reserve`` refuses a weight past them."""

    def __init__(self, held_bytes: int, source: str, held: str):
        # held: what the file holds its weights in, for the message ("the file's weights", ...)
        self.limit = min(held_bytes + SLACK_BYTES, MAX_WEIGHT_BYTES)
        self.used = 0
        self.source, self.held = source, held

    def reserve(self, shape: tuple[int, ...], dtype: str, layer: str) -> None:
        """Count one weight about to be created; a ValueError if the model now needs more than the limit."""
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        self.used += nbytes
        if self.used > self.limit:
            raise ValueError(f"Refusing to load '{self.source}': layer {short_repr(layer)} declares a weight of "
                             f"shape {short_repr(shape)} ({nbytes} bytes); with the weights before it the model "
                             f"needs {self.used} bytes, more than the {self.limit} bytes {self.held} can fill. "
                             "The config does not match the weights, or declares a model too large to load.")


@contextlib.contextmanager
def weights_limited(budget: WeightBudget) -> Iterator[WeightBudget]:
    """Within the block, every weight a layer creates is first counted against ``budget``."""
    from kgraph.layers.layer import weight_budget  # saving is imported by the graph before layers exist
    token = weight_budget.set(budget)
    try:
        yield budget
    finally:
        weight_budget.reset(token)
