"""Box formats: every format converts to and from corner coordinates ``xyxy``."""
from kgraph import ops

SUPPORTED_FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw", "rel_xyxy", "rel_yxyx", "rel_xywh",
                     "rel_center_xywh")


def split4(boxes):
    return ops.split(boxes, 4, axis=-1)


def join(parts):
    return ops.concatenate(parts, axis=-1)


def to_xyxy(boxes, source, height, width):
    """``boxes`` (last axis 4) in ``source`` format as ``xyxy`` corners (relative ones scaled by the image)."""
    a, b, c, d = split4(boxes)
    if source.startswith("rel_"):
        source = source[4:]
        a, b, c, d = ((a * height, b * width, c * height, d * width) if source == "yxyx"
                      else (a * width, b * height, c * width, d * height))
    if source == "xyxy":
        return join([a, b, c, d])
    if source == "yxyx":
        return join([b, a, d, c])
    if source == "xywh":
        return join([a, b, a + c, b + d])
    if source == "center_xywh":
        return join([a - c / 2.0, b - d / 2.0, a + c / 2.0, b + d / 2.0])
    # center_yxhw: (cy, cx, h, w)
    return join([b - d / 2.0, a - c / 2.0, b + d / 2.0, a + c / 2.0])


def from_xyxy(boxes, target, height, width):
    """``xyxy`` corners as ``target`` format."""
    x1, y1, x2, y2 = split4(boxes)
    relative = target.startswith("rel_")
    if relative:
        target = target[4:]
        x1, y1, x2, y2 = ops.divide(x1, width), ops.divide(y1, height), ops.divide(x2, width), ops.divide(y2, height)
    if target == "xyxy":
        return join([x1, y1, x2, y2])
    if target == "yxyx":
        return join([y1, x1, y2, x2])
    if target == "xywh":
        return join([x1, y1, x2 - x1, y2 - y1])
    cx, cy = x1 + (x2 - x1) / 2.0, y1 + (y2 - y1) / 2.0
    if target == "center_xywh":
        return join([cx, cy, x2 - x1, y2 - y1])
    return join([cy, cx, y2 - y1, x2 - x1])  # center_yxhw
