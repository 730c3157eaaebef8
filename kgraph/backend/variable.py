"""Variable: a named, possibly trainable NumPy array that layers own as weights."""
import numpy as np

from kgraph import backend


class Variable:
    """A weight: ``value`` (a NumPy array), ``name``, ``path`` and ``trainable``.

    Arithmetic on a Variable goes through ``kgraph.ops`` so that it is recorded
    by an active ``GradientTape``.
    """

    def __init__(self, value, name=None, trainable=True, dtype=None, path=None):
        dtype = backend.standardize_dtype(dtype if dtype is not None else getattr(value, "dtype", None))
        self._value = np.array(value, dtype=dtype)
        self.name = name or "variable"
        self.path = path or self.name
        self.trainable = bool(trainable)

    @property
    def value(self):
        return self._value

    def assign(self, value):
        """Replace the value; the shape must not change."""
        value = np.asarray(value)
        if value.shape != self._value.shape:
            raise ValueError(
                f"Cannot assign a value of shape {value.shape} to variable '{self.path}' "
                f"of shape {self._value.shape}."
            )
        self._value = value.astype(self._value.dtype, copy=True)

    def assign_add(self, delta):
        self.assign(self._value + delta)

    def assign_sub(self, delta):
        self.assign(self._value - delta)

    def numpy(self):
        return self._value.copy()

    @property
    def shape(self):
        return self._value.shape

    @property
    def dtype(self):
        return self._value.dtype.name

    @property
    def ndim(self):
        return self._value.ndim

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # ``ndarray <op> Variable`` and ``np.exp(variable)`` run the matching op (recorded on the tape);
        # NumPy raises a TypeError for anything with no op, rather than computing it untracked.
        from kgraph.backend import numpy_dispatch
        if "out" not in kwargs:
            result = numpy_dispatch.call_ufunc(ufunc, method, inputs, kwargs)
            if result is not numpy_dispatch.NOT_AN_OP:
                return result
        return NotImplemented

    def __array__(self, dtype=None, copy=None):
        return self._value if dtype is None else self._value.astype(dtype)

    def __repr__(self):
        return f"<Variable path={self.path}, shape={self.shape}, dtype={self.dtype}, trainable={self.trainable}>"

    def _op(self, name, *args):
        from kgraph import ops
        return getattr(ops, name)(*args)

    def __add__(self, o): return self._op("add", self, o)
    def __radd__(self, o): return self._op("add", o, self)
    def __sub__(self, o): return self._op("subtract", self, o)
    def __rsub__(self, o): return self._op("subtract", o, self)
    def __mul__(self, o): return self._op("multiply", self, o)
    def __rmul__(self, o): return self._op("multiply", o, self)
    def __truediv__(self, o): return self._op("divide", self, o)
    def __rtruediv__(self, o): return self._op("divide", o, self)
    def __matmul__(self, o): return self._op("matmul", self, o)
    def __rmatmul__(self, o): return self._op("matmul", o, self)
    def __neg__(self): return self._op("negative", self)
    def __pow__(self, o): return self._op("power", self, o)
    def __rpow__(self, o): return self._op("power", o, self)
    def __abs__(self): return self._op("abs", self)
    def __getitem__(self, key): return self._op("getitem", self, key)
