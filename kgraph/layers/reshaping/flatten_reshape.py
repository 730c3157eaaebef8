"""Reshaping layers: Flatten, Reshape."""
import numpy as np

from kgraph import ops
from kgraph.layers.layer import Layer


class Flatten(Layer):
    """Flattens every axis but the batch axis."""

    _preserves_dtype = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = data_format or "channels_last"

    def call(self, inputs):
        x = inputs
        if self.data_format == "channels_first" and np.ndim(x) > 2:
            x = ops.transpose(x, (0,) + tuple(range(2, np.ndim(x))) + (1,))
        shape = np.shape(x)
        # The width from the known axes, as Keras's Flatten: -1 cannot be solved on a batch of no rows.
        width = -1 if any(d is None for d in shape[1:]) else int(np.prod(shape[1:]))
        return ops.reshape(x, (shape[0], width))

    def compute_output_shape(self, input_shape):
        rest = input_shape[1:]
        size = None if any(d is None for d in rest) else int(np.prod(rest))
        return (input_shape[0], size)

    def get_config(self):
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Reshape(Layer):
    """Reshapes the non-batch axes to ``target_shape`` (one entry may be -1)."""

    _preserves_dtype = True

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in target_shape) > 1 or any(d < -1 or d == 0 for d in target_shape):
            raise ValueError(f"`target_shape` may hold at most one -1 and positive sizes. "
                             f"Received: target_shape={target_shape}")
        self.target_shape = target_shape

    def _resolve(self, input_shape):
        known = [d for d in input_shape[1:]]
        if -1 not in self.target_shape:
            if None not in known and int(np.prod(known)) != int(np.prod(self.target_shape)):
                raise ValueError(f"Layer '{self.name}': total size of the input shape {tuple(input_shape)} "
                                 f"(without the batch axis) must equal the size of target_shape "
                                 f"{self.target_shape}.")
            return self.target_shape
        if None in known:
            return tuple(None if d == -1 else d for d in self.target_shape)
        total, rest = int(np.prod(known)), int(np.prod([d for d in self.target_shape if d != -1]))
        if total % rest:
            raise ValueError(f"Layer '{self.name}': cannot reshape input shape {tuple(input_shape)} to "
                             f"target_shape {self.target_shape}.")
        return tuple(total // rest if d == -1 else d for d in self.target_shape)

    def call(self, inputs):
        return ops.reshape(inputs, (np.shape(inputs)[0],) + self.target_shape)

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self._resolve(input_shape)

    def get_config(self):
        config = super().get_config()
        config["target_shape"] = list(self.target_shape)
        return config
