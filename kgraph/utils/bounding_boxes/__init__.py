"""``keras.utils.bounding_boxes``: box format conversion, clipping, cropping, padding, affine transforms, box
deltas against anchors, and IoU / CIoU (written with ``kgraph.ops``, so tensors keep their gradients)."""
from kgraph.utils.bounding_boxes.converters import (
    affine_transform,
    clip_to_image_size,
    convert_format,
    crop,
    decode_deltas_to_boxes,
    encode_box_to_deltas,
    pad,
)
from kgraph.utils.bounding_boxes.iou import compute_ciou, compute_iou

__all__ = ["affine_transform", "clip_to_image_size", "compute_ciou", "compute_iou", "convert_format", "crop",
           "decode_deltas_to_boxes", "encode_box_to_deltas", "pad"]
