"""Masks with Keras 3's rules: which timesteps of a tensor are padding, carried beside it through a graph.

A layer that produces a mask (``Embedding(mask_zero=True)``, ``Masking``)
defines ``compute_mask``; a layer with ``supports_masking`` passes the mask of
its first input on (or computes a new one); a layer whose ``call`` takes
``mask`` (or ``<argument>_mask``, as MultiHeadAttention's ``query_mask``) gets
it filled in. A layer that does not support masking drops the mask, with
Keras's warning. A mask is the tensor's ``_keras_mask``, as in Keras 3: on a
KerasTensor symbolically, and on the array an eager layer call returns (an
array that cannot hold an attribute is returned as a TapeArray view, which
behaves as a plain ndarray when no tape records). When a Functional runs,
masks are also kept beside the values by tensor id. Op nodes (``kgraph.ops``
calls) do not propagate masks, as in Keras.
"""
import inspect
import warnings

import numpy as np

from kgraph import tree
from kgraph.backend.tape_array import TapeArray
from kgraph.graph.keras_tensor import KerasTensor


def keras_mask(x):
    """The mask a tensor or array carries (``_keras_mask``), or None."""
    return getattr(x, "_keras_mask", None)


def mask_arguments(layer, args, kwargs, lookup):
    """``(previous_mask, extra_kwargs)`` for a call of ``layer`` on ``args``/``kwargs``.

    ``lookup(tensor)`` gives a tensor's mask (None for anything without one).
    ``previous_mask`` has the structure of the first argument; ``extra_kwargs``
    are the mask arguments Keras fills in that the caller did not give.
    """
    first = args[0]
    previous = lookup(first) if isinstance(first, (np.ndarray, KerasTensor)) else tree.map_structure(lookup, first)
    extra = {}
    if layer._call_accepts_mask:
        if kwargs.get("mask") is None and has_mask(previous):
            extra["mask"] = previous
    elif layer._call_mask_arguments and any(lookup(v) is not None for v in (*args, *kwargs.values())):
        bound = inspect.signature(layer.call).bind_partial(*args, **kwargs).arguments
        for name in layer._call_mask_arguments:
            value = bound.get(name)
            if value is not None and bound.get(f"{name}_mask") is None:
                mask = lookup(value)
                if mask is not None:
                    extra[f"{name}_mask"] = mask
    return previous, extra


def has_mask(structure):
    """Whether a mask (or a structure of masks) holds any mask at all."""
    if structure is None or isinstance(structure, (np.ndarray, KerasTensor)):
        return structure is not None
    return any(m is not None for m in tree.flatten(structure))


def _computes_no_mask(layer, previous):
    """Whether ``layer`` gives its outputs no mask: it drops masks (warning as Keras if it had one), or it has
    none to pass on and computes none of its own."""
    if not layer.supports_masking:
        if has_mask(previous):
            warnings.warn(f"Layer '{layer.name}' (of type {type(layer).__name__}) was passed an input with a mask "
                          "attached to it. However, this layer does not support masking and will therefore "
                          "destroy the mask information. Downstream layers will not see the mask.", stacklevel=5)
        return True
    return not has_mask(previous) and type(layer).compute_mask is _default_compute_mask()


def set_symbolic_masks(layer, first_input, previous, outputs):
    """Attach ``_keras_mask`` to the KerasTensors a layer call returned (Keras's mask metadata)."""
    if _computes_no_mask(layer, previous):
        return
    from kgraph.graph import shape_inference, tracing
    try:
        with tracing.scratch():
            masks = layer.compute_mask(first_input, previous)
    except Exception:  # compute_mask needs values: its output spec from placeholder arrays instead
        masks = shape_inference.output_spec(lambda x, m: layer.compute_mask(x, m), (first_input, previous), {},
                                            f"{layer.name}_mask")
    if masks is None:
        return
    flat_outputs = tree.flatten(outputs)
    flat_masks = tree.flatten(masks) if tree.is_nested(masks) else [masks] * len(flat_outputs)
    for tensor, mask in zip(flat_outputs, flat_masks):
        if isinstance(mask, KerasTensor):
            tensor._keras_mask = mask


def set_eager_masks(layer, first_input, previous, outputs):
    """``outputs`` of an eager call with ``_keras_mask`` attached where ``layer`` gives them a mask (Keras 3's
    rule: outputs that already carry a mask keep it)."""
    if _computes_no_mask(layer, previous):
        return outputs
    flat = tree.flatten(outputs)
    if all(keras_mask(x) is not None for x in flat):
        return outputs
    masks = layer.compute_mask(first_input, previous)
    if masks is None:
        return outputs
    flat_masks = tree.flatten(masks) if tree.is_nested(masks) else [masks] * len(flat)
    marked = [with_mask(x, m) for x, m in zip(flat, flat_masks)] + flat[len(flat_masks):]
    if len(flat) == 1 and not tree.is_nested(outputs):
        return marked[0]
    return tree.pack_sequence_as(outputs, marked)


def with_mask(x, mask):
    """``x`` carrying ``mask`` as its ``_keras_mask`` (a TapeArray view where a plain ndarray cannot hold it)."""
    if mask is None or not isinstance(x, np.ndarray) or keras_mask(x) is not None:
        return x
    try:
        x._keras_mask = mask
    except AttributeError:  # a plain ndarray holds no attributes; a view of it can
        x = x.view(TapeArray)
        x._keras_mask = mask
    return x


def _default_compute_mask():
    from kgraph.layers.layer import Layer
    return Layer.compute_mask


def output_masks(layer, first_input, previous, count):
    """The run-time masks of a layer call's ``count`` outputs (a list, None where unmasked)."""
    if not getattr(layer, "supports_masking", False):
        return [None] * count
    masks = layer.compute_mask(first_input, previous)
    if masks is None:
        return [None] * count
    if tree.is_nested(masks):
        flat = tree.flatten(masks)
        return flat + [None] * (count - len(flat))
    return [masks] * count
