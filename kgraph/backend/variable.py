"""Variable: a named, possibly trainable NumPy array that layers own as weights."""
import numpy as np

from kgraph import backend
from kgraph.backend.name_scope import current_path

_DTYPE_NAMES = {}  # np.dtype -> its name
# Called with the variable at each assignment (a traced training step refuses one: kgraph.backend.step_trace).
_ASSIGN_WATCHERS = []


class Variable:
    """A weight: ``value`` (a NumPy array), ``name``, ``path`` and ``trainable``.

    Arithmetic, comparisons (``==`` and ``!=`` included, elementwise as in
    Keras 3) and indexing on a Variable go through ``kgraph.ops``, so that they
    are recorded by an active ``GradientTape`` (or become graph nodes beside a
    symbolic tensor). ``int``, ``float``, ``bool`` and use as an index work on
    scalar Variables only, as NumPy has them. A Variable hashes by identity:
    Variables stay usable as dict keys and in sets.
    """

    def __init__(self, value, name=None, trainable=True, dtype=None, path=None):
        dtype = backend.standardize_dtype(dtype if dtype is not None else getattr(value, "dtype", None))
        # Row-major whatever the initializer returned (an orthogonal matrix comes column-major from its QR): an
        # optimizer's in-place passes over a column-major value beside row-major gradients ran 4x slower.
        self._value = np.array(value, dtype=dtype, order="C")
        self.name = name or "variable"
        if not path:
            scope = current_path()
            path = f"{scope}/{self.name}" if scope else self.name
        self.path = path
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
        self._value = value.astype(self._value.dtype, order="C", copy=True)
        for watcher in _ASSIGN_WATCHERS:
            watcher(self, value)

    def _assign_scalar(self, number):
        """``assign(number)`` for a Variable of shape () given a Python float or int (a metric's running total, an
        optimizer's step count: at every step): the same cast to the Variable's dtype, without ``assign``'s checks."""
        value = self._value
        self._value = new = np.array(number, dtype=value.dtype)
        for watcher in _ASSIGN_WATCHERS:
            watcher(self, new)

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
        dtype = self._value.dtype
        name = _DTYPE_NAMES.get(dtype)
        if name is None:  # NumPy computes a dtype's name in Python, each time it is asked
            name = _DTYPE_NAMES[dtype] = dtype.name
        return name

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
    def __floordiv__(self, o): return self._op("floor_divide", self, o)
    def __rfloordiv__(self, o): return self._op("floor_divide", o, self)
    def __mod__(self, o): return self._op("mod", self, o)
    def __rmod__(self, o): return self._op("mod", o, self)
    def __lt__(self, o): return self._op("less", self, o)
    def __le__(self, o): return self._op("less_equal", self, o)
    def __gt__(self, o): return self._op("greater", self, o)
    def __ge__(self, o): return self._op("greater_equal", self, o)
    def __and__(self, o): return self._op("logical_and", self, o)
    def __rand__(self, o): return self._op("logical_and", o, self)
    def __or__(self, o): return self._op("logical_or", self, o)
    def __ror__(self, o): return self._op("logical_or", o, self)
    def __xor__(self, o): return self._op("logical_xor", self, o)
    def __rxor__(self, o): return self._op("logical_xor", o, self)
    def __invert__(self): return self._op("logical_not" if self.dtype == "bool" else "bitwise_invert", self)
    def __pos__(self): return self._op("copy", self)
    def __round__(self, ndigits=None): return self._op("round", self, ndigits or 0)
    def __getitem__(self, key): return self._op("getitem", self, key)

    def __eq__(self, o):
        return NotImplemented if o is None else self._op("equal", self, o)

    def __ne__(self, o):
        return NotImplemented if o is None else self._op("not_equal", self, o)

    def __hash__(self):
        return id(self)

    def _scalar(self, what):
        if self._value.ndim:
            raise TypeError(f"Only a scalar Variable can be converted to {what}. Received variable '{self.path}' "
                            f"of shape {self.shape}.")
        return self._value[()]

    def __int__(self):
        return int(self._scalar("a Python int"))

    def __float__(self):
        return float(self._scalar("a Python float"))

    def __bool__(self):
        return bool(self._scalar("a Python bool (use `ops.any` or `ops.all` on it)"))

    def __index__(self):
        value = self._scalar("an index")
        if self._value.dtype.kind not in "iu":
            raise TypeError(f"Only an integer Variable can be used as an index. Received variable '{self.path}' "
                            f"of dtype {self.dtype}.")
        return int(value)

    def __len__(self):
        if not self._value.ndim:
            raise TypeError(f"len() of a scalar Variable ('{self.path}', shape ()).")
        return len(self._value)

    def __iter__(self):
        # As a NumPy array: the rows along the first axis, each taken by ``ops.getitem`` (so recorded).
        if not self._value.ndim:
            raise TypeError(f"Iteration over a scalar Variable ('{self.path}', shape ()).")
        return (self[i] for i in range(len(self._value)))
