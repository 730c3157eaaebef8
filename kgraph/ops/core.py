"""Core functions of ``keras.ops``: control flow run as Python loops, custom gradients, segments, dtypes.

The control-flow functions call the user's function eagerly, so their
gradients are those of the ops the function runs.
"""
import functools

import numpy as np

from kgraph import backend, tree
from kgraph.backend.autodiff import _value, on_tape, primitive
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.math import _no_gradient
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import broadcast_to as _broadcast_to
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import stack as _stack
from kgraph.ops.shape import take as _take

__all__ = [
    "associative_scan", "cdist", "cond", "custom_gradient", "dtype", "extract_sequences", "fori_loop", "i0",
    "is_tensor", "map", "saturate_cast", "scan", "segment_max", "segment_min", "segment_prod", "segment_sum",
    "switch", "vectorize", "vectorized_map", "view", "while_loop",
]


def _stacked(items, axis=0):
    """Structures of equal shape (one per step) as one structure of stacked leaves."""
    flat = [tree.flatten(item) for item in items]
    return tree.pack_sequence_as(items[0], [_stack(list(leaves), axis=axis) for leaves in zip(*flat)])


@op
def cond(pred, true_fn, false_fn):
    """``true_fn()`` if ``pred`` else ``false_fn()``."""
    return true_fn() if bool(_value(pred)) else false_fn()


@op
def switch(index, branches, *operands):
    """``branches[index](*operands)``, ``index`` clipped to the valid range."""
    i = int(np.clip(int(_value(index)), 0, len(branches) - 1))
    return branches[i](*operands)


@op
def fori_loop(lower, upper, body_fun, init_val):
    """``init_val`` updated by ``body_fun(i, value)`` for ``i`` in ``[lower, upper)``."""
    value = init_val
    for i in range(int(_value(lower)), int(_value(upper))):
        value = body_fun(i, value)
    return value


@op
def while_loop(cond, body, loop_vars, maximum_iterations=None):
    """Apply ``body`` to ``loop_vars`` while ``cond`` holds (at most ``maximum_iterations`` times)."""
    several = isinstance(loop_vars, (tuple, list))
    state, steps = loop_vars, 0
    while bool(_value(cond(*state) if several else cond(state))):
        if maximum_iterations is not None and steps >= maximum_iterations:
            break
        state = body(*state) if several else body(state)
        state = type(loop_vars)(state) if several else state
        steps += 1
    return state


@op
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Carry ``init`` through ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``; return (carry, ys)."""
    if xs is None and length is None:
        raise ValueError("scan needs xs or length. Received: xs=None, length=None")
    n = length if xs is None else len(tree.flatten(xs)[0])
    order = range(n - 1, -1, -1) if reverse else range(n)
    carry, ys = init, []
    for i in order:
        x = None if xs is None else tree.map_structure(lambda a: a[i], xs)
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys or ys[0] is None:
        return carry, None
    return carry, _stacked(ys)


@op
def associative_scan(f, elems, reverse=False, axis=0):
    """Inclusive scan of ``elems`` along ``axis`` with the associative ``f`` (sequentially)."""
    leaves = tree.flatten(elems)
    n = _shape(leaves[0])[axis]
    order = list(range(n - 1, -1, -1)) if reverse else list(range(n))
    take = lambda i: tree.map_structure(lambda a: _take(a, i, axis=axis), elems)  # noqa: E731
    acc = take(order[0])
    outs = {order[0]: acc}
    for i in order[1:]:
        acc = f(acc, take(i)) if not reverse else f(take(i), acc)
        outs[i] = acc
    return _stacked([outs[i] for i in range(n)], axis=axis)


@op
def map(f, xs):
    """``f`` applied to each slice of ``xs`` along its leading axis, the results stacked."""
    n = len(tree.flatten(xs)[0])
    results = [f(tree.map_structure(lambda a: a[i], xs)) for i in range(n)]
    return _stacked(results)


@op
def vectorized_map(function, elements):
    """``function`` applied to each slice of ``elements`` along the leading axis (``map``)."""
    return map(function, elements)


def _core_dims(signature):
    """Per input, the number of core dimensions a ``"(m,n),(n)->(m)"`` signature gives it (None: 0 each)."""
    inputs = signature.split("->")[0]
    return [0 if not part.strip("()") else len(part.strip("()").split(",")) for part in inputs.split("),")]


@op
def vectorize(pyfunc, *, excluded=None, signature=None):
    """``pyfunc`` mapped over the broadcast loop dimensions of its arguments (NumPy's vectorize rules)."""
    excluded = set(excluded or ())

    @functools.wraps(pyfunc)
    def wrapper(*args):
        tensors = [i for i in range(len(args)) if i not in excluded]
        cores = _core_dims(signature) if signature else [0] * len(tensors)
        if len(cores) != len(tensors):
            raise ValueError(f"vectorize's signature names {len(cores)} inputs; the call passes {len(tensors)}. "
                             f"Received: signature={signature!r}")
        loops = [tuple(_shape(args[i]))[:len(_shape(args[i])) - c] for i, c in zip(tensors, cores)]
        loop = np.broadcast_shapes(*loops)
        flat = {}
        for i, c in zip(tensors, cores):
            core = tuple(_shape(args[i]))[len(_shape(args[i])) - c:]
            flat[i] = _reshape(_broadcast_to(args[i], loop + core), (-1,) + core)
        count = int(np.prod(loop))
        calls = [pyfunc(*[flat[i][n] if i in flat else a for i, a in enumerate(args)]) for n in range(count)]
        out = _stacked(calls)
        return tree.pack_sequence_as(out, [_reshape(t, loop + tuple(_shape(t))[1:]) for t in tree.flatten(out)])

    return wrapper


@op
@_no_gradient
def view(x, dtype=None):
    """The bytes of ``x`` read as ``dtype`` (the last axis rescaled by the item sizes); no gradient."""
    x = np.ascontiguousarray(x)
    return x.copy() if dtype is None else x.view(backend.standardize_dtype(dtype))


@op
def custom_gradient(f):
    """Decorate ``f(*args) -> (output, grad_fn)``: the gradient of the inputs is ``grad_fn(upstream)``."""

    @primitive(list_input=True, name=getattr(f, "__name__", "custom_gradient"))
    def op(args):
        output, grad_fn = f(*args)

        def vjp(g):
            grads = grad_fn(g)
            grads = tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)
            return tuple(None if d is None else np.asarray(_value(d)) for d in grads)

        return _value(output), vjp

    @functools.wraps(f)
    def wrapper(*args):
        return op(list(args))

    return wrapper


@op
def dtype(x):
    """The dtype name of ``x`` (``"float32"``...)."""
    return backend.standardize_dtype(dtype_of(x))


@op
def is_tensor(x):
    """Whether ``x`` is an array kgraph computes with (an ndarray or a KerasTensor)."""
    return isinstance(x, (np.ndarray, KerasTensor))


@op
def saturate_cast(x, dtype):
    """``x`` cast to ``dtype``, values clipped to its range first (no wrap-around)."""
    target = np.dtype(backend.standardize_dtype(dtype))
    if target.kind in "iu":
        info = np.iinfo(target)
        bounds = (float(info.min), float(info.max)) if dtype_of(x).kind == "f" else (info.min, info.max)
        x = _math.clip(x, *bounds)
    return _math.cast(x, target.name)


def _segments(data, segment_ids, num_segments, identity, ufunc):
    data = np.asarray(data)
    ids = np.asarray(segment_ids).astype(np.int64)
    n = int(ids.max()) + 1 if num_segments is None and ids.size else int(num_segments or 0)
    out = np.full((n,) + data.shape[1:], identity, dtype=data.dtype)
    valid = (ids >= 0) & (ids < n)
    ufunc.at(out, ids[valid], data[valid])
    return out, ids, valid


@op
@primitive(num_inputs=1)
def segment_sum(data, segment_ids, num_segments=None, sorted=False):
    """Sums of the rows of ``data`` sharing a segment id (``num_segments`` rows; ids out of range dropped)."""
    out, ids, valid = _segments(data, segment_ids, num_segments, 0, np.add)

    def vjp(g):
        grad = np.zeros(np.shape(data), dtype=g.dtype)
        grad[valid] = g[ids[valid]]
        return grad

    return out, vjp


@op
@_no_gradient
def segment_max(data, segment_ids, num_segments=None, sorted=False):
    """Maxima of the rows of ``data`` sharing a segment id (-inf, or the dtype's minimum, where empty)."""
    data = np.asarray(data)
    low = -np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).min
    return _segments(data, segment_ids, num_segments, low, np.maximum)[0]


@op
@_no_gradient
def segment_min(data, segment_ids, num_segments=None, sorted=False):
    """Minima of the rows of ``data`` sharing a segment id (inf, or the dtype's maximum, where empty)."""
    data = np.asarray(data)
    high = np.inf if data.dtype.kind == "f" else np.iinfo(data.dtype).max
    return _segments(data, segment_ids, num_segments, high, np.minimum)[0]


@op
@_no_gradient
def segment_prod(data, segment_ids, num_segments=None, sorted=False):
    """Products of the rows of ``data`` sharing a segment id (1 where empty)."""
    return _segments(data, segment_ids, num_segments, 1, np.multiply)[0]


@op
def cdist(x, y):
    """Euclidean distances between the rows of ``x`` and the rows of ``y`` (batched over leading axes)."""
    x, y = floating(x), floating(y)
    diff = _expand_dims(x, -2) - _expand_dims(y, -3)
    return _math.sqrt(_reductions.sum(_math.square(diff), axis=-1))


@op
def extract_sequences(x, sequence_length, sequence_stride):
    """Frames of ``sequence_length`` samples every ``sequence_stride`` along the last axis (a new second-to-last)."""
    x = on_tape(x)
    n = _shape(x)[-1]
    starts = range(0, n - sequence_length + 1, sequence_stride)
    return _stack([x[..., s:s + sequence_length] for s in starts], axis=-2)


@op
@_no_gradient
def i0(x):
    """Modified Bessel function of the first kind, order 0; no gradient."""
    x = np.asarray(x)
    return np.i0(x if x.dtype.kind == "f" else x.astype(backend.floatx()))
