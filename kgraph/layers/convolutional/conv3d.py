"""Conv3D: convolution over volumes ``(batch, d1, d2, d3, channels)``."""
from kgraph.layers.convolutional.conv import BaseConv


class Conv3D(BaseConv):
    """3D convolution; kernel ``(k1, k2, k3, channels // groups, filters)``."""

    rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1, 1), groups=1, **kwargs):
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate, groups, **kwargs)


Convolution3D = Conv3D
