"""Converters for the core layers: Dense, Activation, Dropout, Identity."""
from kgraph import layers

from export.builder import FeatureOrder, Value
from export.converters.activations import emit_activation
from export.registry import converter


@converter(layers.Dense, opset=13)
def convert_dense(ctx):
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


@converter(layers.Activation, opset=13)
def convert_activation(ctx):
    """The activation's emitter, on the input in whatever layout it is in."""
    layout = ctx.layout()
    y = emit_activation(ctx, ctx.layer.activation, ctx.input(0, layout=None), layout=layout,
                        rank=ctx.input_rank(), dtype=ctx.input_dtype())
    return Value(y, layout)


@converter(layers.Dropout, opset=13)
def convert_dropout(ctx):
    """Identity at inference: the output is the input tensor itself (no node)."""
    return Value(ctx.input(0, layout=None), ctx.layout())


@converter(layers.Identity, opset=13)
def convert_identity(ctx):
    """The output is the input tensor itself (no node)."""
    return Value(ctx.input(0, layout=None), ctx.layout())
