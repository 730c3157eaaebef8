"""Intersection over union of boxes, pairwise (IoU) and box by box with Complete-IoU's penalties (CIoU)."""
import math

from kgraph import ops
from kgraph.backend.settings import epsilon
from kgraph.utils.bounding_boxes.converters import convert_format
from kgraph.utils.bounding_boxes.formats import split4


def _area(boxes):
    x1, y1, x2, y2 = split4(boxes[..., :4])
    return ops.squeeze((x2 - x1) * (y2 - y1), axis=-1)


def _swap_last(x):
    return ops.transpose(x, [1, 0] if len(x.shape) == 2 else [0, 2, 1])


def _intersection(boxes1, boxes2):
    x1a, y1a, x2a, y2a = split4(boxes1[..., :4])
    x1b, y1b, x2b, y2b = (_swap_last(part) for part in split4(boxes2[..., :4]))
    heights = ops.maximum(ops.minimum(y2a, y2b) - ops.maximum(y1a, y1b), 0.0)
    widths = ops.maximum(ops.minimum(x2a, x2b) - ops.maximum(x1a, x1b), 0.0)
    return heights * widths


def compute_iou(boxes1, boxes2, bounding_box_format, use_masking=False, mask_val=-1, image_shape=None):
    """The IoU of every box of ``boxes1`` with every box of ``boxes2``: ``(N, 4)`` and ``(M, 4)`` give
    ``(N, M)``; a batched side ``(batch, N, 4)`` gives ``(batch, N, M)``.

    use_masking: boxes whose four values are all negative (padding) get ``mask_val`` instead of an IoU.
    image_shape: ``(height, width, channels)``, needed for relative formats.
    """
    ranks = len(ops.shape(boxes1)), len(ops.shape(boxes2))
    for name, rank in zip(("boxes1", "boxes2"), ranks):
        if rank not in (2, 3):
            raise ValueError(f"compute_iou() expects {name} to be batched, or to be unbatched. Received "
                             f"len(boxes1.shape)={ranks[0]}, len(boxes2.shape)={ranks[1]}. Expected either "
                             f"len({name}.shape)=2 AND or len({name}.shape)=3.")
    if "rel" in bounding_box_format and image_shape is None:
        raise ValueError("When using relative bounding box formats (e.g. `rel_yxyx`) the `image_shape` argument "
                         f"must be provided. Received `image_shape`: {image_shape}")
    height, width = (None, None) if image_shape is None else image_shape[:2]
    boxes1 = convert_format(boxes1, bounding_box_format, "xyxy", height=height, width=width)
    boxes2 = convert_format(boxes2, bounding_box_format, "xyxy", height=height, width=width)
    intersection = _intersection(boxes1, boxes2)
    area2 = _area(boxes2)
    union = ops.expand_dims(_area(boxes1), -1) + ops.expand_dims(area2, 1 if len(area2.shape) == 2 else 0)
    iou = ops.divide(intersection, union - intersection + epsilon())
    if not use_masking:
        return iou
    background = ops.logical_or(ops.less(ops.max(boxes1, axis=-1, keepdims=True), 0.0),
                                _swap_last(ops.less(ops.max(boxes2, axis=-1, keepdims=True), 0.0)))
    return ops.where(background, ops.cast(mask_val, iou.dtype) * ops.ones_like(iou), iou)


def compute_ciou(boxes1, boxes2, bounding_box_format, image_shape=None):
    """Complete IoU of ``boxes1[..., i]`` with ``boxes2[..., i]``: the IoU less the normalized centre distance
    and the aspect-ratio penalty (absolute formats only)."""
    if "rel" in bounding_box_format:
        raise ValueError("When using relative bounding box formats (e.g. `rel_yxyx`) the `image_shape` argument "
                         f"must be provided. Received `image_shape`: {image_shape}")
    height, width = (None, None) if image_shape is None else image_shape[:2]
    x1a, y1a, x2a, y2a = split4(convert_format(boxes1, bounding_box_format, "xyxy", height=height, width=width))
    x1b, y1b, x2b, y2b = split4(convert_format(boxes2, bounding_box_format, "xyxy", height=height, width=width))
    eps = epsilon()
    width_a, height_a = x2a - x1a, y2a - y1a + eps
    width_b, height_b = x2b - x1b, y2b - y1b + eps
    intersection = (ops.maximum(ops.minimum(x2a, x2b) - ops.maximum(x1a, x1b), 0)
                    * ops.maximum(ops.minimum(y2a, y2b) - ops.maximum(y1a, y1b), 0))
    union = width_a * height_a + width_b * height_b - intersection + eps
    iou = ops.squeeze(ops.divide(intersection, union + eps), axis=-1)
    hull_diagonal = ops.squeeze((ops.maximum(x2a, x2b) - ops.minimum(x1a, x1b)) ** 2
                                + (ops.maximum(y2a, y2b) - ops.minimum(y1a, y1b)) ** 2 + eps, axis=-1)
    centre_distance = ops.squeeze(((x1a + x2a) / 2 - (x1b + x2b) / 2) ** 2 + ((y1a + y2a) / 2 - (y1b + y2b) / 2) ** 2,
                                  axis=-1)
    v = ops.squeeze(4 / math.pi**2 * ops.power(ops.arctan(width_b / height_b) - ops.arctan(width_a / height_a), 2),
                    axis=-1)
    alpha = v / (v - iou + (1 + eps))
    return iou - (centre_distance / hull_diagonal + v * alpha)
