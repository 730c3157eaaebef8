"""Converters of ``kgraph.ops.image_filters``: the filters and the resampling convert by tracing their ops."""
from export.converters.ops import UNEXPORTABLE
from export.converters.ops_extra import register_composites

register_composites(["gaussian_blur", "scale_and_translate", "sobel_edges"])

UNEXPORTABLE.update({
    "elastic_transform": "draws its displacement fields with NumPy's generator at every call, one field per image "
                         "of the batch: ONNX's RandomNormal cannot reproduce those draws, and a field baked in as a "
                         "constant would fix both the noise and the batch size",
})
