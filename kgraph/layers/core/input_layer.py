"""InputLayer and Input(): the entry points of a functional graph."""
from kgraph import backend
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.graph.node import Node
from kgraph.layers.layer import Layer


class InputLayer(Layer):
    """Holds the symbolic tensor that a model's data enters through."""

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None, batch_shape=None,
                 input_tensor=None, **kwargs):
        if "batch_input_shape" in kwargs:
            batch_shape = kwargs.pop("batch_input_shape")
        if "input_shape" in kwargs:
            shape = kwargs.pop("input_shape")
        super().__init__(name=name, dtype=dtype, **kwargs)
        if batch_shape is None:
            if shape is None:
                raise ValueError("You must pass a `shape` argument to Input (e.g. `Input(shape=(32,))`).")
            if isinstance(shape, int):
                shape = (shape,)
            batch_shape = (batch_size,) + tuple(shape)
        self.batch_shape = tuple(None if d is None else int(d) for d in batch_shape)
        for d in self.batch_shape:
            if d is not None and d < 0:
                raise ValueError(f"Input shape dimensions must be non-negative. Received: shape={self.batch_shape}")
        self.built = True
        tensor = KerasTensor(self.batch_shape, dtype=self.dtype, name=self.name)
        Node(self, (), {}, outputs=tensor)
        self.output_tensor = tensor

    def get_config(self):
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype, "name": self.name}

    def compute_output_shape(self, input_shape):
        return self.batch_shape


def Input(shape=None, batch_size=None, name=None, dtype=None, batch_shape=None, **kwargs):
    """Create a symbolic input tensor (the output of a new ``InputLayer``)."""
    dtype = backend.standardize_dtype(dtype)
    layer = InputLayer(shape=shape, batch_size=batch_size, name=name, dtype=dtype,
                       batch_shape=batch_shape, **kwargs)
    return layer.output_tensor
