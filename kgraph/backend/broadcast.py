"""Summing a broadcast cotangent back to its input's shape."""
import numpy as np


def unbroadcast(g, shape):
    """Sum ``g`` over the axes broadcasting added, so that it has ``shape``.

    Args:
        g: a cotangent of a broadcast result.
        shape: the shape of the input that was broadcast.
    """
    shape = tuple(shape)
    if g.shape == shape:
        return g
    extra = g.ndim - len(shape)
    if extra < 0 or any(d != 1 and d != gd for d, gd in zip(shape, g.shape[extra:])):
        raise ValueError(
            f"Cannot unbroadcast a cotangent to the input's shape: the input shape does not "
            f"broadcast to the cotangent shape. Received: g.shape={g.shape}, shape={shape}"
        )
    axes = tuple(range(extra)) + tuple(
        extra + i for i, d in enumerate(shape) if d == 1 and g.shape[extra + i] != 1
    )
    return np.sum(g, axis=axes).reshape(shape)
