"""Converter for MultiHeadAttention: MatMul/Softmax subgraphs with Keras's masking, scores returned if asked."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from onnx import TensorProto

from export.masks import ATTENTION_MASKS, call_arguments
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


def _mask_argument(ctx, given, name):
    """A mask argument of the call (a KerasTensor input or an array): its ONNX name and rank."""
    if isinstance(given, KerasTensor):
        return ctx.tensor(given), len(given.shape)
    array = np.asarray(given)
    return ctx.const(array, name=name), array.ndim


def _attention_mask(ctx, arguments):
    """The ``attention_mask`` argument as a boolean tensor broadcastable to (B, heads, T, S), or None."""
    given = arguments.get("attention_mask")
    if given is None:
        return None
    name, rank = _mask_argument(ctx, given, "attention_mask")
    if rank > 3:
        raise ctx.error(f"expected an attention_mask of rank 3 (batch, query time, value time); got rank {rank}")
    mask = ctx.op("Cast", [name], to=TensorProto.BOOL)
    # (B, T, S) gets a heads axis; lower ranks broadcast from the right as they are.
    return ctx.op("Unsqueeze", [mask, ctx.const(_int64(1), name="heads_axis")]) if rank == 3 else mask


def _sequence_masks(ctx, arguments):
    """The ``query_mask``/``value_mask``/``key_mask`` arguments given to the call, and-ed as Keras combines them:
    (B, 1, T, 1) and (B, 1, 1, S) booleans, or None. (The masks the layer fills in from its inputs' masks come
    from export.masks as ``ctx.sequence_mask``.)"""
    combined = None
    for name, axes in ATTENTION_MASKS:
        given = arguments.get(f"{name}_mask")
        if given is None:
            continue
        mask, rank = _mask_argument(ctx, given, f"{name}_mask")
        if rank != 2:
            raise ctx.error(f"expected a {name}_mask of rank 2 (batch, time); got rank {rank}")
        mask = ctx.op("Cast", [mask], to=TensorProto.BOOL)
        part = ctx.op("Unsqueeze", [mask, ctx.const(_int64(*axes), name=f"{name}_mask_axes")])
        combined = part if combined is None else ctx.op("And", [combined, part])
    return combined


def _combined_mask(ctx, arguments, query, value):
    """Every mask of the call and-ed: (B or 1, 1, T or 1, S or 1) booleans, or None."""
    mask = None
    for part in (_attention_mask(ctx, arguments), _sequence_masks(ctx, arguments),
                 getattr(ctx, "sequence_mask", None)):  # the last: from the inputs' masks (export.masks)
        if part is not None:
            mask = part if mask is None else ctx.op("And", [mask, part])
    if arguments.get("use_causal_mask"):
        causal = _causal_mask(ctx, query, value)
        mask = causal if mask is None else ctx.op("And", [mask, causal])
    return mask


@converter(layers.MultiHeadAttention, opset=13, rtol=RTOL, atol=ATOL)
def convert_multi_head_attention(ctx: ConversionContext) -> ConverterResult:
    """Q/K/V projections, scaled scores, masked softmax, weighted values and the output projection."""
    layer = ctx.layer
    dtype = layer.query_kernel.dtype
    arguments = call_arguments(ctx.node)  # query, value and key by name, whether given by position or keyword
    query, value = ctx.tensor(arguments["query"], dtype), ctx.tensor(arguments["value"], dtype)
    key = value if arguments.get("key") is None else ctx.tensor(arguments["key"], dtype)
    # Keras scales the projected query; the scale is folded into its kernel and bias.
    q = _heads(ctx, query, layer.query_kernel, layer.query_bias, 1.0 / math.sqrt(layer.key_dim), [0, 2, 1, 3])
    k = _heads(ctx, key, layer.key_kernel, layer.key_bias, 1.0, [0, 2, 3, 1])
    v = _heads(ctx, value, layer.value_kernel, layer.value_bias, 1.0, [0, 2, 1, 3])
    scores = ctx.op("MatMul", [q, k])
    mask = _combined_mask(ctx, arguments, query, value)
    if mask is not None:
        scores = ctx.op("Where", [mask, scores, ctx.const(large_negative(dtype), dtype=dtype, name="masked")])
    probabilities = ctx.op("Softmax", [scores], axis=-1)
    if mask is not None and (layer.dropout > 0.0 or arguments.get("return_attention_scores")):
        # As the layer (Keras 3.15): its masked softmax, taken with dropout or when the scores are returned,
        # zeroes masked positions (a fully masked row becomes all zeros); otherwise a fully masked row stays
        # uniform over the keys.
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
    if arguments.get("return_attention_scores"):
        return [output, probabilities]
    return output
