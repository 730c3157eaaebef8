"""Converting, clipping, cropping, padding and transforming boxes, and box deltas against anchors."""
import math

from kgraph import ops
from kgraph.backend.settings import epsilon
from kgraph.utils.bounding_boxes.formats import SUPPORTED_FORMATS, from_xyxy, join, split4, to_xyxy


def convert_format(boxes, source, target, height=None, width=None, dtype="float32"):
    """``boxes`` (last axis 4, or a dict with ``"boxes"``) from format ``source`` to ``target``, cast to ``dtype``.

    Formats: ``xyxy``, ``yxyx``, ``xywh``, ``center_xywh``, ``center_yxhw`` and the relative ``rel_xyxy``,
    ``rel_yxyx``, ``rel_xywh``, ``rel_center_xywh`` (fractions of the image; these need ``height`` and ``width``
    unless both sides are relative).
    """
    if isinstance(boxes, dict):
        boxes["boxes"] = convert_format(boxes["boxes"], source, target, height=height, width=width, dtype=dtype)
        return boxes
    if ops.shape(boxes)[-1] != 4:
        raise ValueError(f"`boxes` must be a tensor with the last dimension of 4. Received: boxes.shape="
                         f"{ops.shape(boxes)}")
    source, target = source.lower(), target.lower()
    if source not in SUPPORTED_FORMATS or target not in SUPPORTED_FORMATS:
        raise ValueError(f"Invalid source or target format. Supported formats: {SUPPORTED_FORMATS}")
    if (source.startswith("rel_") or target.startswith("rel_")) and (width is None or height is None):
        raise ValueError("convert_format() must receive `height` and `width` transforming between relative and "
                         f"absolute formats. convert_format() received source=`{source}`, target=`{target}`, "
                         f"but height={height} and width={width}.")
    boxes = ops.cast(boxes, dtype)
    if source == target:
        return boxes
    if source.startswith("rel_") and target.startswith("rel_"):
        source, target = source[4:], target[4:]
    height = None if height is None else ops.cast(height, dtype)
    width = None if width is None else ops.cast(width, dtype)
    return from_xyxy(to_xyxy(boxes, source, height, width), target, height, width)


def clip_to_image_size(bounding_boxes, height=None, width=None, bounding_box_format="xyxy"):
    """``{"boxes": ..., "labels": ...}`` with the boxes clipped to the image (``[0, 1]`` for ``rel_xyxy``); the
    label of a box left with no area becomes -1."""
    if bounding_box_format not in ("xyxy", "rel_xyxy"):
        raise NotImplementedError(f"clip_to_image_size takes 'xyxy' or 'rel_xyxy' boxes. Received: "
                                  f"bounding_box_format={bounding_box_format!r}")
    if bounding_box_format == "xyxy" and (height is None or width is None):
        raise ValueError("`height` and `width` must be set if `format='xyxy'`.")
    boxes = bounding_boxes["boxes"]
    labels = bounding_boxes.get("labels", None)
    if bounding_box_format == "xyxy":
        high_x, high_y = ops.cast(width, boxes.dtype), ops.cast(height, boxes.dtype)
    else:
        high_x = high_y = 1.0
    x1, y1, x2, y2 = split4(boxes)
    boxes = join([ops.clip(x1, 0, high_x), ops.clip(y1, 0, high_y), ops.clip(x2, 0, high_x),
                  ops.clip(y2, 0, high_y)])
    result = bounding_boxes.copy()
    result["boxes"] = boxes
    if labels is not None:
        x1, y1, x2, y2 = split4(boxes)
        areas = ops.squeeze((x2 - x1) * (y2 - y1), axis=-1)
        result["labels"] = ops.where(areas > 0, labels, -1)
    return result


def _xyxy_only(bounding_box_format, name):
    if bounding_box_format != "xyxy":
        raise NotImplementedError(f"{name} takes 'xyxy' boxes. Received: bounding_box_format="
                                  f"{bounding_box_format!r}")


def crop(boxes, top, left, height, width, bounding_box_format="xyxy"):
    """``xyxy`` boxes in the frame of the crop at ``(top, left)`` of size ``(height, width)``, clipped to it."""
    _xyxy_only(bounding_box_format, "crop")
    x1, y1, x2, y2 = split4(boxes)
    return join([ops.clip(x1 - left, 0, width), ops.clip(y1 - top, 0, height), ops.clip(x2 - left, 0, width),
                 ops.clip(y2 - top, 0, height)])


def pad(boxes, top, left, height=None, width=None, bounding_box_format="xyxy"):
    """``xyxy`` boxes shifted by the padding added at the top and left of the image."""
    _xyxy_only(bounding_box_format, "pad")
    x1, y1, x2, y2 = split4(boxes)
    return join([x1 + left, y1 + top, x2 + left, y2 + top])


def _inverse_affine_matrix(center_x, center_y, angle, translate_x, translate_y, scale, shear_x, shear_y, height,
                           width):
    """The ``(batch, 3, 3)`` matrices Keras's image layers use to map points (angles and shears in degrees)."""
    batch = ops.shape(angle)[0]
    dtype = angle.dtype
    cx, cy = ops.multiply(center_x, width - 1), ops.multiply(center_y, height - 1)
    rot = ops.multiply(-angle, math.pi / 180.0)
    tx, ty = ops.multiply(-translate_x, width - 1), ops.multiply(-translate_y, height - 1)
    sx, sy = ops.multiply(-shear_x, math.pi / 180.0), ops.multiply(-shear_y, math.pi / 180.0)
    a = ops.cos(rot - sy) / ops.cos(sy)
    b = a * ops.tan(sx) + ops.sin(rot)
    c = -ops.sin(rot - sy) / ops.cos(sy)
    d = ops.cos(rot) - c * ops.tan(sx)
    a0, a1, b0, b1 = ops.multiply(d, scale), ops.multiply(-b, scale), ops.multiply(-c, scale), ops.multiply(a, scale)
    a2 = cx - a0 * (cx + tx) - a1 * (cy + ty)
    b2 = cy - b0 * (cx + tx) - b1 * (cy + ty)
    zeros, ones = ops.zeros([batch], dtype), ops.ones([batch], dtype)
    return ops.reshape(ops.stack([a0, a1, a2, b0, b1, b2, zeros, zeros, ones], axis=-1), [batch, 3, 3])


def affine_transform(boxes, angle, translate_x, translate_y, scale, shear_x, shear_y, height, width, center_x=None,
                     center_y=None, bounding_box_format="xyxy"):
    """``(batch, boxes, 4)`` ``xyxy`` boxes through the per-image affine transforms (``angle``, ``translate_*``,
    ``scale``, ``shear_*`` of shape ``(batch,)``): each box becomes the bounding box of its moved corners."""
    _xyxy_only(bounding_box_format, "affine_transform")
    batch, count = ops.shape(boxes)[0], ops.shape(boxes)[1]
    matrix = _inverse_affine_matrix(0.5 if center_x is None else center_x, 0.5 if center_y is None else center_y,
                                    angle, translate_x, translate_y, scale, shear_x, shear_y, height, width)
    boxes = ops.cast(boxes, matrix.dtype)
    corners = ops.stack([boxes[..., 0], boxes[..., 1], boxes[..., 2], boxes[..., 1], boxes[..., 2], boxes[..., 3],
                         boxes[..., 0], boxes[..., 3]], axis=-1)
    corners = ops.reshape(corners, [batch, count, 4, 2])
    corners = ops.concatenate([corners, ops.ones([batch, count, 4, 1], corners.dtype)], axis=-1)
    moved = ops.einsum("bnxy,byz->bnxz", corners, ops.transpose(matrix[:, :2, :], [0, 2, 1]))
    return ops.concatenate([ops.amin(moved, axis=2), ops.amax(moved, axis=2)], axis=-1)


def _checked_variance(variance):
    if variance is None:
        return None
    variance = ops.convert_to_tensor(variance, "float32")
    if variance.shape[-1] != 4:
        raise ValueError(f"`variance` must be length 4, got {variance}")
    return variance


def encode_box_to_deltas(anchors, boxes, anchor_format, box_format, encoding_format="center_yxhw", variance=None,
                         image_shape=None):
    """Boxes as deltas from their anchors: centre offsets over the anchor's size and log size ratios (in the
    ``center_yxhw`` or ``center_xywh`` order of ``encoding_format``), divided by ``variance`` when given."""
    variance = _checked_variance(variance)
    if encoding_format not in ("center_xywh", "center_yxhw"):
        raise ValueError(f"`encoding_format` should be one of 'center_xywh' or 'center_yxhw', got {encoding_format}")
    height, width = (None, None) if image_shape is None else image_shape[:2]
    anchors = convert_format(anchors, anchor_format, encoding_format, height=height, width=width)
    boxes = convert_format(boxes, box_format, encoding_format, height=height, width=width)
    anchor_size = ops.maximum(anchors[..., 2:], epsilon())
    box_size = ops.maximum(boxes[..., 2:], epsilon())
    deltas = ops.concatenate([(boxes[..., :2] - anchors[..., :2]) / anchor_size, ops.log(box_size / anchor_size)],
                             axis=-1)
    return deltas if variance is None else deltas / variance


def decode_deltas_to_boxes(anchors, boxes_delta, anchor_format, box_format, encoded_format="center_yxhw",
                           variance=None, image_shape=None):
    """The boxes ``encode_box_to_deltas`` encoded, in ``box_format``; dicts of anchors and deltas (one per
    feature level) give a dict of boxes."""
    variance = _checked_variance(variance)
    if encoded_format not in ("center_xywh", "center_yxhw"):
        raise ValueError(f"`encoded_format` should be 'center_xywh' or 'center_yxhw', but got '{encoded_format}'.")
    height, width = (None, None) if image_shape is None else image_shape[:2]

    def decode(anchor, delta):
        anchor = convert_format(anchor, anchor_format, encoded_format, height=height, width=width)
        if variance is not None:
            delta = delta * variance
        box = ops.concatenate([delta[..., :2] * anchor[..., 2:] + anchor[..., :2],
                               ops.exp(delta[..., 2:]) * anchor[..., 2:]], axis=-1)
        return convert_format(box, encoded_format, box_format, height=height, width=width)

    if isinstance(anchors, dict) and isinstance(boxes_delta, dict):
        return {level: decode(anchor, boxes_delta[level]) for level, anchor in anchors.items()}
    return decode(anchors, boxes_delta)
