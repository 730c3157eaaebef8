"""Converters of ``keras.ops.image`` (with the patches ops): compositions of other ops, converted by tracing."""
from export.converters.ops.composite import register_composites
from export.registry import unexportable
from kgraph.ops.image import __all__ as _IMAGE
from kgraph.ops.patches import __all__ as _PATCHES

register_composites(_IMAGE + _PATCHES + ["gaussian_blur", "scale_and_translate", "sobel_edges"])

unexportable("elastic_transform", "draws its displacement fields with NumPy's generator at every call, one field per "
                                  "image of the batch: ONNX's RandomNormal cannot reproduce those draws, and a field "
                                  "baked in as a constant would fix both the noise and the batch size")
