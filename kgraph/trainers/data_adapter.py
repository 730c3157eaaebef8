"""Turning user data (arrays, lists, dicts) into arrays and batches for training, packed as Keras packs them."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from kgraph.random import generator

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Literal, TypeAlias

    import numpy.typing as npt

    # `x`, `y` or `sample_weight` given as arrays: one array (or array-like), a list/tuple with one per model
    # input or output, or a dict of them by input or output name.
    ArrayData: TypeAlias = npt.ArrayLike | Sequence[npt.ArrayLike] | Mapping[str, npt.ArrayLike]
    # One array per model input or output, in the model's order (None where an output has no data).
    FlatArrays: TypeAlias = list[np.ndarray | None]
    # `shuffle`: True permutes the samples, "batch" the order of whole batches, False neither.
    Shuffle: TypeAlias = bool | Literal["batch"]
    # Rows to take: a slice or integer indices.
    RowIndex: TypeAlias = slice | npt.NDArray[np.integer[Any]] | Sequence[int]


def _as_array(x, what):
    if isinstance(x, np.ndarray):
        return x
    arr = np.asarray(x)
    if arr.dtype == object:
        raise TypeError(f"`{what}` must be numeric arrays. Received a value that NumPy reads as dtype=object.")
    return arr


def is_array(x: Any) -> bool:
    """Whether ``x`` is an array (a NumPy array or another object with a shape and a dtype)."""
    return isinstance(x, np.ndarray) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def as_arrays(data: Any, what: str, count: int | None = None) -> Any:
    """``data`` with NumPy array leaves (memory maps kept); a list of numbers, not of arrays, is one array."""
    # A list of `count` parts (one per model input or output) keeps its structure whatever its parts are.
    if data is None or isinstance(data, np.ndarray):
        return data
    if isinstance(data, dict):
        return {k: as_arrays(v, what) for k, v in data.items()}
    if isinstance(data, (list, tuple)) and data and (
            (count is not None and count > 1 and len(data) == count)
            or all(v is None or is_array(v) or isinstance(v, dict) for v in data)):
        return type(data)(as_arrays(v, what) for v in data)
    return _as_array(data, what)


def unpack_x_y_sample_weight(data: Any) -> tuple[Any, Any, Any]:
    """``(x, y, sample_weight)`` of one batch: a tuple (or list) of 1 to 3 parts, or ``x`` alone (Keras's)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if not 1 <= len(data) <= 3:
        raise ValueError("A batch must be `x`, or a tuple `(x,)`, `(x, y)` or `(x, y, sample_weight)`. "
                         f"Received a tuple of length {len(data)}.")
    return data + (None,) * (3 - len(data))


def pack_x_y_sample_weight(x: Any, y: Any = None, sample_weight: Any = None) -> Any:
    """The batch a step receives, as Keras packs it: ``x`` (``(x,)`` for a list), ``(x, y)`` or all three."""
    if y is None:
        return (x,) if isinstance(x, (list, tuple)) else x
    if sample_weight is None:
        return (x, y)
    return (x, y, sample_weight)


def flatten_by_names(data: ArrayData | None, names: Sequence[str], what: str) -> FlatArrays | None:
    """Match ``data`` (array, list/tuple, or dict keyed by ``names``) to the list ``names``."""
    if data is None:
        return None
    n = len(names)
    if isinstance(data, dict):
        unknown = [k for k in data if k not in names]
        if unknown:
            raise ValueError(f"Unknown key(s) in `{what}`: {unknown}. Expected keys: {list(names)}")
        missing = [k for k in names if k not in data]
        if missing and what == "x":
            raise ValueError(f"Missing key(s) in `{what}`: {missing}. Expected keys: {list(names)}")
        return [(_as_array(data[k], what) if k in data else None) for k in names]
    if isinstance(data, (list, tuple)) and n > 1:
        if len(data) != n:
            raise ValueError(f"`{what}` should hold {n} arrays (one per model {'input' if what == 'x' else 'output'}: "
                             f"{list(names)}), but it holds {len(data)}.")
        return [_as_array(d, what) if d is not None else None for d in data]
    if isinstance(data, (list, tuple)) and len(data) == 1 and isinstance(data[0], np.ndarray):
        return [data[0]]
    if n != 1:
        raise ValueError(f"`{what}` should hold {n} arrays (one per model {'input' if what == 'x' else 'output'}: "
                         f"{list(names)}), but a single array was passed.")
    return [_as_array(data, what)]


def check_cardinality(groups: Mapping[str, Sequence[np.ndarray | None]]) -> int:
    """All arrays in ``groups`` ({"x": [...], "y": [...]}) must have the same number of samples."""
    sizes = {what: [len(a) for a in arrays if a is not None] for what, arrays in groups.items() if arrays}
    flat = {s for values in sizes.values() for s in values}
    if len(flat) > 1:
        detail = "\n".join(f"  {what} sizes: {', '.join(map(str, values))}" for what, values in sizes.items())
        raise ValueError(f"Data cardinality is ambiguous. Make sure all arrays contain the same number of "
                         f"samples.\n{detail}")
    if not flat:
        raise ValueError("No data was provided: `x` is empty.")
    return flat.pop()


def class_weights_to_sample_weights(y: npt.ArrayLike, class_weight: Mapping[int, float]) -> np.ndarray:
    """Per-sample weights from a ``{class: weight}`` dict, for sparse or one-hot labels."""
    y = np.asarray(y)
    labels = y.argmax(axis=-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y)).astype(np.int64)
    table = np.ones(max(int(labels.max()) + 1, max(class_weight) + 1), dtype=np.float64)
    for cls, weight in class_weight.items():
        table[int(cls)] = weight
    return table[labels]


def split_validation(arrays: Sequence[np.ndarray | None], validation_split: float) -> tuple[FlatArrays, FlatArrays]:
    """Split the last ``validation_split`` fraction off every array (before any shuffling)."""
    if not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1. Received: {validation_split}")
    n = len(next(a for a in arrays if a is not None))
    cut = int(n * (1.0 - validation_split))
    if cut == 0 or cut == n:
        raise ValueError(f"`validation_split={validation_split}` leaves no training or no validation samples "
                         f"out of {n}.")
    train = [a[:cut] if a is not None else None for a in arrays]
    val = [a[cut:] if a is not None else None for a in arrays]
    return train, val


def batches(n: int, batch_size: int, shuffle: Shuffle) -> list[np.ndarray]:
    """Index arrays, one per batch, over ``n`` samples.

    shuffle: ``True`` permutes the samples, ``"batch"`` permutes the order of
        whole batches (rows within a batch stay contiguous; a last, smaller
        batch stays last), ``False`` keeps the order.
    """
    if shuffle == "batch":
        starts = np.arange(0, n - n % batch_size, batch_size)
        starts = np.concatenate([generator().permutation(starts), np.arange(len(starts) * batch_size, n, batch_size)])
        return [np.arange(start, min(start + batch_size, n)) for start in starts]
    order = generator().permutation(n) if shuffle else np.arange(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def _file_layout(a):
    """``(path, byte offset of row 0, bytes per row, bytes between rows)`` of a read-only memory map, else None.

    Only C-ordered rows of a map opened with ``mode="r"`` qualify; views of one
    (``mm[1000:]``) keep their position in the file.
    """
    if not isinstance(a, np.memmap) or not hasattr(os, "preadv") or a.ndim == 0 or a.strides[0] <= 0:
        return None
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    if not isinstance(root, np.memmap) or root.mode != "r" or not root.filename:
        return None
    row = np.lib.stride_tricks.as_strided(a, shape=a.shape[1:], strides=a.strides[1:])
    if not row.flags.c_contiguous:
        return None
    address = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return root.filename, root.offset + address, a.itemsize * row.size, a.strides[0]


def read_rows(a: np.ndarray, index: RowIndex) -> np.ndarray:
    """``a[index]`` as a new array; rows of a read-only memory map are read from its file.

    Reading with ``preadv`` leaves the map untouched, so a pass over a file much
    larger than memory keeps only the current batch resident.
    """
    layout = _file_layout(a)
    if layout is None:
        return a[index]
    path, start, row_bytes, stride = layout
    rows = np.arange(*index.indices(len(a))) if isinstance(index, slice) else np.asarray(index, dtype=np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= len(a)):
        raise IndexError(f"Row index out of range for a memory map of {len(a)} rows. Received: {rows.min()} to "
                         f"{rows.max()}")
    out = np.empty((len(rows),) + a.shape[1:], dtype=a.dtype)
    if not len(rows):
        return out
    flat = out.reshape(-1).view(np.uint8).reshape(len(rows), row_bytes)
    # Runs of consecutive rows are one read each when rows are packed in the file.
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1 if stride == row_bytes else np.arange(1, len(rows))
    fd = os.open(path, os.O_RDONLY)
    try:
        for first, end in zip(np.concatenate([[0], breaks]), np.concatenate([breaks, [len(rows)]])):
            buffer = memoryview(flat[first:end].reshape(-1))
            offset, done = start + int(rows[first]) * stride, 0
            while done < len(buffer):
                got = os.preadv(fd, [buffer[done:]], offset + done)
                if got <= 0:
                    raise OSError(f"Unexpected end of file while reading rows of the memory map {path!r}.")
                done += got
    finally:
        os.close(fd)
    return out


def take(arrays: Sequence[np.ndarray | None], index: RowIndex) -> FlatArrays:
    return [read_rows(a, index) if a is not None else None for a in arrays]
