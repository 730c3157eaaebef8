"""Converters for the 3D layers: the 1D/2D converters, which write ONNX nodes for any number of spatial axes.

Conv3D is one Conv, the poolings one MaxPool / AveragePool / Global*Pool,
all channels-first; padding, cropping and upsampling keep their input's layout;
SpatialDropout3D is the identity.
"""
from kgraph import layers

from export.converters.convolutional import convert_conv
from export.converters.pooling import _global, _pool
from export.converters.spatial import _cropping, _identity, _upsampling, _zero_padding
from export.registry import converter

converter(layers.Conv3D, opset=13)(convert_conv)
converter(layers.MaxPooling3D, opset=13)(_pool("MaxPool"))
converter(layers.AveragePooling3D, opset=13)(_pool("AveragePool", count_include_pad=0))
converter(layers.GlobalMaxPooling3D, opset=13)(_global("GlobalMaxPool"))
converter(layers.GlobalAveragePooling3D, opset=13)(_global("GlobalAveragePool"))
converter(layers.UpSampling3D, opset=13)(_upsampling)
converter(layers.ZeroPadding3D, opset=13)(_zero_padding)
converter(layers.Cropping3D, opset=13)(_cropping)
converter(layers.SpatialDropout3D, opset=13)(_identity)
