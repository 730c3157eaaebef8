"""Shape, joining and indexing ops, named as in ``keras.ops``."""
import numpy as np

from kgraph.backend.autodiff import _value, primitive
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.ops.operations import op

__all__ = [
    "broadcast_to", "concatenate", "expand_dims", "flip", "getitem", "moveaxis", "ndim", "pad",
    "ravel", "repeat", "reshape", "roll", "shape", "split", "squeeze", "stack", "swapaxes", "take",
    "take_along_axis", "tile", "transpose", "unstack",
]


# shape and ndim are not ops (no @op): no node records them, so that they answer at once on KerasTensors too.
def shape(x):
    """Return the shape of ``x`` as a tuple of ints (``None`` for a KerasTensor's unknown dimensions; while the
    exporter traces a call, a symbolic int64 scalar read when the graph runs: ``shape_dim``)."""
    if isinstance(x, KerasTensor):
        from kgraph.graph.tracing import dynamic_shapes_active
        if None in x.shape and dynamic_shapes_active():
            return tuple(shape_dim(x, axis) if d is None else d for axis, d in enumerate(x.shape))
        return x.shape
    return np.shape(_value(x))


@op
@primitive(num_inputs=1)
def shape_dim(x, axis):
    """The size of ``x`` along ``axis`` as an int64 scalar (not a Keras op: ``shape`` gives it, in traced calls,
    for a size known only when the graph runs)."""
    return np.asarray(np.shape(x)[axis], dtype=np.int64), lambda g: None


def ndim(x):
    """Return the rank of ``x``."""
    return x.ndim if isinstance(x, KerasTensor) else np.ndim(_value(x))


def _back_to(x):
    return lambda g: g.reshape(x.shape)


@op
@primitive(num_inputs=1)
def reshape(x, newshape):
    """Give ``x`` a new shape with the same number of elements (one dim may be -1)."""
    x = np.asarray(x)
    try:
        out = np.reshape(x, newshape)
    except ValueError:
        raise ValueError(
            f"Cannot reshape {x.size} elements to the requested shape. "
            f"Received: x.shape={x.shape}, newshape={newshape}"
        ) from None
    return out, _back_to(x)


@op
@primitive(num_inputs=2)
def split_leading_axes(x, like, count=2):
    """``x`` with its first axis split into the first ``count`` axes of ``like`` (no gradient flows to ``like``).

    Not a Keras op: the inverse of merging leading axes (``reshape(y, (-1,) + rest)``) where those axes' sizes
    are unknown until run time, as in TimeDistributed over a sequence of any length.
    """
    x = np.asarray(x)
    lead = np.shape(like)[:count]
    if int(np.prod(lead)) != x.shape[0]:
        raise ValueError(f"Cannot split the first axis of x (size {x.shape[0]}) into {tuple(lead)}. "
                         f"Received: x.shape={x.shape}, like.shape={np.shape(like)}")
    return x.reshape(tuple(lead) + x.shape[1:]), lambda g: (g.reshape(x.shape), None)


@op
@primitive
def ravel(x):
    """Flatten ``x`` to one dimension."""
    x = np.asarray(x)
    return np.ravel(x), _back_to(x)


@op
@primitive(num_inputs=1)
def expand_dims(x, axis):
    """Insert size-1 axes at ``axis`` (an int or a tuple)."""
    x = np.asarray(x)
    return np.expand_dims(x, axis), _back_to(x)


@op
@primitive(num_inputs=1)
def squeeze(x, axis=None):
    """Remove size-1 axes (those listed in ``axis``, or all when None)."""
    x = np.asarray(x)
    return np.squeeze(x, axis=axis), _back_to(x)


@op
@primitive(num_inputs=1)
def transpose(x, axes=None):
    """Permute the axes of ``x`` (reverse them when ``axes`` is None)."""
    x = np.asarray(x)
    out = np.transpose(x, axes)
    inverse = None if axes is None else np.argsort([a % x.ndim for a in axes])
    return out, lambda g: np.transpose(g, inverse)


@op
@primitive(num_inputs=1)
def swapaxes(x, axis1, axis2):
    """Interchange two axes of ``x``."""
    return np.swapaxes(x, axis1, axis2), lambda g: np.swapaxes(g, axis1, axis2)


@op
@primitive(num_inputs=1)
def moveaxis(x, source, destination):
    """Move axes of ``x`` from ``source`` to ``destination`` positions."""
    return np.moveaxis(x, source, destination), lambda g: np.moveaxis(g, destination, source)


@op
@primitive(num_inputs=1)
def broadcast_to(x, shape):
    """Broadcast ``x`` to ``shape`` (a read-only view)."""
    x = np.asarray(x)
    try:
        out = np.broadcast_to(x, shape)
    except ValueError:
        raise ValueError(
            f"Cannot broadcast to the requested shape. Received: x.shape={x.shape}, shape={tuple(shape)}"
        ) from None
    return out, lambda g: g


@op
@primitive(num_inputs=1)
def flip(x, axis=None):
    """Reverse the order of elements along ``axis`` (all axes when None)."""
    return np.flip(x, axis), lambda g: np.flip(g, axis)


@op
@primitive(num_inputs=1)
def roll(x, shift, axis=None):
    """Roll elements along ``axis`` by ``shift`` (of the flattened array when None)."""
    back = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    return np.roll(x, shift, axis), lambda g: np.roll(g, back, axis)


@op
@primitive(list_input=True)
def concatenate(xs, axis=0):
    """Join a sequence of arrays along ``axis``."""
    arrays = [np.asarray(a) for a in xs]
    if not arrays:
        raise ValueError("concatenate needs at least one array. Received: xs=[]")
    try:
        out = np.concatenate(arrays, axis=axis)
    except ValueError:
        raise ValueError(
            "All arrays must have the same shape except along the concatenation axis. "
            f"Received: shapes={[a.shape for a in arrays]}, axis={axis}"
        ) from None
    if axis is None:
        bounds = np.cumsum([a.size for a in arrays])[:-1]
        return out, lambda g: tuple(p.reshape(a.shape) for p, a in zip(np.split(g, bounds), arrays))
    bounds = np.cumsum([a.shape[axis] for a in arrays])[:-1]
    return out, lambda g: tuple(np.split(g, bounds, axis=axis))


@op
@primitive(list_input=True)
def stack(x, axis=0):
    """Join a sequence of same-shape arrays along a new ``axis``."""
    arrays = [np.asarray(a) for a in x]
    try:
        out = np.stack(arrays, axis=axis)
    except ValueError:
        raise ValueError(
            f"All arrays must have the same shape to be stacked. Received: shapes={[a.shape for a in arrays]}"
        ) from None
    return out, lambda g: tuple(np.moveaxis(g, axis, 0))


@op
@primitive(num_inputs=1)
def split(x, indices_or_sections, axis=0):
    """Split ``x`` along ``axis`` into equal sections or at the given indices; returns a list."""
    x = np.asarray(x)
    try:
        out = np.split(x, indices_or_sections, axis=axis)
    except ValueError:
        raise ValueError(
            f"Cannot split into equal sections. Received: x.shape={x.shape}, "
            f"indices_or_sections={indices_or_sections}, axis={axis}"
        ) from None
    return out, lambda gs: np.concatenate(gs, axis=axis)


@op
@primitive(num_inputs=1)
def unstack(x, num=None, axis=0):
    """Split ``x`` into a list of arrays along ``axis``, removing that axis."""
    x = np.asarray(x)
    out = list(np.moveaxis(x, axis, 0))
    if num is not None and num != len(out):
        raise ValueError(
            f"num does not match the size of the axis. Received: num={num}, x.shape={x.shape}, axis={axis}"
        )
    return out, lambda gs: np.stack(gs, axis=axis)


def _integer_indices(indices):
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iub":
        indices = indices.astype(np.int64)
    return indices


@op
@primitive
def take(x, indices, axis=None):
    """Gather elements of ``x`` at ``indices`` along ``axis`` (flattened when None).

    The gradient scatter-adds into ``x``, so repeated indices accumulate.
    """
    x = np.asarray(x)
    idx = _integer_indices(indices)
    out = np.take(x, idx, axis=axis)

    def vjp(g):
        grad = np.zeros(x.shape, dtype=g.dtype)
        if axis is None:
            np.add.at(grad.reshape(-1), idx, g)
        else:
            np.add.at(grad, (slice(None),) * (axis % x.ndim) + (idx,), g)
        return grad, None

    return out, vjp


@op
@primitive
def take_along_axis(x, indices, axis=None):
    """Gather with ``indices`` of the same rank as ``x`` along ``axis`` (flattened when None)."""
    x = np.asarray(x)
    idx = _integer_indices(indices)
    out = np.take_along_axis(x, idx, axis=axis)

    def vjp(g):
        grad = np.zeros(x.shape, dtype=g.dtype)
        if axis is None:
            np.add.at(grad.reshape(-1), idx, g)
            return grad, None
        ax = axis % x.ndim
        index = []
        for d in range(x.ndim):
            view = [1] * x.ndim
            view[d] = -1
            if d == ax:
                index.append(np.broadcast_to(idx, g.shape))
            elif x.shape[d] == g.shape[d]:
                index.append(np.arange(g.shape[d]).reshape(view))
            else:
                index.append(np.zeros(g.shape[d], dtype=np.intp).reshape(view))
        np.add.at(grad, tuple(index), g)
        return grad, None

    return out, vjp


def _is_basic_index(key):
    items = key if isinstance(key, tuple) else (key,)
    return all(
        k is None or k is Ellipsis or isinstance(k, slice)
        or (isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)))
        for k in items
    )


def _normalize_key(key):
    if isinstance(key, tuple):
        return tuple(_normalize_key(k) for k in key)
    key = _value(key)
    if isinstance(key, list):
        return np.asarray(key)
    return key


@op
@primitive(num_inputs=1)
def getitem(x, key):
    """``x[key]`` with NumPy basic and advanced indexing.

    The gradient writes into zeros; with advanced indexing repeated positions
    accumulate.
    """
    x = np.asarray(x)
    key = _normalize_key(key)
    out = x[key]
    basic = _is_basic_index(key)

    def vjp(g):
        grad = np.zeros(x.shape, dtype=g.dtype)
        if basic:
            grad[key] = g
        else:
            np.add.at(grad, key, g)
        return grad

    return out, vjp


@op
@primitive(num_inputs=1)
def tile(x, repeats):
    """Repeat the whole of ``x`` ``repeats`` times along each axis."""
    x = np.asarray(x)
    reps = tuple(np.atleast_1d(repeats).tolist())
    rank = max(x.ndim, len(reps))
    dims = (1,) * (rank - x.ndim) + x.shape
    reps = (1,) * (rank - len(reps)) + reps
    out = np.tile(x, reps)

    def vjp(g):
        interleaved = [n for pair in zip(reps, dims) for n in pair]
        return g.reshape(interleaved).sum(axis=tuple(range(0, 2 * rank, 2))).reshape(x.shape)

    return out, vjp


@op
@primitive(num_inputs=1)
def repeat(x, repeats, axis=None):
    """Repeat each element of ``x`` along ``axis`` (of the flattened array when None)."""
    x = np.asarray(x)
    out = np.repeat(x, repeats, axis=axis)
    base = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis % x.ndim

    def vjp(g):
        counts = np.asarray(repeats)
        if counts.size == 1:
            n = base.shape[ax]
            grouped = g.reshape(base.shape[:ax] + (n, int(counts.reshape(-1)[0])) + base.shape[ax + 1:])
            grad = grouped.sum(axis=ax + 1)
        else:
            grad = np.zeros(base.shape, dtype=g.dtype)
            source = np.repeat(np.arange(base.shape[ax]), counts)
            np.add.at(grad, (slice(None),) * ax + (source,), g)
        return grad.reshape(x.shape)

    return out, vjp


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@op
@primitive(num_inputs=1)
def pad(x, pad_width, mode="constant", constant_values=None):
    """Pad ``x`` with ``pad_width`` (int, ``(before, after)`` or one pair per axis).

    Args:
        mode: one of "constant", "edge", "reflect", "symmetric", "wrap".
        constant_values: the fill value for "constant" mode (default 0).
    """
    x = np.asarray(x)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad mode must be one of {_PAD_MODES}. Received: mode={mode!r}")
    if constant_values is not None and mode != "constant":
        raise ValueError(
            f"constant_values can only be set with mode='constant'. Received: mode={mode!r}"
        )
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (x.ndim, 2))
    except ValueError:
        raise ValueError(
            f"pad_width must be an int, a (before, after) pair or one pair per axis. "
            f"Received: pad_width={pad_width}, x.shape={x.shape}"
        ) from None
    if mode == "constant":
        out = np.pad(x, widths, mode="constant", constant_values=0 if constant_values is None else constant_values)
        inner = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(widths, x.shape))
        return out, lambda g: g[inner]
    out = np.pad(x, widths, mode=mode)

    def vjp(g):
        # Pad the element indices the same way: each output element names its source.
        source = np.pad(np.arange(x.size).reshape(x.shape), widths, mode=mode)
        grad = np.bincount(source.ravel(), weights=g.ravel(), minlength=x.size)
        return grad.reshape(x.shape).astype(g.dtype, copy=False)

    return out, vjp
