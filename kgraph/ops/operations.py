"""The ``kgraph.ops`` functions as graph Operations: called on KerasTensors, each records a Node.

A symbolic call of ``ops.add(x, y)`` creates one ``Add`` operation (class
names follow Keras 3: ``Add``, ``Matmul``, ``GetItem``...) whose node keeps
the call's arguments as given, KerasTensors in place. Running the graph calls
the same eager function on arrays, so one definition gives the value, the
gradient and (through shape inference) the output spec.

Each op module marks its public ops with ``@op``, which registers the op under
its name (the registry a saved model's op nodes are rebuilt from) and makes a
composite (an op written with other ops) symbolic-aware; a primitive checks for
KerasTensors itself.
"""
import functools
import inspect

import numpy as np

from kgraph.graph.operation import Operation, any_symbolic

_FUNCTIONS = {}
_CLASSES = {}
# Each symbolic-aware function made by ``dispatching`` -> the eager function it calls.
_EAGER = {}
_CLASS_NAMES = {"getitem": "GetItem", "true_divide": "TrueDivide", "logsumexp": "Logsumexp", "jvp": "JVP"}


def class_name(op_name):
    """Keras 3's class name for the op ``op_name`` (``add`` -> ``Add``, ``log_softmax`` -> ``LogSoftmax``)."""
    return _CLASS_NAMES.get(op_name) or "".join(part.capitalize() for part in op_name.split("_"))


class OpOperation(Operation):
    """One symbolic call of a ``kgraph.ops`` function; ``op_name`` and ``fn`` are set per subclass."""

    op_name = None
    fn = None

    def call(self, *args, **kwargs):
        return type(self).fn(*args, **kwargs)

    def compute_output_spec(self, *args, **kwargs):
        rule = _SHAPE_RULES.get(self.op_name)
        spec = rule(self.name, *args, **kwargs) if rule is not None else None
        if spec is not None:  # a rule may decline (None): the run on placeholders then decides
            return spec
        from kgraph.graph import shape_inference
        return shape_inference.output_spec(type(self).fn, args, kwargs, self.name)

    def arguments(self, node):
        """Every parameter of the op for ``node``'s call, by name, defaults filled in (for converters)."""
        bound = inspect.signature(type(self).fn).bind(*node.call_args, **node.call_kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)


def _reshape_rule(name, x, newshape):
    """Reshape's output spec by shape arithmetic: a ``-1`` next to an unknown input dimension stays unknown
    (placeholder sizes cannot stand in for a dimension that merges others, such as batch * time)."""
    from kgraph.graph.keras_tensor import KerasTensor
    sizes = tuple(newshape) if isinstance(newshape, (list, tuple)) else (newshape,)
    if any(isinstance(d, KerasTensor) for d in sizes):  # sizes read when the graph runs (a traced ops.shape)
        known = [int(d) for d in sizes if not isinstance(d, KerasTensor)]
        if sum(d == -1 for d in known) > 1 or any(d < -1 for d in known):
            raise ValueError(f"Reshape '{name}' accepts at most one -1 and no other negative size. "
                             f"Received: newshape={sizes}")
        return KerasTensor(tuple(None if isinstance(d, KerasTensor) or int(d) == -1 else int(d) for d in sizes),
                           dtype=x.dtype, name=name)
    target = tuple(int(d) for d in sizes)
    if sum(d == -1 for d in target) > 1 or any(d < -1 for d in target):
        raise ValueError(f"Reshape '{name}' accepts at most one -1 and no other negative size. "
                         f"Received: newshape={target}")
    if -1 in target and None not in x.shape:
        size, rest = 1, 1
        for d in x.shape:
            size *= d
        for d in target:
            rest *= d if d != -1 else 1
        if rest == 0 or size % rest:
            raise ValueError(f"Cannot reshape {x.shape} to {target} in '{name}'.")
        target = tuple(size // rest if d == -1 else d for d in target)
    elif -1 not in target and None not in x.shape and _product(target) != _product(x.shape):
        raise ValueError(f"Cannot reshape {x.shape} to {target} in '{name}': the sizes differ.")
    return KerasTensor(tuple(None if d == -1 else d for d in target), dtype=x.dtype, name=name)


def _product(shape):
    out = 1
    for d in shape:
        out *= d
    return out


# Ops whose output spec is shape arithmetic rather than a run on placeholder arrays.
def _split_leading_rule(name, x, like, count=2):
    """split_leading_axes's output spec: ``like``'s leading axes, then ``x``'s after its first."""
    from kgraph.graph.keras_tensor import KerasTensor
    lead = tuple(like.shape[:count])
    known = None if None in lead else _product(lead)
    if known is not None and x.shape[0] is not None and known != x.shape[0]:
        raise ValueError(f"Cannot split the first axis of {x.shape} into {lead} in '{name}'.")
    return KerasTensor(lead + tuple(x.shape[1:]), dtype=x.dtype, name=name)


def _shape_dim_rule(name, x, axis):
    """shape_dim's output spec: an int64 scalar."""
    from kgraph.graph.keras_tensor import KerasTensor
    return KerasTensor((), dtype="int64", name=name)


def _conv_rule(name, inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1, bias=None,
               relu=False):
    """conv's output spec where a spatial size is unknown (a placeholder length could be shorter than the
    kernel); with every size known, the run on placeholders checks the call as it computes it."""
    from kgraph.graph.keras_tensor import KerasTensor
    shape, kshape = tuple(inputs.shape), tuple(getattr(kernel, "shape", ()))
    rank = len(kshape) - 2
    first = data_format == "channels_first"
    spatial = shape[2:] if first else shape[1:-1]
    if rank < 1 or len(spatial) != rank or None not in spatial or padding not in ("valid", "same"):
        return None
    strides = _per_axis(strides, rank)
    dilation = _per_axis(dilation_rate, rank)
    out = []
    for n, k, s, d in zip(spatial, kshape[:rank], strides, dilation):
        if n is None:
            out.append(None)
        elif padding == "same":
            out.append(-(-n // s))
        else:
            out.append((n - d * (k - 1) - 1) // s + 1)
    out_shape = (shape[0], kshape[-1]) + tuple(out) if first else (shape[0],) + tuple(out) + (kshape[-1],)
    return KerasTensor(out_shape, dtype=inputs.dtype, name=name)


def _has_tensor(value):
    from kgraph.graph.keras_tensor import KerasTensor
    return isinstance(value, KerasTensor) or (isinstance(value, (list, tuple))
                                              and any(isinstance(v, KerasTensor) for v in value))


def _tile_rule(name, x, repeats):
    """tile's output spec where a repeat count is read when the graph runs: that axis's size is unknown."""
    from kgraph.graph.keras_tensor import KerasTensor
    if not _has_tensor(repeats):
        return None
    if isinstance(repeats, KerasTensor):
        if len(repeats.shape) > 1 or repeats.shape[0] is None:
            raise ValueError(f"tile '{name}' needs repeats of a known length. Received: repeats.shape={repeats.shape}")
        reps = (None,) * (repeats.shape[0] if repeats.shape else 1)
    else:
        reps = tuple(None if isinstance(r, KerasTensor) else int(r) for r in repeats)
    shape = tuple(getattr(x, "shape", ()))
    rank = max(len(shape), len(reps))
    dims = (1,) * (rank - len(shape)) + shape
    reps = (1,) * (rank - len(reps)) + reps
    out = tuple(None if d is None or r is None else d * r for d, r in zip(dims, reps))
    return KerasTensor(out, dtype=str(getattr(x, "dtype", "float32")), name=name)


def _arange_rule(name, start, stop=None, step=1, dtype=None):
    """arange's output spec where a bound is read when the graph runs: a vector of unknown length."""
    from kgraph import backend
    from kgraph.graph.keras_tensor import KerasTensor
    bounds = (start, stop, step)
    if not any(isinstance(b, KerasTensor) for b in bounds):
        return None
    floating = any((b.dtype if isinstance(b, KerasTensor) else np.asarray(b).dtype.name).startswith(("float",
                                                                                                    "bfloat"))
                   for b in bounds if b is not None)
    out = backend.standardize_dtype(dtype) if dtype is not None else (backend.floatx() if floating else "int32")
    return KerasTensor((None,), dtype=out, name=name)


def _broadcast_rule(op_name, name, x1, x2, *args, **kwargs):
    """An elementwise binary op's output spec where a size is unknown: Keras's ``broadcast_shapes`` (an unknown
    size meeting a known one is taken to broadcast to it, which a run on placeholders could not give), without
    running the op on placeholder arrays (for images of unknown size they would be large)."""
    from kgraph.graph.keras_tensor import KerasTensor
    shapes = [tuple(np.shape(v)) if not isinstance(v, KerasTensor) else tuple(v.shape) for v in (x1, x2)]
    rank = max(len(s) for s in shapes)
    a, b = ((1,) * (rank - len(s)) + s for s in shapes)
    if None not in a and None not in b:
        return None  # every size known: the run on placeholders checks the call as it computes it
    out = []
    for p, q in zip(a, b):
        if p == 1 or p is None:
            out.append(None if (p is None and q == 1) else q)
        elif q in (1, None, p):
            out.append(p)
        else:
            raise ValueError(f"'{name}' cannot broadcast shapes {shapes[0]} and {shapes[1]}.")
    # The dtype of a run on one-element arrays of the operands' dtypes.
    probe = [np.zeros((1,) * len(v.shape), v.dtype) if isinstance(v, KerasTensor) else v for v in (x1, x2)]
    with np.errstate(all="ignore"):
        dtype = np.asarray(_FUNCTIONS[op_name](*probe, *args, **kwargs)).dtype
    return KerasTensor(tuple(out), dtype=dtype.name, name=name)


def _matmul_rule(name, x1, x2):
    """matmul's output spec where an unknown size meets a known one (batch axes broadcast as Keras's
    ``broadcast_shapes``; the contracted size may be unknown on one side); otherwise the run decides."""
    from kgraph.graph.keras_tensor import KerasTensor
    a, b = (tuple(v.shape) if isinstance(v, KerasTensor) else tuple(np.shape(v)) for v in (x1, x2))
    if len(a) < 2 or len(b) < 2 or (None not in a and None not in b):
        return None
    if a[-1] is not None and b[-2] is not None and a[-1] != b[-2]:
        raise ValueError(f"Could not infer the output of '{name}' for symbolic inputs (shape={a}, shape={b}): "
                         f"the contracted sizes differ ({a[-1]} != {b[-2]}).")
    rank = max(len(a), len(b)) - 2
    pa, pb = (1,) * (rank - len(a) + 2) + a[:-2], (1,) * (rank - len(b) + 2) + b[:-2]
    batch = []
    for p, q in zip(pa, pb):
        if p == 1 or p is None:
            batch.append(None if (p is None and q == 1) else q)
        elif q in (1, None, p):
            batch.append(p)
        else:
            raise ValueError(f"'{name}' cannot broadcast the batch axes of {a} and {b}.")
    dtype = np.result_type(np.dtype(getattr(x1, "dtype", "float32")), np.dtype(getattr(x2, "dtype", "float32")))
    return KerasTensor(tuple(batch) + (a[-2], b[-1]), dtype=dtype.name, name=name)


def _broadcast_to_rule(name, x, shape):
    """broadcast_to's output spec where a size is read when the graph runs (a traced ``ops.shape``): unknown."""
    from kgraph.graph.keras_tensor import KerasTensor
    if isinstance(shape, KerasTensor) or not _has_tensor(shape):
        return None
    return KerasTensor(tuple(None if isinstance(d, KerasTensor) else int(d) for d in shape),
                       dtype=str(getattr(x, "dtype", "float32")), name=name)


def _per_axis(value, rank):
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),) * rank


_SHAPE_RULES = {"conv": _conv_rule, "reshape": _reshape_rule, "split_leading_axes": _split_leading_rule,
                "shape_dim": _shape_dim_rule, "tile": _tile_rule, "arange": _arange_rule, "matmul": _matmul_rule,
                "broadcast_to": _broadcast_to_rule,
                **{name: functools.partial(_broadcast_rule, name) for name in (
                    "add", "subtract", "multiply", "divide", "true_divide", "maximum", "minimum", "power", "equal",
                    "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
                    "logical_xor")}}


def op_class(op_name, fn=None):
    """The Operation class of the op ``op_name`` (made on first use from its eager function ``fn``)."""
    cls = _CLASSES.get(op_name)
    if cls is None:
        fn = fn or _FUNCTIONS.get(op_name)
        if fn is None:
            return None
        cls = type(class_name(op_name), (OpOperation,), {
            "op_name": op_name, "fn": staticmethod(fn), "__module__": __name__,
            "__doc__": f"The ``kgraph.ops.{op_name}`` operation."})
        _CLASSES[op_name] = cls
        _CLASSES[cls.__name__] = cls
    return cls


def get_op_class(name):
    """The op Operation class registered under a class name (``Add``) or op name (``add``), or None."""
    if name in _CLASSES:
        return _CLASSES[name]
    if name in _FUNCTIONS:
        return op_class(name)
    # A class name in a fresh process (a saved model being loaded): find the op that has it, preferring an
    # op's own name over another name for the same function.
    candidates = [n for n in _FUNCTIONS if class_name(n) == name]
    own = [n for n in candidates if getattr(getattr(_FUNCTIONS[n], "_kgraph_primitive", None), "name", n) == n]
    op_name = (own or candidates or [None])[0]
    return None if op_name is None else op_class(op_name)


def register(op_name, fn):
    """Make ``fn`` the eager function of the public op ``op_name``."""
    _FUNCTIONS[op_name] = fn


def symbolic_call(op_name, fn, args, kwargs):
    """Record one call of ``fn`` on KerasTensors as a node of a new ``op_name`` operation."""
    return op_class(op_name, fn)().symbolic_call(*args, **kwargs)


def dispatching(op_name, fn):
    """``fn`` made symbolic-aware: called with a KerasTensor argument, it records an operation node."""

    @functools.wraps(fn)
    def symbolic_aware(*args, **kwargs):
        if any_symbolic(args, kwargs):
            return symbolic_call(op_name, symbolic_aware, args, kwargs)
        return fn(*args, **kwargs)

    _EAGER[symbolic_aware] = fn
    return symbolic_aware


def op(fn=None, *, name=None):
    """Make ``fn`` the public op ``name`` (default ``fn.__name__``), where the op is defined::

        @op
        def where(condition, x1=None, x2=None): ...

        true_divide = op(divide, name="true_divide")

    A primitive (``kgraph.backend.autodiff.primitive``) is registered and returned as it is: it
    records its own node when called on KerasTensors. Any other function (a composite) is registered
    and returned wrapped by ``dispatching``. An alias (``name=`` with an op already made) of a
    composite wraps that op's eager function anew, so it records its own Operation class named after
    the alias; an alias of a primitive is that primitive.

    ``shape``, ``ndim``, ``convert_to_tensor`` and ``convert_to_numpy`` are not ops (no call of
    theirs is recorded as a node): they stay plain, unregistered functions.
    """
    if fn is None:
        return functools.partial(op, name=name)
    op_name = name or fn.__name__
    if not hasattr(fn, "_kgraph_primitive"):
        fn = dispatching(op_name, _EAGER.get(fn, fn))
    register(op_name, fn)
    return fn
