"""``kgraph.utils.bounding_boxes`` and ``kgraph.preprocessing.image.smart_resize`` against Keras 3's on the same
boxes and images."""
import numpy as np
import pytest

import kgraph
from kgraph.preprocessing import image as kimage
from kgraph.utils import bounding_boxes as bb

keras = pytest.importorskip("keras")
kbb = keras.utils.bounding_boxes

RNG = np.random.default_rng(3)
FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw", "rel_xyxy", "rel_yxyx", "rel_xywh",
           "rel_center_xywh")


def _boxes(shape, scale=40.0):
    corners = RNG.uniform(0, scale, size=shape + (2, 2))
    low, high = corners.min(axis=-2), corners.max(axis=-2) + 1.0
    return np.concatenate([low, high], axis=-1).astype("float32")  # xyxy


def _close(ours, theirs, tol=1e-4):
    np.testing.assert_allclose(np.asarray(ours), keras.ops.convert_to_numpy(theirs), rtol=tol, atol=tol)


@pytest.mark.parametrize("source", FORMATS)
@pytest.mark.parametrize("target", FORMATS)
def test_convert_format_as_keras(source, target):
    boxes = kbb.convert_format(_boxes((2, 5)), "xyxy", source, height=48, width=64)
    boxes = keras.ops.convert_to_numpy(boxes)
    _close(bb.convert_format(boxes, source, target, height=48, width=64),
           kbb.convert_format(boxes, source, target, height=48, width=64))


def test_convert_format_dict_dtype_and_errors():
    boxes = _boxes((3,))
    ours = bb.convert_format({"boxes": boxes, "labels": np.arange(3)}, "xyxy", "xywh", dtype="float64")
    assert np.asarray(ours["boxes"]).dtype == np.float64 and ours["labels"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="last dimension of 4"):
        bb.convert_format(np.ones((2, 3)), "xyxy", "xywh")
    with pytest.raises(ValueError, match="Invalid source or target"):
        bb.convert_format(boxes, "xyxy", "cxcywh")
    with pytest.raises(ValueError, match="height"):
        bb.convert_format(boxes, "xyxy", "rel_xyxy")


@pytest.mark.parametrize("fmt, size", [("xyxy", (30, 35)), ("rel_xyxy", (None, None))])
def test_clip_to_image_size_as_keras(fmt, size):
    boxes = _boxes((2, 6), scale=50.0) - 5.0
    if fmt == "rel_xyxy":
        boxes = boxes / 40.0
    data = {"boxes": boxes, "labels": np.arange(12).reshape(2, 6).astype("float32")}
    ours = bb.clip_to_image_size(dict(data), height=size[0], width=size[1], bounding_box_format=fmt)
    theirs = kbb.clip_to_image_size(dict(data), height=size[0], width=size[1], bounding_box_format=fmt)
    _close(ours["boxes"], theirs["boxes"])
    _close(ours["labels"], theirs["labels"])
    with pytest.raises(NotImplementedError):
        bb.clip_to_image_size(data, 3, 3, bounding_box_format="xywh")


def test_crop_pad_and_affine_transform_as_keras():
    boxes = _boxes((2, 4))
    _close(bb.crop(boxes, 3, 5, 20, 25), kbb.crop(boxes, 3, 5, 20, 25))
    _close(bb.pad(boxes, 3, 5), kbb.pad(boxes, 3, 5))
    angle = np.array([10.0, -25.0], "float32")
    args = (angle, np.array([0.1, -0.05], "float32"), np.array([0.0, 0.2], "float32"),
            np.array([1.2, 0.9], "float32"), np.array([5.0, 0.0], "float32"), np.array([0.0, -8.0], "float32"), 48, 64)
    _close(bb.affine_transform(boxes, *args), kbb.affine_transform(boxes, *args), tol=1e-3)
    _close(bb.affine_transform(boxes, *args, center_x=0.3, center_y=0.6),
           kbb.affine_transform(boxes, *args, center_x=0.3, center_y=0.6), tol=1e-3)
    with pytest.raises(NotImplementedError):
        bb.crop(boxes, 0, 0, 1, 1, bounding_box_format="yxyx")


@pytest.mark.parametrize("encoding", ["center_yxhw", "center_xywh"])
@pytest.mark.parametrize("variance", [None, [0.1, 0.1, 0.2, 0.2]])
def test_box_deltas_as_keras_and_round_trip(encoding, variance):
    anchors, boxes = _boxes((6,)), _boxes((6,))
    ours = bb.encode_box_to_deltas(anchors, boxes, "xyxy", "xyxy", encoding, variance=variance)
    _close(ours, kbb.encode_box_to_deltas(anchors, boxes, "xyxy", "xyxy", encoding, variance=variance))
    decoded = bb.decode_deltas_to_boxes(anchors, ours, "xyxy", "xywh", encoding, variance=variance)
    _close(decoded, kbb.decode_deltas_to_boxes(keras.ops.convert_to_tensor(anchors),
                                               keras.ops.convert_to_tensor(np.asarray(ours)), "xyxy", "xywh",
                                               encoding, variance=variance))
    _close(bb.convert_format(decoded, "xywh", "xyxy"), boxes, tol=1e-3)
    levels = bb.decode_deltas_to_boxes({"p3": anchors}, {"p3": ours}, "xyxy", "xyxy", encoding, variance=variance)
    _close(levels["p3"], boxes, tol=1e-3)
    with pytest.raises(ValueError, match="length 4"):
        bb.encode_box_to_deltas(anchors, boxes, "xyxy", "xyxy", variance=[1.0, 2.0])


def _iou_pair(shapes, fmt):
    first = keras.ops.convert_to_numpy(kbb.convert_format(_boxes(shapes[0][:-1]), "xyxy", fmt))
    second = keras.ops.convert_to_numpy(kbb.convert_format(_boxes(shapes[1][:-1]), "xyxy", fmt))
    first[..., 0, :] = -1.0  # a padding box, masked below
    return first, second


@pytest.mark.parametrize("shapes", [((5, 4), (7, 4)), ((2, 5, 4), (2, 7, 4))])
@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "yxyx"])
def test_compute_iou_as_keras(shapes, fmt):
    first, second = _iou_pair(shapes, fmt)
    ours = bb.compute_iou(first, second, fmt)
    _close(ours, kbb.compute_iou(first, second, fmt))
    assert np.asarray(ours).max() > 0  # some boxes overlap
    _close(bb.compute_iou(first, second, fmt, use_masking=True, mask_val=-3),
           kbb.compute_iou(first, second, fmt, use_masking=True, mask_val=-3))


@pytest.mark.parametrize("shapes", [((2, 5, 4), (7, 4)), ((5, 4), (2, 7, 4))])
def test_compute_iou_of_a_batch_against_unbatched_boxes(shapes):
    # Keras documents these mixed ranks (its own masking fails on them): each image's result is the IoU of the
    # unbatched boxes with that image's boxes.
    first, second = _iou_pair(shapes, "xywh")
    for masking in (False, True):
        ours = np.asarray(bb.compute_iou(first, second, "xywh", use_masking=masking))
        assert ours.shape == (2, 5, 7)
        for i in range(2):
            one, two = (first[i], second) if first.ndim == 3 else (first, second[i])
            _close(ours[i], kbb.compute_iou(one, two, "xywh", use_masking=masking))


def test_compute_iou_relative_and_ciou_as_keras():
    first, second = _boxes((2, 5)) / 50.0, _boxes((2, 5)) / 50.0
    _close(bb.compute_iou(first, second, "rel_xyxy", image_shape=(40, 60, 3)),
           kbb.compute_iou(first, second, "rel_xyxy", image_shape=(40, 60, 3)))
    with pytest.raises(ValueError, match="image_shape"):
        bb.compute_iou(first, second, "rel_xyxy")
    first, second = _boxes((3, 5)), _boxes((3, 5))
    _close(bb.compute_ciou(first, second, "xyxy"), kbb.compute_ciou(first, second, "xyxy"))
    _close(bb.compute_ciou(first[0], second[0], "xyxy"), kbb.compute_ciou(first[0], second[0], "xyxy"))


def test_ciou_gives_gradients_through_kgraph_ops():
    first = kgraph.Variable(_boxes((4,)))
    second = _boxes((4,))
    with kgraph.GradientTape() as tape:
        loss = kgraph.ops.sum(1.0 - bb.compute_ciou(first, second, "xyxy"))
    grad = np.asarray(tape.gradient(loss, first))
    torch = pytest.importorskip("torch")
    boxes = torch.tensor(np.asarray(first.value), requires_grad=True)
    (1.0 - kbb.compute_ciou(boxes, torch.tensor(second), "xyxy")).sum().backward()
    np.testing.assert_allclose(grad, boxes.grad.numpy(), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("shape, size", [((20, 30, 3), (10, 10)), ((31, 17, 1), (8, 12)), ((2, 16, 16, 3), (7, 9)),
                                         ((12, 40, 2), (40, 12))])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_smart_resize_as_keras(shape, size, interpolation):
    x = RNG.uniform(0, 255, size=shape).astype("float32")
    ours = kimage.smart_resize(x, size, interpolation=interpolation)
    theirs = keras.preprocessing.image.smart_resize(x, size, interpolation=interpolation)
    assert isinstance(ours, np.ndarray) and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-3)


def test_smart_resize_channels_first_and_errors():
    x = RNG.uniform(0, 1, size=(3, 20, 30)).astype("float32")
    ours = kimage.smart_resize(x, (10, 10), data_format="channels_first")
    theirs = keras.preprocessing.image.smart_resize(x, (10, 10), data_format="channels_first")
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="tuple of 2"):
        kimage.smart_resize(x, (10,))
    with pytest.raises(ValueError, match="incorrect rank"):
        kimage.smart_resize(x[0], (10, 10))
    with pytest.raises(TypeError, match="unexpected keyword"):
        kimage.smart_resize(x, (10, 10), antialias=True)
