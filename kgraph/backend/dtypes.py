"""Keras's dtype rules: dtype names (``standardize``), the float/int tests, and the type promotion of
``keras.backend.result_type``."""
import functools

import numpy as np

from kgraph.backend.settings import floatx

_PYTHON_TYPES = {bool: "bool", int: "int32", float: "float32", complex: "complex64", str: "string"}
# Names NumPy lacks (or names otherwise), kept as Keras spells them.
_NAMED = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "string"}
_FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
_WEAK_INT, _WEAK_FLOAT = "int", "float"

# Each type and the types directly above it (JAX's promotion lattice, as Keras uses it). "int" and "float" are the
# weak types of Python scalars: they take the other operand's precision.
_ABOVE = {
    "bool": (_WEAK_INT,), _WEAK_INT: ("uint8", "int8", "complex64"),
    "uint8": ("int16", "uint16"), "uint16": ("int32", "uint32"), "uint32": ("int64", "uint64"),
    "uint64": (_WEAK_FLOAT,), "int8": ("int16",), "int16": ("int32",), "int32": ("int64",),
    "int64": (_WEAK_FLOAT,), _WEAK_FLOAT: ("bfloat16", "float16"), "bfloat16": ("float32",),
    "float16": ("float32",), "float32": ("float64", "complex64"), "float64": ("complex128",),
    "complex64": ("complex128",), "complex128": (),
}
# Outside TensorFlow, Keras's promotion never gives a 64-bit type.
_TO_32_BITS = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


def _upper_bounds(node):
    seen, stack = {node}, [node]
    while stack:
        for up in _ABOVE[stack.pop()]:
            if up not in seen:
                seen.add(up)
                stack.append(up)
    return frozenset(seen)


_BOUNDS = {node: _upper_bounds(node) for node in _ABOVE}


def standardize(dtype):
    """Keras's name of ``dtype``: a name, a NumPy dtype or scalar type, a Python type, or None (floatx)."""
    if dtype is None:
        return floatx()
    if isinstance(dtype, type) and dtype in _PYTHON_TYPES:
        return _PYTHON_TYPES[dtype]
    if isinstance(dtype, str) and dtype in _NAMED:
        return dtype
    if dtype == "int":
        return "int32"
    name = getattr(dtype, "name", None)
    if isinstance(name, str) and name in _NAMED:
        return name
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name == "str":
        return "string"
    if name not in _ABOVE or name in (_WEAK_INT, _WEAK_FLOAT):
        raise ValueError(f"Invalid dtype: {dtype!r}. Expected a bool, integer, float or complex type, or 'string'.")
    return name


def is_float_dtype(dtype):
    """Whether ``dtype`` is a floating type (``bfloat16`` and the float8 types included)."""
    return standardize(dtype).startswith(("float", "bfloat"))


def is_int_dtype(dtype):
    """Whether ``dtype`` is a signed or unsigned integer type."""
    return standardize(dtype).startswith(("int", "uint"))


@functools.lru_cache(maxsize=512)
def _least_upper_bound(*nodes):
    common = frozenset.intersection(*(_BOUNDS[n] for n in nodes))
    lowest = (common & set(nodes)) or {c for c in common if common <= _BOUNDS[c]}
    if len(lowest) != 1:
        raise ValueError(f"Input dtypes {tuple(nodes)} have no available implicit dtype promotion path. Try "
                         "explicitly casting inputs to the desired output type.")
    return next(iter(lowest))


def _weak(dtype):
    if dtype == "bool":
        return dtype
    if "float" in dtype:
        return _WEAK_FLOAT
    if "int" in dtype:
        return _WEAK_INT
    return dtype  # a complex Python scalar promotes as complex64 does


def _resolve_weak(dtype):
    """A weak type made concrete at floatx's precision."""
    bits = floatx()[-2:]
    kind = "f" if dtype == "bfloat16" else dtype[:1]
    return {"b": "bool", "i": f"int{bits}", "u": f"uint{bits}"}.get(kind, f"float{bits}")


def result_type(*dtypes):
    """The dtype Keras's type promotion gives for ``dtypes`` (Python ``int``/``float`` are weak types); floatx for
    none. As Keras outside TensorFlow, 64-bit results are narrowed to 32 bits."""
    if not dtypes:
        return floatx()
    if any(d in _FLOAT8 for d in dtypes if isinstance(d, str)):
        raise ValueError(f"There is no implicit conversions from float8 dtypes to others. You must cast it "
                         f"internally. Received: {dtypes}")
    weak = [d is int or d is float for d in dtypes]
    names = [standardize(d) for d in dtypes]
    for name in names:
        if name not in _ABOVE:
            raise ValueError(f"dtype='{name}' is not a valid dtype for Keras type promotion.")
    if len(names) == 1:
        out, out_weak = names[0], weak[0]
    elif len(set(names)) == 1 and not all(weak):
        out, out_weak = names[0], False
    elif all(weak):
        out, out_weak = _least_upper_bound(*sorted(set(names))), True
    else:
        out = _least_upper_bound(*sorted({_weak(n) if w else n for n, w in zip(names, weak)}))
        out_weak = out in (_WEAK_INT, _WEAK_FLOAT)
    if out_weak and out != "bool":
        out = _resolve_weak(out)
    return _TO_32_BITS.get(out, out)
