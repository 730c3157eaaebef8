"""gaussian_blur, sobel_edges and scale_and_translate export by tracing and match onnxruntime; elastic_transform,
which draws its fields at every call, is refused with its name."""
import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import ops
from tests.export.parity import assert_parity


def test_filters_export_in_both_layouts():
    image = kgraph.Input((6, 7, 3), name="image")
    planes = kgraph.Input((3, 6, 7), name="planes")
    outputs = [ops.image.gaussian_blur(image, (3, 5), (0.8, 1.2)),
               ops.image.gaussian_blur(planes, 4, 1.1, data_format="channels_first"),
               ops.image.sobel_edges(image), ops.image.sobel_edges(planes, data_format="channels_first")]
    assert_parity(kgraph.Model([image, planes], outputs, name="image_filters"))


def test_scale_and_translate_exports_with_constant_and_tensor_coefficients():
    image = kgraph.Input((6, 7, 3), name="image")
    coefficients = kgraph.Input((2,), name="coefficients")
    # The first row of the batch gives the coefficients of every image: scale in (0.5, 1.5).
    scale, translation = ops.sigmoid(coefficients[0]) + 0.5, ops.tanh(coefficients[0])
    outputs = [ops.image.scale_and_translate(image, (None, 4, 9, 3), [0.6, 1.4], [0.2, -0.3], (1, 2), "linear"),
               ops.image.scale_and_translate(image, (None, 9, 4, 3), [1.5, 0.5], [0.0, 0.5], (1, 2), "cubic",
                                             antialias=False),
               ops.image.scale_and_translate(image, (None, 5, 8, 3), scale, translation, (1, 2), "lanczos3"),
               ops.image.scale_and_translate(image, (None, 6, 5, 3), scale, translation, (-3, -2), "lanczos5",
                                             antialias=False)]
    assert_parity(kgraph.Model([image, coefficients], outputs, name="scale_and_translate"))


def test_elastic_transform_is_refused_with_its_name():
    image = kgraph.Input((6, 7, 3), name="image")
    model = kgraph.Model(image, ops.image.elastic_transform(image, 2.0, 1.0, seed=1))
    with pytest.raises(ExportError, match="elastic_transform"):
        to_onnx(model)
