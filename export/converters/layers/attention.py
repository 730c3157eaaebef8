"""Converter for MultiHeadAttention: MatMul/Softmax subgraphs with Keras's masking, scores returned if asked."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from onnx import TensorProto

from export.registry import converter
from kgraph import layers
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.attention.multi_head_attention import large_negative

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

RTOL, ATOL = 1e-4, 1e-5


def _int64(*values):
    return np.array(values, dtype=np.int64)


def _heads(ctx, x, kernel, bias, scale, perm):
    """Project ``x`` (B, T, dim) to heads with one MatMul; ``perm`` arranges (B, T, heads, depth) after."""
    dim, heads, depth = kernel.shape
    y = ctx.op("MatMul", [x, ctx.weight(kernel, transform=lambda k: (k * scale).reshape(dim, heads * depth),
                                        variant=f"matrix_x{scale:g}")])
    if bias is not None:
        y = ctx.op("Add", [y, ctx.weight(bias, transform=lambda b: (b * scale).reshape(heads * depth),
                                         variant=f"flat_x{scale:g}")])
    y = ctx.op("Reshape", [y, ctx.const(_int64(0, 0, heads, depth), name="heads_shape")])
    return ctx.op("Transpose", [y], perm=perm)


def _positions(ctx, x):
    """Positions ``1..T`` along the time axis of ``x`` (B, T, dim), as int64 of shape (B, T, 1).

    Counted over the data's own time axis (CumSum of ones), so shape inference ties the mask, the scores and
    the output to the input's symbolic length (a Range would have a length of its own).
    """
    column = ctx.op("Gather", [x, ctx.const(_int64(0), name="first_feature")], axis=2)
    # x > x is False for every value (NaN and infinities included): Not of it is all ones.
    ones = ctx.op("Cast", [ctx.op("Not", [ctx.op("Greater", [column, column])])], to=TensorProto.INT64)
    return ctx.op("CumSum", [ones, ctx.const(np.int64(1), name="time_axis")])


def _causal_mask(ctx, query, value):
    """(B, 1, T, S) booleans, True where value position <= query position (Keras's lower triangle)."""
    # Compared positions rather than Trilu, so it exports from opset 13 (Trilu is opset 14).
    query_positions = _positions(ctx, query)
    value_positions = query_positions if value == query else _positions(ctx, value)
    row = ctx.op("Transpose", [value_positions], perm=[0, 2, 1])
    mask = ctx.op("Not", [ctx.op("Greater", [row, query_positions])])
    return ctx.op("Unsqueeze", [mask, ctx.const(_int64(1), name="heads_axis")])


def _attention_mask(ctx, node, positional):
    """The ``attention_mask`` argument as a boolean tensor broadcastable to (B, heads, T, S), or None."""
    mask = node.call_kwargs.get("attention_mask")
    if mask is None:
        return None
    if isinstance(mask, KerasTensor):
        index = next(i for i, t in enumerate(node.input_tensors) if t is mask and i >= positional)
        name, rank = ctx.input(index), ctx.input_rank(index)
    else:
        array = np.asarray(mask)
        name, rank = ctx.const(array, name="attention_mask"), array.ndim
    if rank > 3:
        raise ctx.error(f"expected an attention_mask of rank 3 (batch, query time, value time); got rank {rank}")
    mask = ctx.op("Cast", [name], to=TensorProto.BOOL)
    # (B, T, S) gets a heads axis; lower ranks broadcast from the right as they are.
    return ctx.op("Unsqueeze", [mask, ctx.const(_int64(1), name="heads_axis")]) if rank == 3 else mask


@converter(layers.MultiHeadAttention, opset=13, rtol=RTOL, atol=ATOL)
def convert_multi_head_attention(ctx: ConversionContext) -> ConverterResult:
    """Q/K/V projections, scaled scores, masked softmax, weighted values and the output projection."""
    layer, node = ctx.layer, ctx.node
    dtype = layer.query_kernel.dtype
    positional = len(node.call_args)
    query, value = ctx.input(0, dtype=dtype), ctx.input(1, dtype=dtype)
    key = ctx.input(2, dtype=dtype) if positional == 3 else value
    # Keras scales the projected query; the scale is folded into its kernel and bias.
    q = _heads(ctx, query, layer.query_kernel, layer.query_bias, 1.0 / math.sqrt(layer.key_dim), [0, 2, 1, 3])
    k = _heads(ctx, key, layer.key_kernel, layer.key_bias, 1.0, [0, 2, 3, 1])
    v = _heads(ctx, value, layer.value_kernel, layer.value_bias, 1.0, [0, 2, 1, 3])
    scores = ctx.op("MatMul", [q, k])
    mask = _attention_mask(ctx, node, positional)
    padding = getattr(ctx, "sequence_mask", None)  # from the query/value masks (export.masks)
    if padding is not None:
        mask = padding if mask is None else ctx.op("And", [mask, padding])
    if node.call_kwargs.get("use_causal_mask"):
        causal = _causal_mask(ctx, query, value)
        mask = causal if mask is None else ctx.op("And", [mask, causal])
    if mask is not None:
        scores = ctx.op("Where", [mask, scores, ctx.const(large_negative(dtype), dtype=dtype, name="masked")])
    probabilities = ctx.op("Softmax", [scores], axis=-1)
    if mask is not None:
        # Keras zeroes masked positions after the softmax (a fully masked row becomes all zeros).
        probabilities = ctx.op("Where", [mask, probabilities, ctx.const(0, dtype=dtype, name="zero")])
    context = ctx.op("Transpose", [ctx.op("MatMul", [probabilities, v])], perm=[0, 2, 1, 3])
    heads_by_depth = layer.num_heads * layer.value_dim
    context = ctx.op("Reshape", [context, ctx.const(_int64(0, 0, heads_by_depth), name="merged_shape")])
    dims = layer.output_dims
    size = int(np.prod(dims))
    output = ctx.op("MatMul", [context, ctx.weight(layer.output_kernel,
                                                   transform=lambda w: w.reshape(heads_by_depth, size),
                                                   variant="matrix")])
    if layer.output_bias is not None:
        output = ctx.op("Add", [output, ctx.weight(layer.output_bias, transform=lambda b: b.reshape(size),
                                                   variant="flat")])
    if len(dims) > 1:
        output = ctx.op("Reshape", [output, ctx.const(_int64(0, 0, *dims), name="output_shape")])
    if node.call_kwargs.get("return_attention_scores"):
        return [output, probabilities]
    return output
