"""Core layers: Dense, Activation, Dropout, Identity."""
import numpy as np

from kgraph import activations, initializers, ops, regularizers
from kgraph.input_spec import InputSpec
from kgraph.layer import Layer
from kgraph.random import generator


class Dense(Layer):
    """``activation(inputs @ kernel + bias)`` on the last axis; kernel shape (input_dim, units)."""

    _masking = True

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive integer. "
                             f"Received: units={units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer) if kernel_regularizer else None
        self.bias_regularizer = regularizers.get(bias_regularizer) if bias_regularizer else None
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        input_dim = input_shape[-1]
        if input_dim is None:
            raise ValueError(f"The last dimension of the inputs to Dense layer '{self.name}' must be defined. "
                             f"Received: input_shape={input_shape}")
        self.kernel = self.add_weight(shape=(input_dim, self.units), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, name="kernel")
        self.bias = self.add_weight(shape=(self.units,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, name="bias") if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=2, axes={-1: input_dim})
        self.built = True

    def call(self, inputs):
        return self.activation(ops.dense(inputs, self.kernel, self.bias))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer) if self.kernel_regularizer else None,
            "bias_regularizer": regularizers.serialize(self.bias_regularizer) if self.bias_regularizer else None,
        })
        return config


class Activation(Layer):
    """Applies an activation function by name or callable."""

    _masking = True

    _preserves_dtype = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Identity(Layer):
    """Returns its input unchanged."""

    _masking = True

    _preserves_dtype = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class Dropout(Layer):
    """Zeroes a fraction ``rate`` of inputs in training and scales the rest by ``1 / (1 - rate)``."""

    _masking = True

    _preserves_dtype = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between "
                             f"0 and 1. Received: rate={rate}")
        self.rate = float(rate)
        self.noise_shape = tuple(noise_shape) if noise_shape is not None else None
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        shape = np.shape(inputs)
        if self.noise_shape is not None:
            shape = tuple(s if n is None else n for s, n in zip(shape, self.noise_shape))
        if self.rate == 1:
            return ops.multiply(inputs, np.zeros(shape, dtype=inputs.dtype))
        keep = (self._rng or generator()).random(shape) >= self.rate
        mask = keep.astype(inputs.dtype) / np.asarray(1.0 - self.rate, dtype=inputs.dtype)
        return ops.multiply(inputs, mask)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"rate": self.rate, "noise_shape": list(self.noise_shape) if self.noise_shape else None,
                       "seed": self.seed})
        return config
