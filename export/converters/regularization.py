"""Converters for ActivityRegularization and the noise layers: identities at inference (no node)."""
from kgraph import layers

from export.builder import Value
from export.registry import converter


def convert_identity(ctx):
    """The output is the input tensor itself, in the layout it is in."""
    return Value(ctx.input(0, layout=None), ctx.layout())


for _layer_class in (layers.ActivityRegularization, layers.GaussianNoise, layers.GaussianDropout, layers.AlphaDropout):
    converter(_layer_class, opset=13)(convert_identity)
del _layer_class
