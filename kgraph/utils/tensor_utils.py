"""``keras.utils`` helpers about symbolic tensors and dtype names."""
from kgraph import tree
from kgraph.backend.settings import floatx
from kgraph.graph.keras_tensor import KerasTensor

# The dtype names Keras accepts, and Python types as Keras (on a backend other than TensorFlow) names them.
_KNOWN_DTYPES = frozenset({
    "bfloat16", "bool", "complex128", "complex64", "float16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
    "int16", "int32", "int64", "int8", "string", "uint16", "uint32", "uint64", "uint8"})
_PYTHON_TYPES = {bool: "bool", int: "int32", "int": "int32", float: "float32", str: "string", complex: "complex64"}


def standardize_dtype(dtype):
    """Keras's name of ``dtype``: a name, a NumPy / torch dtype or a Python type (``None``: ``floatx()``)."""
    if dtype is None:
        return floatx()
    try:
        dtype = _PYTHON_TYPES.get(dtype, dtype)
    except TypeError:  # an unhashable argument
        raise ValueError(f"Invalid dtype: {dtype}") from None
    if hasattr(dtype, "name"):
        dtype = dtype.name
    elif hasattr(dtype, "__name__"):
        dtype = dtype.__name__
    elif "torch" in str(dtype):
        dtype = str(dtype).split(".")[-1]
    if dtype not in _KNOWN_DTYPES:
        raise ValueError(f"Invalid dtype: {dtype}")
    return dtype


def is_keras_tensor(x):
    """True for a symbolic tensor (``kgraph.Input(...)`` and layer outputs on it), False for arrays."""
    return isinstance(x, KerasTensor)


def get_source_inputs(tensor):
    """The input tensors (``Input`` outputs, or tensors no layer produced) that ``tensor`` is computed from.

    A tensor without history comes back as it is; otherwise the result is a list, inputs in first-use order.
    """
    if not hasattr(tensor, "_keras_history"):
        return tensor
    sources, pending, seen, visited = [], [tensor], set(), set()
    while pending:
        current = pending.pop()
        history = current._keras_history
        node = None
        if history is not None and history.layer is not None and history.layer._inbound_nodes:
            node = history.layer._inbound_nodes[history.node_index]
        if node is None or node.is_input:
            found = [current] if node is None else tree.flatten(node.output_tensors)
            sources.extend(t for t in found if id(t) not in seen)
            seen.update(id(t) for t in found)
            continue
        if id(node) not in visited:
            visited.add(id(node))
            pending.extend(reversed(node.input_tensors))
    return sources
