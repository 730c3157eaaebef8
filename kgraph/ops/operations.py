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


def _per_axis(value, rank):
    return tuple(int(v) for v in value) if isinstance(value, (list, tuple)) else (int(value),) * rank


_SHAPE_RULES = {"conv": _conv_rule, "reshape": _reshape_rule, "split_leading_axes": _split_leading_rule, "shape_dim": _shape_dim_rule}


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
