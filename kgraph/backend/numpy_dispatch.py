"""NumPy's dispatch protocols mapped onto ``kgraph.ops``: ufuncs, their reductions, and array functions.

Both ``TapeArray`` (eager, on a tape) and ``KerasTensor`` (symbolic) hand
NumPy calls on them to these tables, so ``np.exp(x)``, ``x.sum(axis=1)`` or
``np.concatenate([x, y])`` become the matching op: recorded on the tape, or
a node in the graph.
"""
NOT_AN_OP = object()

# ufunc name -> kgraph.ops function, for ufunc(...) calls with inputs only.
_UFUNCS = {
    "add": "add", "subtract": "subtract", "multiply": "multiply", "true_divide": "divide",
    "divide": "divide", "negative": "negative", "power": "power", "matmul": "matmul", "exp": "exp",
    "expm1": "expm1", "log": "log", "log1p": "log1p", "sqrt": "sqrt", "square": "square",
    "reciprocal": "reciprocal", "absolute": "abs", "tanh": "tanh", "sin": "sin", "cos": "cos",
    "maximum": "maximum", "minimum": "minimum", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "rint": "round", "floor_divide": "floor_divide", "remainder": "mod", "greater": "greater",
    "greater_equal": "greater_equal", "less": "less", "less_equal": "less_equal", "equal": "equal",
    "not_equal": "not_equal", "logical_and": "logical_and", "logical_or": "logical_or",
    "logical_not": "logical_not", "isnan": "isnan", "isfinite": "isfinite",
}
# ufunc name -> kgraph.ops reduction, for ufunc.reduce (what ``x.sum()``/``np.max`` call).
_REDUCTIONS = {"add": "sum", "maximum": "max", "minimum": "min", "multiply": "prod"}
# NumPy function name -> kgraph.ops function taking the same leading arguments.
_FUNCTIONS = {
    "concatenate": "concatenate", "stack": "stack", "reshape": "reshape", "transpose": "transpose",
    "expand_dims": "expand_dims", "squeeze": "squeeze", "clip": "clip", "where": "where",
    "einsum": "einsum", "tile": "tile", "repeat": "repeat", "take": "take",
    "take_along_axis": "take_along_axis", "pad": "pad", "cumsum": "cumsum", "moveaxis": "moveaxis",
    "swapaxes": "swapaxes", "split": "split", "flip": "flip", "roll": "roll", "ravel": "ravel",
    "broadcast_to": "broadcast_to", "matmul": "matmul", "zeros_like": "zeros_like",
    "ones_like": "ones_like", "full_like": "full_like", "abs": "abs", "absolute": "abs",
    "maximum": "maximum", "minimum": "minimum", "unstack": "unstack",
}
_REDUCING_FUNCTIONS = {"sum": "sum", "mean": "mean", "max": "max", "amax": "max", "min": "min",
                       "amin": "min", "prod": "prod", "var": "var", "std": "std"}




def _ops():
    from kgraph import ops
    return ops


def reduce(op_name, x, axis=None, dtype=None, out=None, keepdims=False, **extra):
    if dtype is not None or out is not None or extra:
        raise TypeError(f"kgraph records `{op_name}` on a TapeArray with `axis` and `keepdims` only. "
                        f"Received: dtype={dtype!r}, out={out!r}, {extra}")
    return getattr(_ops(), op_name)(x, axis=axis, keepdims=bool(keepdims))



def call_ufunc(ufunc, method, inputs, kwargs):
    """``ufunc.method(*inputs, **kwargs)`` as a kgraph op, or ``NOT_AN_OP``."""
    name = ufunc.__name__
    if method == "__call__" and name in _UFUNCS and not kwargs:
        return getattr(_ops(), _UFUNCS[name])(*inputs)
    if method == "reduce" and name in _REDUCTIONS:
        return reduce(_REDUCTIONS[name], *inputs, **kwargs)
    if method == "accumulate" and name == "add" and set(kwargs) <= {"axis"}:
        return _ops().cumsum(inputs[0], axis=kwargs.get("axis", 0))
    return NOT_AN_OP


def call_function(func, args, kwargs):
    """The NumPy function ``func(*args, **kwargs)`` as a kgraph op, or ``NOT_AN_OP``."""
    name = func.__name__
    if name in _FUNCTIONS:
        return getattr(_ops(), _FUNCTIONS[name])(*args, **kwargs)
    if name in _REDUCING_FUNCTIONS:
        return reduce(_REDUCING_FUNCTIONS[name], *args, **kwargs)
    return NOT_AN_OP
