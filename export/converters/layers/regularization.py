"""Converters for Dropout, SpatialDropout, ActivityRegularization and the noise layers: identities at inference."""
from __future__ import annotations

from typing import TYPE_CHECKING

from export.builder import Value
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult


def convert_identity(ctx: ConversionContext) -> ConverterResult:
    """The output is the input tensor itself, in the layout it is in (no node)."""
    return Value(ctx.input(0, layout=None), ctx.layout())


for _layer_class in (layers.Dropout, layers.SpatialDropout1D, layers.SpatialDropout2D, layers.SpatialDropout3D,
                     layers.ActivityRegularization, layers.GaussianNoise, layers.GaussianDropout, layers.AlphaDropout):
    converter(_layer_class, opset=13)(convert_identity)
del _layer_class
