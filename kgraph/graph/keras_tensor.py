"""KerasTensor: a symbolic tensor that remembers the layer call that produced it."""
import collections

import numpy as np

from kgraph import backend

KerasHistory = collections.namedtuple("KerasHistory", ["layer", "node_index", "tensor_index"])


class KerasTensor:
    """A symbolic tensor: ``shape`` (batch dim ``None``), ``dtype``, ``name``, ``_keras_history``.

    ``_keras_mask`` is the tensor's mask (a boolean KerasTensor) when a layer gave it one.
    """

    _keras_mask = None

    def __init__(self, shape, dtype=None, name=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = backend.standardize_dtype(dtype)
        self.name = name
        self._keras_history = None

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype}, name={self.name}>"

    def __array__(self, *args, **kwargs):
        raise TypeError(
            "A KerasTensor is symbolic: it is a placeholder for a shape and a dtype, not a value. "
            f"It cannot be converted to a NumPy array. Received: {self!r}. Pass it to kgraph layers "
            "or to `kgraph.Model(inputs, outputs)` instead."
        )

    def __bool__(self):
        raise TypeError(f"A symbolic KerasTensor cannot be used as a Python bool. Received: {self!r}")

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    # Operators record ``kgraph.ops`` nodes, as in Keras 3. ``==``/``!=`` keep Python's identity meaning
    # (graph code compares tensors); use ``ops.equal``/``ops.not_equal`` for elementwise comparison.
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy hands ``np.exp(x)``, ``ndarray + x`` and ``x.sum()``-style reductions to the matching op.
        from kgraph.backend import numpy_dispatch
        result = numpy_dispatch.call_ufunc(ufunc, method, inputs, kwargs)
        if result is numpy_dispatch.NOT_AN_OP:
            raise TypeError(f"`numpy.{ufunc.__name__}` ({method}) is not a kgraph op, so it cannot be applied to "
                            f"a symbolic tensor. Received: {self!r}. Use the matching `kgraph.ops` function.")
        return result

    def __array_function__(self, func, types, args, kwargs):
        from kgraph.backend import numpy_dispatch
        result = numpy_dispatch.call_function(func, args, kwargs)
        if result is numpy_dispatch.NOT_AN_OP:
            raise TypeError(f"`numpy.{func.__name__}` is not a kgraph op, so it cannot be applied to a symbolic "
                            f"tensor. Received: {self!r}. Use the matching `kgraph.ops` function.")
        return result

    def _op(self, name, *args):
        from kgraph import ops
        return getattr(ops, name)(*args)

    def __add__(self, other): return self._op("add", self, other)
    def __radd__(self, other): return self._op("add", other, self)
    def __sub__(self, other): return self._op("subtract", self, other)
    def __rsub__(self, other): return self._op("subtract", other, self)
    def __mul__(self, other): return self._op("multiply", self, other)
    def __rmul__(self, other): return self._op("multiply", other, self)
    def __truediv__(self, other): return self._op("divide", self, other)
    def __rtruediv__(self, other): return self._op("divide", other, self)
    def __floordiv__(self, other): return self._op("floor_divide", self, other)
    def __rfloordiv__(self, other): return self._op("floor_divide", other, self)
    def __mod__(self, other): return self._op("mod", self, other)
    def __rmod__(self, other): return self._op("mod", other, self)
    def __pow__(self, other): return self._op("power", self, other)
    def __rpow__(self, other): return self._op("power", other, self)
    def __matmul__(self, other): return self._op("matmul", self, other)
    def __rmatmul__(self, other): return self._op("matmul", other, self)
    def __neg__(self): return self._op("negative", self)
    def __pos__(self): return self
    def __abs__(self): return self._op("abs", self)
    def __lt__(self, other): return self._op("less", self, other)
    def __le__(self, other): return self._op("less_equal", self, other)
    def __gt__(self, other): return self._op("greater", self, other)
    def __ge__(self, other): return self._op("greater_equal", self, other)
    def __and__(self, other): return self._op("logical_and", self, other)
    def __rand__(self, other): return self._op("logical_and", other, self)
    def __or__(self, other): return self._op("logical_or", self, other)
    def __ror__(self, other): return self._op("logical_or", other, self)
    def __invert__(self): return self._op("logical_not", self)
    def __getitem__(self, key): return self._op("getitem", self, key)

    @property
    def T(self):
        return self._op("transpose", self)

    def reshape(self, *shape):
        return self._op("reshape", self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list))
                        else shape)

    def astype(self, dtype):
        return self._op("cast", self, dtype)

    def sum(self, axis=None, keepdims=False):
        return self._op("sum", self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return self._op("mean", self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return self._op("max", self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return self._op("min", self, axis, keepdims)


def is_keras_tensor(x):
    return isinstance(x, KerasTensor)


def shape_of(x):
    """Shape of a KerasTensor or an array-like, as a tuple."""
    if isinstance(x, KerasTensor):
        return x.shape
    return tuple(np.shape(x))
