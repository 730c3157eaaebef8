"""Converters for the core layers: Dense, Identity, Embedding."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import FeatureOrder, Value
from export.converters.activations import emit_activation
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult


@converter(layers.Dense, opset=13)
def convert_dense(ctx: ConversionContext) -> ConverterResult:
    """Gemm for 2-D inputs, MatMul + Add above; a FeatureOrder input is folded into the kernel rows."""
    layer = ctx.layer
    rank = ctx.input_rank()
    dtype = layer.kernel.dtype
    layout = ctx.layout()
    bias = ctx.weight(layer.bias) if layer.use_bias else None
    if rank == 2:
        if isinstance(layout, FeatureOrder):
            kernel = ctx.weight(layer.kernel, transform=lambda k: k[layout.order], variant="permuted")
            x = ctx.input(0, layout=None, dtype=dtype)
        else:
            kernel = ctx.weight(layer.kernel)
            x = ctx.input(0, dtype=dtype)
        y = ctx.op("Gemm", [x, kernel] + ([bias] if bias else []))
    else:
        y = ctx.op("MatMul", [ctx.input(0, dtype=dtype), ctx.weight(layer.kernel)])
        if bias:
            y = ctx.op("Add", [y, bias])
    return emit_activation(ctx, layer.activation, y, rank=ctx.output_rank(), dtype=dtype)


@converter(layers.Identity, opset=13)
def convert_identity(ctx: ConversionContext) -> ConverterResult:
    """The output is the input tensor itself (no node)."""
    return Value(ctx.input(0, layout=None), ctx.layout())


@converter(layers.Embedding, opset=13)
def convert_embedding(ctx: ConversionContext) -> ConverterResult:
    """Gather(embeddings, indices, axis=0); indices that are not int32/int64 are cast to int64 (floats truncate)."""
    dtype = np.dtype(ctx.input_dtype())
    indices = ctx.input(0) if dtype in (np.int32, np.int64) else ctx.input(0, dtype="int64")
    return ctx.op("Gather", [ctx.weight(ctx.layer.embeddings), indices], axis=0)
