"""The arguments of an op call: Python floats as floatx arrays, and configuration that holds a KerasTensor."""
import numpy as np

from kgraph.graph.keras_tensor import KerasTensor


def python_floats_as_floatx(args, num_inputs):
    """Inputs that are all Python numbers: the floats become floatx arrays, as Keras converts them to tensors
    (``ops.log(0.5)`` is float32, not NumPy's float64). A Python float beside an array stays weakly typed."""
    inputs = args[:num_inputs]
    if not all(type(a) in (float, int) for a in inputs):
        return args
    from kgraph.backend.settings import floatx
    return tuple(np.asarray(a, floatx()) if type(a) is float else a for a in inputs) + args[num_inputs:]


def symbolic_config(rest, kwargs):
    """Whether a configuration argument holds a KerasTensor (``tile(x, [batch, 1])`` with a traced size)."""
    for v in (*rest, *kwargs.values()):
        if isinstance(v, KerasTensor) or (type(v) in (list, tuple) and any(isinstance(e, KerasTensor) for e in v)):
            return True
    return False
