"""InputLayer and Input(): the entry points of a functional graph."""
from kgraph import backend
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.graph.node import Node
from kgraph.layers.arguments import reject_unsupported
from kgraph.layers.layer import Layer


class InputLayer(Layer):
    """Holds the symbolic tensor that a model's data enters through."""

    def __init__(self, shape=None, batch_size=None, dtype=None, sparse=None, ragged=None, batch_shape=None,
                 input_tensor=None, optional=False, name=None, **kwargs):
        if "batch_input_shape" in kwargs:
            batch_shape = kwargs.pop("batch_input_shape")
        if "input_shape" in kwargs:
            shape = kwargs.pop("input_shape")
        super().__init__(name=name, dtype=dtype, **kwargs)
        # kgraph has neither sparse nor ragged tensors, and its models take no None inputs.
        reject_unsupported(self, allowed=(None, False), sparse=sparse, ragged=ragged)
        reject_unsupported(self, allowed=(False,), optional=optional)
        if input_tensor is not None:
            batch_shape = self._adopted_shape(input_tensor, shape, batch_size, batch_shape, dtype)
            self.dtype = input_tensor.dtype
        elif batch_shape is None:
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
        tensor = input_tensor if input_tensor is not None else \
            KerasTensor(self.batch_shape, dtype=self.dtype, name=self.name)
        Node(self, (), {}, outputs=tensor)
        self.output_tensor = tensor

    @staticmethod
    def _adopted_shape(tensor, shape, batch_size, batch_shape, dtype):
        """The batch shape of ``input_tensor`` (Keras's ``Input(tensor=...)``), checked against the other arguments."""
        if not isinstance(tensor, KerasTensor):
            raise ValueError(f"Argument `input_tensor` must be a KerasTensor. Received invalid type: "
                             f"input_tensor={tensor!r} (of type {type(tensor)})")
        checks = (("batch_size", batch_size, lambda: len(tensor.shape) >= 1 and tensor.shape[0] == batch_size),
                  ("shape", shape, lambda: tuple(shape) == tuple(tensor.shape[1:])),
                  ("batch_shape", batch_shape, lambda: tuple(batch_shape) == tuple(tensor.shape)),
                  ("dtype", dtype, lambda: backend.standardize_dtype(dtype) == tensor.dtype))
        for argument, value, compatible in checks:
            if value is not None and not compatible():
                raise ValueError(f"When providing the `input_tensor` argument, you cannot provide an incompatible "
                                 f"`{argument}` argument.")
        return tensor.shape

    def get_config(self):
        return {"batch_shape": list(self.batch_shape), "dtype": self.dtype, "name": self.name}

    def compute_output_shape(self, input_shape):
        return self.batch_shape


def Input(shape=None, batch_size=None, dtype=None, sparse=None, ragged=None, batch_shape=None, name=None,
          tensor=None, optional=False, **kwargs):
    """Create a symbolic input tensor (the output of a new ``InputLayer``); Keras's arguments, in its order."""
    dtype = backend.standardize_dtype(dtype) if tensor is None else dtype
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse, ragged=ragged,
                       batch_shape=batch_shape, input_tensor=tensor, optional=optional, name=name, **kwargs)
    return layer.output_tensor
