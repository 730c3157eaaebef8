"""Max, average and global pooling of volumes ``(batch, d1, d2, d3, channels)``."""
from kgraph import ops
from kgraph.layers.pooling.pooling import BasePooling, GlobalPooling


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


MaxPool3D = MaxPooling3D
AvgPool3D = AveragePooling3D
GlobalMaxPool3D = GlobalMaxPooling3D
GlobalAvgPool3D = GlobalAveragePooling3D
