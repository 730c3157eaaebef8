"""The structure of shapes a layer's ``compute_output_shape`` returns: one shape, or lists, tuples and dicts of them."""
import numpy as np


def is_shape(x):
    """Whether ``x`` is one shape: a tuple of ints and Nones."""
    return isinstance(x, tuple) and all(d is None or isinstance(d, (int, np.integer)) for d in x)


def shape_leaves(structure):
    """The shapes of ``structure`` in order (a dict's by sorted key)."""
    if is_shape(structure):
        return [structure]
    if isinstance(structure, dict):
        return [s for k in sorted(structure) for s in shape_leaves(structure[k])]
    return [s for item in structure for s in shape_leaves(item)]


def pack_shapes(structure, it):
    """``structure`` with each shape replaced by the next item of ``it`` (``shape_leaves``' order)."""
    if is_shape(structure):
        return next(it)
    if isinstance(structure, dict):
        filled = {k: pack_shapes(structure[k], it) for k in sorted(structure)}
        return {k: filled[k] for k in structure}
    return type(structure)(pack_shapes(s, it) for s in structure)
