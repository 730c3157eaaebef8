"""Convolution layers: Conv1D, Conv2D, with Keras's arguments and kernel layout (transposed ones in conv_transpose)."""
import numpy as np

from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.layers.arguments import check_data_format, check_padding, reject_unsupported, serialize_regularizer
from kgraph.layers.input_spec import InputSpec, assert_input_compatibility
from kgraph.layers.layer import Layer
from kgraph.ops.kernels.windows import conv_output_length, conv_pads, normalize_tuple


def input_channels(layer, input_shape, rank):
    """The defined channel count of a ``(batch, *spatial, channels)`` input shape."""
    if len(input_shape) != rank + 2:
        raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) expects inputs of rank {rank + 2} "
                         f"(batch, {rank} spatial axes, channels). Received: input_shape={tuple(input_shape)}")
    if input_shape[-1] is None:
        raise ValueError(f"The channel dimension of the inputs to layer '{layer.name}' should be defined. "
                         f"Received: input_shape={tuple(input_shape)}")
    return int(input_shape[-1])


def conv_output_shape(layer, input_shape, kernel_size, strides, padding, dilation_rate, channels):
    """Output shape of a convolution or pooling window; an error if a spatial axis would be empty."""
    spatial = tuple(input_shape[1:-1])
    pads = conv_pads([0 if n is None else n for n in spatial], kernel_size, strides, padding, dilation_rate)
    out = []
    for n, k, s, d, p in zip(spatial, kernel_size, strides, dilation_rate, pads):
        if n is not None and padding == "same":
            out.append(-(-n // s))
            continue
        length = conv_output_length(n, k, s, d, p)
        if length is not None and length < 1:
            raise ValueError(f"Layer '{layer.name}': computed output size would be negative or zero. Received "
                             f"inputs shape={tuple(input_shape)}, kernel/pool size={kernel_size}, "
                             f"strides={strides}, dilation_rate={dilation_rate}, padding={padding!r}.")
        out.append(length)
    return (input_shape[0],) + tuple(out) + (channels,)


class BaseConv(Layer):
    """Shared arguments, weights and shape logic of the ``rank``-D convolutions."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    rank = None
    paddings = ("valid", "same")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None, lora_rank=None,
                 lora_alpha=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        reject_unsupported(self, lora_rank=lora_rank, lora_alpha=lora_alpha)
        if not isinstance(filters, (int, np.integer)) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters` of layer '{self.name}'. Expected a strictly "
                             f"positive integer. Received filters={filters}.")
        if not isinstance(groups, (int, np.integer)) or groups <= 0:
            raise ValueError(f"The number of groups must be a positive integer. Received: groups={groups}.")
        if filters % groups:
            raise ValueError(f"The number of filters must be evenly divisible by the number of groups. "
                             f"Received: groups={groups}, filters={filters}.")
        self.filters, self.groups = int(filters), int(groups)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. "
                             f"Received: strides={self.strides} and dilation_rate={self.dilation_rate}")
        self.padding = check_padding(self, padding, self.paddings)
        self.data_format = check_data_format(self, data_format)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def build(self, input_shape):
        channels = input_channels(self, input_shape, self.rank)
        if channels % self.groups:
            raise ValueError(f"The number of input channels must be evenly divisible by the number of groups. "
                             f"Received groups={self.groups}, but the input has {channels} channels (full input "
                             f"shape is {tuple(input_shape)}).")
        self.kernel = self.add_weight(shape=self.kernel_size + (channels // self.groups, self.filters),
                                      initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, name="kernel")
        self.bias = self.add_weight(shape=(self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={-1: channels})
        self.built = True

    def call(self, inputs):
        # A relu runs inside the convolution op: one pass over the output fewer, one buffer fewer.
        fused = self.activation is activations.relu
        out = ops.conv(inputs, self.kernel, self.strides, self.padding, dilation_rate=self.dilation_rate,
                       bias=self.bias, relu=fused)
        return out if fused else self.activation(out)

    def fuses_max_pool(self, pool):
        """Whether ``pool(self(x))`` can run as one ``ops.conv_max_pool``.

        It can for a relu or no activation followed by max pooling over
        adjacent, non-overlapping windows with "valid" padding, when neither
        layer has an activity regularizer (the fused op skips both calls).
        """
        from kgraph.layers.pooling.pooling import BasePooling
        return (type(self).call is BaseConv.call and isinstance(pool, BasePooling)
                and self.activity_regularizer is None and pool.activity_regularizer is None
                and type(pool).call is BasePooling.call and type(pool).pool_function is ops.max_pool
                and pool.rank == self.rank and pool.strides == pool.pool_size and pool.padding == "valid"
                and self.activation in (activations.relu, activations.linear)
                and pool.compute_dtype == self.compute_dtype)

    def call_with_max_pool(self, inputs, pool):
        """``pool(self(inputs))`` as one op, for a ``pool`` that ``fuses_max_pool`` accepts.

        Functional models call this when a max pooling is the only reader of
        this layer's output: the convolution's output is never materialized
        in full (see ``kgraph.ops.conv_pool``).
        """
        assert_input_compatibility(self.input_spec, inputs, self.name)
        x = self._convert_input(inputs)
        return ops.conv_max_pool(x, self.kernel, self.strides, self.padding, dilation_rate=self.dilation_rate,
                                 bias=self.bias, relu=self.activation is activations.relu, pool_size=pool.pool_size)

    def compute_output_shape(self, input_shape):
        input_channels(self, input_shape, self.rank)
        return conv_output_shape(self, input_shape, self.kernel_size, self.strides, self.padding,
                                 self.dilation_rate, self.filters)

    def get_config(self):
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size, "strides": self.strides,
            "padding": self.padding, "data_format": self.data_format, "dilation_rate": self.dilation_rate,
            "groups": self.groups, "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
            "bias_regularizer": serialize_regularizer(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        })
        return config


class Conv1D(BaseConv):
    """1D convolution over ``(batch, steps, channels)``; padding "valid", "same" or "causal"."""

    rank = 1
    paddings = ("valid", "same", "causal")

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 groups=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, groups, **kwargs)

    def compute_output_shape(self, input_shape):
        if self.padding == "causal":
            input_channels(self, input_shape, 1)
            n = input_shape[1]
            steps = None if n is None else (n - 1) // self.strides[0] + 1
            return (input_shape[0], steps, self.filters)
        return super().compute_output_shape(input_shape)


class Conv2D(BaseConv):
    """2D convolution over ``(batch, rows, cols, channels)``; kernel ``(kh, kw, channels // groups, filters)``."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, groups, **kwargs)


