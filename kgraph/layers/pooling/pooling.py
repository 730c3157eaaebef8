"""Pooling layers: max and average pooling over windows, and global pooling, in 1D and 2D."""
from kgraph import ops
from kgraph.layers.arguments import check_data_format, check_padding
from kgraph.layers.convolutional.conv import conv_output_shape
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops.kernels.windows import normalize_tuple


class BasePooling(Layer):
    """Window pooling over ``rank`` spatial axes; ``strides`` default to ``pool_size``."""

    rank = None
    pool_function = None

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = normalize_tuple(pool_size, self.rank, "pool_size")
        self.strides = self.pool_size if strides is None else normalize_tuple(strides, self.rank, "strides")
        self.padding = check_padding(self, padding, ("valid", "same"))
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        return type(self).pool_function(inputs, self.pool_size, self.strides, self.padding)

    def compute_output_shape(self, input_shape):
        return conv_output_shape(self, input_shape, self.pool_size, self.strides, self.padding,
                                 (1,) * self.rank, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"pool_size": self.pool_size, "strides": self.strides, "padding": self.padding,
                       "data_format": self.data_format})
        return config


class MaxPooling1D(BasePooling):
    """Maximum over windows of ``pool_size`` steps of ``(batch, steps, channels)``."""

    rank = 1
    pool_function = ops.max_pool

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class MaxPooling2D(BasePooling):
    """Maximum over ``pool_size`` windows of ``(batch, rows, cols, channels)``; padded cells never win."""

    rank = 2
    pool_function = ops.max_pool

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling1D(BasePooling):
    """Mean over windows of ``pool_size`` steps; with "same" padding, over the real cells only."""

    rank = 1
    pool_function = ops.average_pool

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling2D(BasePooling):
    """Mean over ``pool_size`` windows; with "same" padding, over the real (unpadded) cells only."""

    rank = 2
    pool_function = ops.average_pool

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class GlobalPooling(Layer):
    """Reduction over all ``rank`` spatial axes; ``keepdims`` keeps them as size 1."""

    rank = None
    reduce_function = None

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.data_format = check_data_format(self, data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def call(self, inputs):
        return type(self).reduce_function(inputs, axis=tuple(range(1, self.rank + 1)), keepdims=self.keepdims)

    def compute_output_shape(self, input_shape):
        if self.keepdims:
            return (input_shape[0],) + (1,) * self.rank + (input_shape[-1],)
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "keepdims": self.keepdims})
        return config


class GlobalAveragePooling1D(GlobalPooling):
    """Mean over the steps of ``(batch, steps, channels)``; with a mask, over the unmasked steps only."""

    rank = 1
    reduce_function = ops.mean

    def call(self, inputs, mask=None):
        if mask is None:
            return super().call(inputs)
        axis = 1 if self.data_format == "channels_last" else 2
        keep = ops.cast(ops.expand_dims(mask, axis=2 if axis == 1 else 1), inputs.dtype)
        return ops.divide(ops.sum(ops.multiply(inputs, keep), axis=axis, keepdims=self.keepdims),
                          ops.sum(keep, axis=axis, keepdims=self.keepdims))

    def compute_mask(self, inputs, previous_mask=None):
        return None


class GlobalAveragePooling2D(GlobalPooling):
    """Mean over the rows and columns of ``(batch, rows, cols, channels)``."""

    rank = 2
    reduce_function = ops.mean


class GlobalMaxPooling1D(GlobalPooling):
    """Maximum over the steps of ``(batch, steps, channels)``."""

    rank = 1
    reduce_function = ops.max


class GlobalMaxPooling2D(GlobalPooling):
    """Maximum over the rows and columns of ``(batch, rows, cols, channels)``."""

    rank = 2
    reduce_function = ops.max
