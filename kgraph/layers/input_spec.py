"""InputSpec: what a layer accepts (rank, last dimensions, dtype), checked at call time."""
import numpy as np

from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor


class InputSpec:
    """Expected ``dtype``, ``shape``, ``ndim``, ``min_ndim``, ``max_ndim`` and ``axes`` of one input.

    ``axes`` maps an axis (negative counts from the end) to its required size.
    """

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None):
        self.dtype = dtype
        self.shape = tuple(shape) if shape is not None else None
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim = max_ndim
        self.min_ndim = min_ndim
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        self.name = name

    def __repr__(self):
        parts = [f"{k}={v}" for k, v in (("dtype", self.dtype), ("shape", self.shape), ("ndim", self.ndim),
                                           ("max_ndim", self.max_ndim), ("min_ndim", self.min_ndim),
                                           ("axes", self.axes or None)) if v is not None]
        return f"InputSpec({', '.join(parts)})"


def _shape_and_dtype(x):
    if isinstance(x, np.ndarray):  # attributes, not np.shape: a taped array's np.shape would dispatch
        return x.shape, x.dtype
    if isinstance(x, KerasTensor):
        return x.shape, x.dtype
    return tuple(np.shape(x)), getattr(np.asarray(x) if not hasattr(x, "dtype") else x, "dtype", None)


def assert_input_compatibility(input_spec, inputs, layer_name):
    """Raise a ValueError naming the layer when ``inputs`` do not match ``input_spec``."""
    if input_spec is None:
        return
    specs = input_spec if isinstance(input_spec, (list, tuple)) else [input_spec]
    flat = tree.flatten(inputs)
    if len(flat) != len(specs):
        raise ValueError(
            f'Layer "{layer_name}" expects {len(specs)} input(s), but it received {len(flat)} input tensors. '
            f"Inputs received: {flat}"
        )
    for index, (x, spec) in enumerate(zip(flat, specs)):
        if spec is None:
            continue
        shape, dtype = _shape_and_dtype(x)
        where = f'Input {index} of layer "{layer_name}" is incompatible with the layer'
        if spec.ndim is not None and len(shape) != spec.ndim:
            raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={len(shape)}. "
                             f"Full shape received: {shape}")
        if spec.max_ndim is not None and len(shape) > spec.max_ndim:
            raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={len(shape)}. "
                             f"Full shape received: {shape}")
        if spec.min_ndim is not None and len(shape) < spec.min_ndim:
            raise ValueError(f"{where}: expected min_ndim={spec.min_ndim}, found ndim={len(shape)}. "
                             f"Full shape received: {shape}")
        if spec.dtype is not None and dtype is not None and np.dtype(dtype).name != np.dtype(spec.dtype).name:
            raise ValueError(f"{where}: expected dtype={spec.dtype}, found dtype={np.dtype(dtype).name}")
        for axis, size in spec.axes.items():
            if not -len(shape) <= axis < len(shape):
                raise ValueError(f"{where}: expected axis {axis} of input shape to have value {size}, "
                                 f"but received input with shape {shape}")
            if size is not None and shape[axis] is not None and shape[axis] != size:
                raise ValueError(f"{where}: expected axis {axis} of input shape to have value {size}, "
                                 f"but received input with shape {shape}")
        if spec.shape is not None:
            for expected, actual in zip(spec.shape, shape):
                if expected is not None and actual is not None and expected != actual:
                    raise ValueError(f"{where}: expected shape={spec.shape}, found shape={shape}")
