"""Depthwise and depthwise-separable convolutions of any rank: DepthwiseConv1D/2D, SeparableConv1D/2D.

Weights follow Keras's names, shapes and order: a depthwise kernel ``window + (in, multiplier)``, for the
separable layers a pointwise kernel ``(1,) * rank + (in * multiplier, filters)``, then the bias.
"""
from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.layers.arguments import check_data_format, check_padding, serialize_regularizer
from kgraph.layers.convolutional.conv import conv_output_shape, input_channels
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops.kernels.windows import normalize_tuple


def _positive(layer, name, value):
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"Invalid value for argument `{name}` of layer '{layer.name}'. Expected a strictly "
                         f"positive integer. Received {name}={value}.")
    return value


class BaseDepthwise(Layer):
    """Window geometry, depth multiplier, depthwise kernel, activation and bias of the depthwise layers."""

    rank = None

    def __init__(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                 use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.depth_multiplier = _positive(self, "depth_multiplier", depth_multiplier)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                             f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.padding = check_padding(self, padding, ("valid", "same"))
        self.data_format = check_data_format(self, data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.depthwise_regularizer = regularizers.get(depthwise_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.depthwise_constraint = constraints.get(depthwise_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def _depthwise_kernel(self, input_shape, name):
        """The ``window + (in, multiplier)`` depthwise kernel, created under ``name``; pins the input channels."""
        channels = input_channels(self, input_shape, self.rank)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={-1: channels})
        return self.add_weight(shape=self.kernel_size + (channels, self.depth_multiplier),
                               initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
                               constraint=self.depthwise_constraint, name=name)

    def _add_bias(self, size):
        """The ``(size,)`` bias (None without ``use_bias``)."""
        self.bias = self.add_weight(shape=(size,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None

    def _finish(self, out):
        """The activation of ``out``, unless the op already applied it (a fused relu)."""
        return out if self.activation is activations.relu else self.activation(out)

    def _window_output_shape(self, input_shape, out_channels):
        return conv_output_shape(self, input_shape, self.kernel_size, self.strides, self.padding,
                                 self.dilation_rate, out_channels)

    def get_config(self):
        config = super().get_config()
        config.update({
            "kernel_size": self.kernel_size, "strides": self.strides, "padding": self.padding,
            "depth_multiplier": self.depth_multiplier, "data_format": self.data_format,
            "dilation_rate": self.dilation_rate, "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias, "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "depthwise_regularizer": serialize_regularizer(self.depthwise_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "depthwise_constraint": constraints.serialize(self.depthwise_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        })
        return config


class BaseDepthwiseConv(BaseDepthwise):
    """Convolves each input channel with its own ``depth_multiplier`` filters; kernel ``window + (in, multiplier)``."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    def __init__(self, kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                 use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                 activity_regularizer, depthwise_constraint, bias_constraint, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
                         bias_regularizer, activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)

    def compute_output_shape(self, input_shape):
        channels = input_channels(self, input_shape, self.rank)
        return self._window_output_shape(input_shape, channels * self.depth_multiplier)

    def build(self, input_shape):
        self.kernel = self._depthwise_kernel(input_shape, "kernel")
        self._add_bias(input_shape[-1] * self.depth_multiplier)
        self.built = True

    def call(self, inputs):
        out = ops.depthwise_conv(inputs, self.kernel, self.strides, self.padding, dilation_rate=self.dilation_rate,
                                 bias=self.bias, relu=self.activation is activations.relu)
        return self._finish(out)


class BaseSeparableConv(BaseDepthwise):
    """A depthwise convolution then a pointwise (size 1) convolution to ``filters`` channels."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    def __init__(self, filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier,
                 activation, use_bias, depthwise_initializer, pointwise_initializer, bias_initializer,
                 depthwise_regularizer, pointwise_regularizer, bias_regularizer, activity_regularizer,
                 depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer,
                         bias_regularizer, activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)
        self.filters = _positive(self, "filters", filters)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.pointwise_regularizer = regularizers.get(pointwise_regularizer)
        self.pointwise_constraint = constraints.get(pointwise_constraint)

    def compute_output_shape(self, input_shape):
        input_channels(self, input_shape, self.rank)
        return self._window_output_shape(input_shape, self.filters)

    def build(self, input_shape):
        self.depthwise_kernel = self._depthwise_kernel(input_shape, "depthwise_kernel")
        self.pointwise_kernel = self.add_weight(
            shape=(1,) * self.rank + (input_shape[-1] * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, name="pointwise_kernel")
        self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        out = ops.separable_conv(inputs, self.depthwise_kernel, self.pointwise_kernel, self.strides, self.padding,
                                 dilation_rate=self.dilation_rate, bias=self.bias,
                                 relu=self.activation is activations.relu)
        return self._finish(out)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters,
            "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
            "pointwise_regularizer": serialize_regularizer(self.pointwise_regularizer),
            "pointwise_constraint": constraints.serialize(self.pointwise_constraint),
        })
        return config


class DepthwiseConv1D(BaseDepthwiseConv):
    """Depthwise convolution over steps ``(batch, steps, channels)``; kernel ``(k, in, multiplier)``."""

    rank = 1

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)


class DepthwiseConv2D(BaseDepthwiseConv):
    """Depthwise convolution over images ``(batch, h, w, channels)``; kernel ``(kh, kw, in, multiplier)``."""

    rank = 2

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1, data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format, dilation_rate, activation,
                         use_bias, depthwise_initializer, bias_initializer, depthwise_regularizer, bias_regularizer,
                         activity_regularizer, depthwise_constraint, bias_constraint, **kwargs)


class SeparableConv1D(BaseSeparableConv):
    """Separable convolution over steps; pointwise kernel ``(1, in * multiplier, filters)``."""

    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 depth_multiplier=1, activation=None, use_bias=True, depthwise_initializer="glorot_uniform",
                 pointwise_initializer="glorot_uniform", bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier,
                         activation, use_bias, depthwise_initializer, pointwise_initializer, bias_initializer,
                         depthwise_regularizer, pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs)


class SeparableConv2D(BaseSeparableConv):
    """Separable convolution over images; pointwise kernel ``(1, 1, in * multiplier, filters)``."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None, pointwise_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, depthwise_constraint=None,
                 pointwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, depth_multiplier,
                         activation, use_bias, depthwise_initializer, pointwise_initializer, bias_initializer,
                         depthwise_regularizer, pointwise_regularizer, bias_regularizer, activity_regularizer,
                         depthwise_constraint, pointwise_constraint, bias_constraint, **kwargs)


SeparableConvolution1D = SeparableConv1D
