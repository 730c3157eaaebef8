"""Converters for the preprocessing layers that export as nodes of their own: Rescaling."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, Value
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult


@converter(layers.Rescaling, opset=13)
def convert_rescaling(ctx: ConversionContext) -> ConverterResult:
    """Mul by ``scale`` and Add ``offset`` in the compute dtype; scalar factors keep the input's layout."""
    layer = ctx.layer
    dtype = ctx.output_dtype()
    scale, offset = np.asarray(layer.scale, dtype), np.asarray(layer.offset, dtype)
    layout = ctx.layout() if scale.ndim == 0 and offset.ndim == 0 else NATIVE
    y = ctx.op("Mul", [ctx.input(0, layout=layout, dtype=dtype), ctx.const(scale, name="scale")])
    return Value(ctx.op("Add", [y, ctx.const(offset, name="offset")]), layout)
