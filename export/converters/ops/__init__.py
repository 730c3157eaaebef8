"""Converters of ``kgraph.ops`` op nodes, grouped by ``keras.ops`` family; importing this package registers them all."""
# Each converter reads the call's arguments by name (``ctx.arguments``) and computes what the eager NumPy function
# computes, NumPy's dtype rules included: operands are cast to the dtype of the op node's output. An op with no
# ONNX form is declared with ``export.registry.unexportable(name, reason)``.
from export.converters.ops import (  # noqa: F401  # noqa: F401  # noqa: F401
    core,
    image,
    linalg,
    math,
    nn,
    nn_conv,
    numpy_complex,
    numpy_creation,
    numpy_index,
    numpy_logic,
    numpy_math,
    numpy_products,
    numpy_reductions,
    numpy_shape,
)
