"""TapeArray: what an op returns while a GradientTape records, so NumPy code on it stays on the tape.

Inside ``Layer.call`` a Keras user writes ``x * 2.0``, ``-x``, ``x[:, 0]``,
``x @ w``, ``np.exp(x)`` or ``x.sum(axis=1)`` on the arrays the layer
receives. While a tape records, those arrays are TapeArrays (an ``ndarray``
subclass, no copy): NumPy hands every such operator, ufunc and function back
to this class, which runs the matching ``kgraph.ops`` op (recorded, with its
VJP). A NumPy function with no differentiable op raises a ``TypeError``
naming it (the gradient is never dropped silently); its result would have no
gradient, so wrap the input in ``kgraph.ops.stop_gradient`` where that is
what is meant. Results without a floating dtype (comparisons, ``argmax``,
``shape``) have no gradient and are computed as usual. With no tape
recording, a TapeArray behaves as a plain ndarray.
"""
import numpy as np

from kgraph.backend import numpy_dispatch

_ndarray = np.ndarray
# Training steps being traced for replay (kgraph.backend.step_trace; autodiff's `_step_traces` is this list):
# NumPy that no op runs, and reading a recorded array's values into Python, refuse the trace.
STEP_TRACES = []


def _recording():
    from kgraph.backend.autodiff import is_recording
    return is_recording()


def _plain(x):
    if isinstance(x, TapeArray):
        return x.view(_ndarray)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _has_float(result):
    if isinstance(result, (list, tuple)):
        return any(_has_float(r) for r in result)
    return isinstance(result, (np.ndarray, np.generic)) and result.dtype.kind in "fc"


def _ops():
    from kgraph import ops
    return ops


def _traced_outside_the_ops(what):
    if STEP_TRACES:
        STEP_TRACES[-1].fail(f"{what} on a recorded array, outside the ops")


# NumPy functions that read an array's shape or type, never its values.
_METADATA = frozenset(["shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj", "can_cast",
                       "min_scalar_type", "may_share_memory", "shares_memory"])


def _no_gradient(what, result, name=None):
    if name not in _METADATA:
        _traced_outside_the_ops(what)
    if _has_float(result) and _recording():
        raise TypeError(
            f"{what} on an array that a GradientTape is recording has no gradient in kgraph, so the layers "
            "before it would silently not learn. Use the matching `kgraph.ops` function, or wrap the input in "
            "`kgraph.ops.stop_gradient(...)` if no gradient should flow through it.")
    return result


class TapeArray(_ndarray):
    """An ndarray recorded by a GradientTape; NumPy operations on it are recorded as ``kgraph.ops``."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if _recording():
            if "out" in kwargs:
                raise TypeError(
                    f"In-place `{ufunc.__name__}` on an array that a GradientTape is recording: it would "
                    "overwrite a value the gradient needs. Compute a new array instead (e.g. `x = x + y`).")
            result = numpy_dispatch.call_ufunc(ufunc, method, inputs, kwargs)
            if result is not numpy_dispatch.NOT_AN_OP:
                return result
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        result = getattr(ufunc, method)(*_plain(inputs), **kwargs)
        return _no_gradient(f"`numpy.{ufunc.__name__}{'' if method == '__call__' else '.' + method}`", result)

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        if _recording():
            result = numpy_dispatch.call_function(func, args, kwargs)
            if result is not numpy_dispatch.NOT_AN_OP:
                return result
        result = func(*_plain(args), **{k: _plain(v) for k, v in kwargs.items()})
        return _no_gradient(f"`numpy.{name}`", result, name)

    # `x += y` while a tape records rebinds `x` to a new recorded array, as a tensor's `+=` does (NumPy would write
    # into `x`, overwriting a value the gradient may need); otherwise it writes in place as an ndarray's.
    def _inplace(self, other, ufunc):
        if _recording():
            result = ufunc(self, other)
            return result if isinstance(result, TapeArray) else np.asarray(result).view(TapeArray)
        ufunc(self.view(_ndarray), _plain(other), out=self.view(_ndarray))
        return self

    def __iadd__(self, other): return self._inplace(other, np.add)
    def __isub__(self, other): return self._inplace(other, np.subtract)
    def __imul__(self, other): return self._inplace(other, np.multiply)
    def __itruediv__(self, other): return self._inplace(other, np.true_divide)
    def __ipow__(self, other): return self._inplace(other, np.power)

    # ndarray methods that do not go through NumPy's dispatch.
    def __getitem__(self, key):
        if _recording():
            return _ops().getitem(self, key)
        return self.view(_ndarray)[key]

    def __setitem__(self, key, value):
        if _recording():
            raise TypeError("Item assignment on an array that a GradientTape is recording would overwrite a "
                            "value the gradient needs. Build a new array instead (e.g. with `kgraph.ops.where` "
                            "or `kgraph.ops.concatenate`).")
        self.view(_ndarray)[key] = _plain(value)

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return _ops().reshape(self, tuple(shape)) if _recording() else self.view(_ndarray).reshape(shape)

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
        if _recording():
            return _ops().transpose(self, tuple(axes) if axes else None)
        return self.view(_ndarray).transpose(*axes)

    @property
    def T(self):
        return self.transpose()

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def flatten(self, order="C"):
        return _ops().reshape(self, (-1,)) if _recording() else self.view(_ndarray).flatten()

    def ravel(self, order="C"):
        return np.ravel(self)

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def astype(self, dtype, *args, **kwargs):
        if _recording():
            return _ops().cast(self, dtype)
        return self.view(_ndarray).astype(dtype, *args, **kwargs)

    def copy(self, order="C"):
        return _ops().reshape(self, self.shape) if _recording() else self.view(_ndarray).copy()

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def max(self, axis=None, out=None, keepdims=False, **kw):
        return np.max(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def min(self, axis=None, out=None, keepdims=False, **kw):
        return np.min(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kw):
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        if ddof:
            kw["ddof"] = ddof
        return np.var(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        if ddof:
            kw["ddof"] = ddof
        return np.std(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def clip(self, min=None, max=None, **kw):  # noqa: A002 (ndarray's own argument names)
        return np.clip(self, min, max, **kw)

    def dot(self, other):
        return np.matmul(self, other) if _recording() else self.view(_ndarray).dot(_plain(other))

    def cumsum(self, axis=None, dtype=None, out=None):
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    # A recorded array's values read into Python (an `if` on them, a number made of them): a traced step that
    # did so would replay the value of the step it traced.
    def __bool__(self):
        _traced_outside_the_ops("`bool`")
        return _ndarray.__bool__(self)

    def __float__(self):
        _traced_outside_the_ops("`float`")
        return _ndarray.__float__(self)

    def __int__(self):
        _traced_outside_the_ops("`int`")
        return _ndarray.__int__(self)

    def __index__(self):
        _traced_outside_the_ops("`index`")
        return _ndarray.__index__(self)

    def item(self, *args):
        _traced_outside_the_ops("`item`")
        return self.view(_ndarray).item(*args)

    def tolist(self):
        _traced_outside_the_ops("`tolist`")
        return self.view(_ndarray).tolist()

    def __reduce__(self):
        # Pickled (saved) as the plain array it holds.
        return self.view(_ndarray).__reduce__()
