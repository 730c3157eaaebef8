"""Masks with Keras 3's rules: which timesteps of a tensor are padding, carried beside it through a graph.

A layer that produces a mask (``Embedding(mask_zero=True)``, ``Masking``)
defines ``compute_mask``; a layer with ``supports_masking`` passes the mask of
its first input on (or computes a new one); a layer whose ``call`` takes
``mask`` (or ``<argument>_mask``, as MultiHeadAttention's ``query_mask``) gets
it filled in. A layer that does not support masking drops the mask, with
Keras's warning. Symbolically a mask is the KerasTensor ``t._keras_mask``;
when a Functional runs, masks are arrays kept beside the values by tensor id.
Op nodes (``kgraph.ops`` calls) do not propagate masks, as in Keras.
"""
import inspect
import warnings

from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor


def mask_arguments(layer, args, kwargs, lookup):
    """``(previous_mask, extra_kwargs)`` for a call of ``layer`` on symbolic ``args``/``kwargs``.

    ``lookup(tensor)`` gives a KerasTensor's mask (or None). ``previous_mask`` has
    the structure of the first argument; ``extra_kwargs`` are the mask arguments
    Keras fills in that the caller did not give.
    """
    previous = tree.map_structure(lambda t: lookup(t) if isinstance(t, KerasTensor) else None, args[0])
    extra = {}
    if layer._call_accepts_mask:
        if kwargs.get("mask") is None and any(m is not None for m in tree.flatten(previous)):
            extra["mask"] = previous
    elif layer._call_mask_arguments:
        bound = inspect.signature(layer.call).bind_partial(*args, **kwargs).arguments
        for name in layer._call_mask_arguments:
            value = bound.get(name)
            if isinstance(value, KerasTensor) and bound.get(f"{name}_mask") is None:
                mask = lookup(value)
                if mask is not None:
                    extra[f"{name}_mask"] = mask
    return previous, extra


def has_mask(structure):
    return any(m is not None for m in tree.flatten(structure))


def set_symbolic_masks(layer, args, kwargs, outputs):
    """Attach ``_keras_mask`` to the KerasTensors a layer call returned (Keras's mask metadata)."""
    previous, _ = mask_arguments(layer, args, kwargs, lambda t: t._keras_mask)
    if not layer.supports_masking:
        if has_mask(previous):
            warnings.warn(f"Layer '{layer.name}' (of type {type(layer).__name__}) was passed an input with a mask "
                          "attached to it. However, this layer does not support masking and will therefore "
                          "destroy the mask information. Downstream layers will not see the mask.", stacklevel=3)
        return
    if not has_mask(previous) and type(layer).compute_mask is _default_compute_mask():
        return
    from kgraph.graph import shape_inference, tracing
    try:
        with tracing.scratch():
            masks = layer.compute_mask(args[0], previous)
    except Exception:  # compute_mask needs values: its output spec from placeholder arrays instead
        masks = shape_inference.output_spec(lambda x, m: layer.compute_mask(x, m), (args[0], previous), {},
                                            f"{layer.name}_mask")
    if masks is None:
        return
    flat_outputs = tree.flatten(outputs)
    flat_masks = tree.flatten(masks) if tree.is_nested(masks) else [masks] * len(flat_outputs)
    for tensor, mask in zip(flat_outputs, flat_masks):
        if isinstance(mask, KerasTensor):
            tensor._keras_mask = mask


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
