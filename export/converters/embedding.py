"""Converter for Embedding: one Gather of the embedding rows (float indices cast to int64 first)."""
import numpy as np

from kgraph import layers

from export.registry import converter


@converter(layers.Embedding, opset=13)
def convert_embedding(ctx):
    """Gather(embeddings, indices, axis=0); indices that are not int32/int64 are cast to int64 (floats truncate)."""
    dtype = np.dtype(ctx.input_dtype())
    indices = ctx.input(0) if dtype in (np.int32, np.int64) else ctx.input(0, dtype="int64")
    return ctx.op("Gather", [ctx.weight(ctx.layer.embeddings), indices], axis=0)
