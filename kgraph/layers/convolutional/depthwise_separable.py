"""Depthwise and depthwise-separable 2D convolution layers with Keras's weights and weight order."""
from kgraph import activations, initializers, ops, regularizers
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.layers.convolutional.conv import (check_data_format, check_padding, conv_output_shape, input_channels,
                                         reject_unsupported, serialize_regularizer)
from kgraph.ops.kernels.windows import normalize_tuple


class _DepthwiseBase(Layer):
    """Window geometry, depth multiplier, activation and bias shared by the depthwise layers."""

    def __init__(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                 use_bias, bias_initializer, bias_regularizer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(depth_multiplier, int) or depth_multiplier <= 0:
            raise ValueError(f"Invalid value for argument `depth_multiplier` of layer '{self.name}'. Expected a "
                             f"strictly positive integer. Received depth_multiplier={depth_multiplier}.")
        self.depth_multiplier = depth_multiplier
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                             f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.padding = check_padding(self, padding, ("valid", "same"))
        self.data_format = check_data_format(self, data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.get(bias_initializer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.input_spec = InputSpec(ndim=4)

    def _window_output_shape(self, input_shape, out_channels):
        return conv_output_shape(self, input_shape, self.kernel_size, self.strides, self.padding,
                                 self.dilation_rate, out_channels)

    def get_config(self):
        config = super().get_config()
        config.update({
            "kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding,
            "depth_multiplier": self.depth_multiplier, "data_format": self.data_format,
            "dilation_rate": self.dilation_rate, "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias, "bias_initializer": initializers.serialize(self.bias_initializer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
        })
        return config


class DepthwiseConv2D(_DepthwiseBase):
    """Convolves each input channel with its own ``depth_multiplier`` filters; kernel ``(kh, kw, in, multiplier)``."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, **kwargs)
        reject_unsupported(self, activity_regularizer=activity_regularizer,
                           depthwise_constraint=depthwise_constraint, bias_constraint=bias_constraint)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)

    def compute_output_shape(self, input_shape):
        channels = input_channels(self, input_shape, 2)
        return self._window_output_shape(input_shape, channels * self.depth_multiplier)

    def build(self, input_shape):
        channels = input_channels(self, input_shape, 2)
        self.kernel = self.add_weight(shape=self.kernel_size + (channels, self.depth_multiplier),
                                      initializer=self.depthwise_initializer,
                                      regularizer=self.depthwise_regularizer, name="kernel")
        self.bias = self.add_weight(shape=(channels * self.depth_multiplier,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, name="bias") if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={-1: channels})
        self.built = True

    def call(self, inputs):
        fused = self.activation is activations.relu
        out = ops.depthwise_conv(inputs, self.kernel, self.strides, self.padding,
                                 dilation_rate=self.dilation_rate, bias=self.bias, relu=fused)
        return out if fused else self.activation(out)

    def get_config(self):
        config = super().get_config()
        config.update({
            "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
            "depthwise_regularizer": serialize_regularizer(self.depthwise_regularizer),
        })
        return config


class SeparableConv2D(_DepthwiseBase):
    """A depthwise convolution then a 1x1 convolution to ``filters`` channels.

    Weights, in Keras's order: ``depthwise_kernel (kh, kw, in, multiplier)``,
    ``pointwise_kernel (1, 1, in * multiplier, filters)``, ``bias (filters,)``.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, bias_initializer, bias_regularizer, **kwargs)
        reject_unsupported(self, activity_regularizer=activity_regularizer,
                           depthwise_constraint=depthwise_constraint, pointwise_constraint=pointwise_constraint,
                           bias_constraint=bias_constraint)
        if not isinstance(filters, int) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters` of layer '{self.name}'. Expected a strictly "
                             f"positive integer. Received filters={filters}.")
        self.filters = filters
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)

    def compute_output_shape(self, input_shape):
        input_channels(self, input_shape, 2)
        return self._window_output_shape(input_shape, self.filters)

    def build(self, input_shape):
        channels = input_channels(self, input_shape, 2)
        self.depthwise_kernel = self.add_weight(
            shape=self.kernel_size + (channels, self.depth_multiplier), initializer=self.depthwise_initializer,
            regularizer=self.depthwise_regularizer, name="depthwise_kernel")
        self.pointwise_kernel = self.add_weight(
            shape=(1, 1, channels * self.depth_multiplier, self.filters), initializer=self.pointwise_initializer,
            regularizer=self.pointwise_regularizer, name="pointwise_kernel")
        self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, name="bias") if self.use_bias else None
        self.input_spec = InputSpec(ndim=4, axes={-1: channels})
        self.built = True

    def call(self, inputs):
        fused = self.activation is activations.relu
        out = ops.separable_conv(inputs, self.depthwise_kernel, self.pointwise_kernel, self.strides, self.padding,
                                 dilation_rate=self.dilation_rate, bias=self.bias, relu=fused)
        return out if fused else self.activation(out)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters,
            "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
            "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
            "depthwise_regularizer": serialize_regularizer(self.depthwise_regularizer),
            "pointwise_regularizer": serialize_regularizer(self.pointwise_regularizer),
        })
        return config
