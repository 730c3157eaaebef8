"""Cotangents: the seeds of a gradient, a broadcast cotangent summed back to its input's shape, and the zero
view an op may take for an output nothing read."""
import numpy as np

from kgraph.backend.tape_array import TapeArray


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


def input_cotangent(ct, a, name):
    """A VJP's cotangent for input ``a`` (an array, a value, or a zero-argument callable computing it) as an
    array of ``a``'s shape and dtype; None where the callable gives None. ``name``: the op, for errors."""
    if type(ct) is not np.ndarray:
        if callable(ct):
            ct = ct()
            if ct is None:
                return None
        if not isinstance(ct, np.ndarray):
            ct = np.asarray(ct)
    if ct.shape != a.shape:
        try:
            ct = unbroadcast(ct, a.shape)
        except ValueError as e:
            raise ValueError(f"In the VJP of '{name}': {e}") from None
    if ct.dtype != a.dtype:
        ct = ct.astype(a.dtype)
    return ct


def seed_cotangents(targets, seeds, relevant):
    """The cotangents of the targets a source reaches: ``output_gradients`` (checked) or ones."""
    cotangents = {}
    for t, seed in zip(targets, seeds):
        if id(t) not in relevant:
            continue
        if seed is None:
            seed = np.empty(t.shape, t.dtype)  # np.ones without its Python wrapper: a loss's seed, every step
            seed.fill(1)
        else:
            seed = seed if isinstance(seed, TapeArray) else np.asarray(seed)
            if seed.shape != t.shape:
                raise ValueError(
                    "output_gradients must have the shape of target. "
                    f"Received: target.shape={t.shape}, output_gradients.shape={seed.shape}"
                )
            seed = seed.astype(t.dtype, copy=False)
        prev = cotangents.get(id(t))
        cotangents[id(t)] = seed if prev is None else prev + seed
    return cotangents


def zero_view(shape, dtype):
    """A read-only array of ``shape`` whose every element is one zero (all strides 0).

    A multi-output op whose VJP accepts it for an output nothing read sets ``op._kgraph_primitive.zeros =
    zero_view``: no zeros the size of that output are written, and ``all_zero`` tells the VJP in one read.
    """
    return np.broadcast_to(np.zeros((), dtype), shape)


def all_zero(g):
    """Whether every element of ``g`` is zero (NaN is not); one read for an array of all strides 0."""
    if g.size and not any(g.strides):
        return not g[(0,) * g.ndim]
    return not g.any()
