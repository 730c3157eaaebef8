"""The 3D layers of volumes ``(batch, d1, d2, d3, channels)``: Conv3D, pooling, padding, cropping, upsampling,
spatial dropout."""
from kgraph import ops
from kgraph.input_spec import InputSpec
from kgraph.layers.convolutional import BaseConv, check_data_format
from kgraph.layers.core import Dropout
from kgraph.layers.pooling import BasePooling, GlobalPooling
from kgraph.layers.spatial import _Cropping, _Spatial, _ZeroPadding
from kgraph.ops.windows import normalize_tuple


class Conv3D(BaseConv):
    """3D convolution; kernel ``(k1, k2, k3, channels // groups, filters)``."""

    rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, groups, **kwargs)


class MaxPooling3D(BasePooling):
    """Maximum over ``pool_size`` windows of a volume; padded cells never win."""

    rank = 3
    pool_function = ops.max_pool

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class AveragePooling3D(BasePooling):
    """Mean over ``pool_size`` windows of a volume; with "same" padding, over the real cells only."""

    rank = 3
    pool_function = ops.average_pool

    def __init__(self, pool_size, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(pool_size, strides, padding, data_format, **kwargs)


class GlobalAveragePooling3D(GlobalPooling):
    """Mean over the three spatial axes of a volume."""

    rank = 3
    reduce_function = ops.mean


class GlobalMaxPooling3D(GlobalPooling):
    """Maximum over the three spatial axes of a volume."""

    rank = 3
    reduce_function = ops.max


class UpSampling3D(_Spatial):
    """Repeats the cells of each spatial axis ``size`` times (nearest-neighbour upsampling)."""

    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.size = normalize_tuple(size, 3, "size")

    def call(self, inputs):
        out = inputs
        for axis, repeats in enumerate(self.size, start=1):
            out = ops.repeat(out, repeats, axis=axis)
        return out

    def compute_output_shape(self, input_shape):
        spatial = tuple(None if n is None else n * s for n, s in zip(input_shape[1:4], self.size))
        return (input_shape[0],) + spatial + (input_shape[4],)

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size
        return config


class ZeroPadding3D(_ZeroPadding):
    """Pads the spatial axes: an int, ``(d1, d2, d3)`` or three ``(before, after)`` pairs."""

    rank = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format=data_format, **kwargs)


class Cropping3D(_Cropping):
    """Crops the spatial axes: an int, ``(d1, d2, d3)`` or three ``(start, end)`` pairs."""

    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format=data_format, **kwargs)


class SpatialDropout3D(Dropout):
    """Dropout of entire channels of a volume: one draw per example and channel."""

    def __init__(self, rate, data_format=None, seed=None, **kwargs):
        super().__init__(rate, noise_shape=(None, 1, 1, 1, None), seed=seed, **kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=5)

    def get_config(self):
        config = super().get_config()
        config.pop("noise_shape", None)
        config["data_format"] = self.data_format
        return config


Convolution3D = Conv3D
MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
GlobalAvgPool3D = GlobalAveragePooling3D
