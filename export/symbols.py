"""Symbolic output dimensions: an output axis that ONNX shape inference proves equal to an input axis gets its name.

A time axis passed through (``(batch, tokens_dim1, 6) -> (batch, tokens_dim1, 4)``)
then reads as one symbol in the model's signature, so a consumer sees the
lengths are equal; an axis inference cannot relate to an input keeps its
own name (``<output>_dim<i>``).
"""
from __future__ import annotations

import onnx


def _dims(value_info):
    return value_info.type.tensor_type.shape.dim


def share_input_symbols(model: onnx.ModelProto) -> onnx.ModelProto:
    """Rename, in place, each symbolic output dim of ``model`` that inference ties to an input's symbolic dim."""
    input_symbols = {d.dim_param for value in model.graph.input for d in _dims(value) if d.dim_param}
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for value in probe.graph.output:
        for dim in _dims(value):
            if dim.dim_param and dim.dim_param not in input_symbols:
                dim.Clear()
    try:
        inferred = onnx.shape_inference.infer_shapes(probe)
    except onnx.shape_inference.InferenceError:
        return model  # the checks that follow the export report what inference cannot do
    for value, found in zip(model.graph.output, inferred.graph.output):
        for dim, inferred_dim in zip(_dims(value), _dims(found)):
            if dim.dim_param and inferred_dim.dim_param in input_symbols:
                dim.dim_param = inferred_dim.dim_param
    return model
