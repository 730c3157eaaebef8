"""Transposed convolutions: Conv1DTranspose, Conv2DTranspose, Conv3DTranspose, with Keras's arguments and kernels."""
import numpy as np

from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.layers.arguments import check_data_format, check_padding, serialize_regularizer
from kgraph.layers.convolutional.conv import input_channels
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops.kernels.windows import normalize_tuple, transpose_crop


class BaseConvTranspose(Layer):
    """Transposed convolution over ``rank`` spatial axes; kernel ``(*kernel_size, filters, in_channels)``."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if not isinstance(filters, (int, np.integer)) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters` of layer '{self.name}'. Expected a strictly "
                             f"positive integer. Received filters={filters}.")
        rank = self.rank
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = normalize_tuple(strides, rank, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                             f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.padding = check_padding(self, padding, ("valid", "same"))
        self.data_format = check_data_format(self, data_format)
        self.output_padding = None if output_padding is None else self._output_padding(output_padding)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=rank + 2)

    def _output_padding(self, value):
        rank = self.rank
        items = (value,) * rank if isinstance(value, (int, np.integer)) else tuple(value)
        if len(items) != rank or not all(isinstance(p, (int, np.integer)) and p >= 0 for p in items):
            raise ValueError(f"Layer '{self.name}': `output_padding` must be a non-negative int or a tuple of "
                             f"{rank} non-negative ints. Received: output_padding={value}")
        items = tuple(int(p) for p in items)
        if any(p >= s for p, s in zip(items, self.strides)):
            raise ValueError(f"Strides must be greater than output padding. Received strides={self.strides}, "
                             f"output_padding={items}.")
        return items

    def build(self, input_shape):
        channels = input_channels(self, input_shape, self.rank)
        self.kernel = self.add_weight(shape=self.kernel_size + (self.filters, channels),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, name="kernel")
        self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={-1: channels})
        self.built = True

    def call(self, inputs):
        out = ops.conv_transpose(inputs, self.kernel, self.strides, self.padding, self.output_padding,
                                 dilation_rate=self.dilation_rate, bias=self.bias)
        return self.activation(out)

    def crops(self):
        """Per spatial axis, ``(crop_before, extra)`` of the full transposed convolution (see ``transpose_crop``)."""
        output_padding = self.output_padding or (None,) * self.rank
        return tuple(transpose_crop(k, s, d, self.padding, p) for k, s, d, p in
                     zip(self.kernel_size, self.strides, self.dilation_rate, output_padding))

    def compute_output_shape(self, input_shape):
        input_channels(self, input_shape, self.rank)
        spatial = []
        for n, k, s, d, (crop, extra) in zip(input_shape[1:-1], self.kernel_size, self.strides,
                                             self.dilation_rate, self.crops()):
            spatial.append(None if n is None else (n - 1) * s + (k - 1) * d + 1 - crop + extra)
        return (input_shape[0],) + tuple(spatial) + (self.filters,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "output_padding": self.output_padding, "data_format": self.data_format,
            "dilation_rate": self.dilation_rate, "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias, "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        })
        return config


class Conv2DTranspose(BaseConvTranspose):
    """Transposed 2D convolution over ``(batch, rows, cols, channels)``; kernel ``(kh, kw, filters, in_channels)``."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", output_padding=None,
                 data_format=None, dilation_rate=(1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format, dilation_rate,
                         **kwargs)


class Conv1DTranspose(BaseConvTranspose):
    """Transposed 1D convolution over ``(batch, steps, channels)``; kernel ``(k, filters, in_channels)``."""

    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None, data_format=None,
                 dilation_rate=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format, dilation_rate,
                         **kwargs)


class Conv3DTranspose(BaseConvTranspose):
    """Transposed 3D convolution over ``(batch, d1, d2, d3, channels)``; kernel ``(k1, k2, k3, filters, in)``."""

    rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 output_padding=None, dilation_rate=(1, 1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format, dilation_rate,
                         **kwargs)


Convolution1DTranspose = Conv1DTranspose
Convolution3DTranspose = Conv3DTranspose
