"""Keras's other names for existing layers, and the functional forms of the merge layers."""
from kgraph.layers.convolutional.conv import Conv1D, Conv2D
from kgraph.layers.convolutional.conv_transpose import Conv2DTranspose
from kgraph.layers.convolutional.depthwise_separable import SeparableConv2D
from kgraph.layers.merging.merging import Average, Maximum, Minimum, Multiply, Subtract
from kgraph.layers.pooling.pooling import (
    AveragePooling1D,
    AveragePooling2D,
    GlobalAveragePooling1D,
    GlobalAveragePooling2D,
    GlobalMaxPooling1D,
    GlobalMaxPooling2D,
    MaxPooling1D,
    MaxPooling2D,
)

Convolution1D = Conv1D
Convolution2D = Conv2D
Convolution2DTranspose = Conv2DTranspose
SeparableConvolution2D = SeparableConv2D
MaxPool1D = MaxPooling1D
MaxPool2D = MaxPooling2D
AvgPool1D = AveragePooling1D
AvgPool2D = AveragePooling2D
GlobalMaxPool1D = GlobalMaxPooling1D
GlobalMaxPool2D = GlobalMaxPooling2D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D


def average(inputs, **kwargs):
    """Functional interface to the ``Average`` layer."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Functional interface to the ``Maximum`` layer."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Functional interface to the ``Minimum`` layer."""
    return Minimum(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Functional interface to the ``Multiply`` layer."""
    return Multiply(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """Functional interface to the ``Subtract`` layer."""
    return Subtract(**kwargs)(inputs)
