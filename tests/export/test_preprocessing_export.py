"""Export of the preprocessing layers: numeric and image ones trace into ops; string ones stay in the client."""
import numpy as np
import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import layers as L
from tests.export.parity import assert_parity
from tests.export.zoo import perturb


@pytest.mark.parametrize("opset", [13, 18])  # reductions take axes as an input from 18
def test_numeric_preprocessing_exports_as_plain_ops(opset):
    x = kgraph.Input(shape=(3,), name="x")
    adapted = L.Normalization()
    adapted.adapt(np.random.default_rng(0).normal(size=(50, 3)) * 3 + 1)
    bins = L.Discretization(bin_boundaries=[-1.0, 0.0, 1.0])(x)
    outputs = [L.Dense(2)(adapted(x)), L.Normalization(mean=[1.0, 2.0, 3.0], variance=[1.0, 4.0, 9.0], invert=True)(x),
               bins, L.Discretization(bin_boundaries=[-1.0, 0.0, 1.0], output_mode="count")(x),
               L.CategoryEncoding(4, "one_hot")(bins), L.CategoryEncoding(4)(bins),
               L.CategoryEncoding(4, "count")(bins)]
    proto = assert_parity(perturb(kgraph.Model(x, outputs)), opset=opset)
    assert {"Sub", "Div", "GreaterOrEqual", "ReduceSum", "ReduceMax"} <= {n.op_type for n in proto.graph.node}


@pytest.mark.parametrize("opset", [13, 18])  # reductions take axes as an input from 18
def test_image_preprocessing_exports_and_augmentation_is_gone_at_inference(opset):
    image = kgraph.Input(shape=(7, 9, 2), name="image")
    augmented = L.RandomFlip()(L.RandomRotation(0.1)(L.RandomZoom(0.1)(L.RandomTranslation(0.1, 0.1)(
        L.RandomContrast(0.2)(L.RandomBrightness(0.1)(image))))))
    outputs = [L.Resizing(4, 5)(image), L.Resizing(12, 6, interpolation="nearest")(image),
               L.Resizing(5, 5, crop_to_aspect_ratio=True)(image), L.Resizing(5, 5, pad_to_aspect_ratio=True)(image),
               L.CenterCrop(4, 5)(image), L.CenterCrop(9, 3)(image), L.RandomCrop(4, 4)(image), augmented]
    proto = assert_parity(kgraph.Model(image, outputs), opset=opset)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Identity") == 1  # the augmented output is the input itself


@pytest.mark.parametrize("make", [lambda: L.StringLookup(vocabulary=["a", "b"]),
                                  lambda: L.TextVectorization(vocabulary=["a", "b"]),
                                  lambda: L.Hashing(4, salt=1)])
def test_string_layers_are_a_clear_error_saying_they_stay_in_the_client(make):
    text = kgraph.Input(shape=(1,), dtype="string", name="text")
    layer = make()
    model = kgraph.Model(text, L.Dense(2)(L.Embedding(5, 2)(layer(text))))
    with pytest.raises(ExportError, match=f"'{layer.name}' \\({type(layer).__name__}\\).*must stay in the client"):
        to_onnx(model)


def _ids(name, shape, dtype, rng):
    """Integers around the vocabulary below: in it, out of it, negative, and the mask value 0."""
    return rng.integers(-3, 14, size=shape).astype(dtype)


@pytest.mark.parametrize("opset", [13, 18])  # reductions take axes as an input from 18
def test_integer_lookup_exports_as_comparisons_with_its_vocabulary(opset):
    ids = kgraph.Input(shape=(4,), dtype="int64", name="ids")
    vocabulary = [7, 9, 11, 2]
    oov_buckets = L.IntegerLookup(vocabulary=vocabulary, num_oov_indices=3, mask_token=0)
    outputs = [L.IntegerLookup(vocabulary=vocabulary)(ids), oov_buckets(ids),
               L.IntegerLookup(vocabulary=vocabulary, output_mode="count", mask_token=0)(ids),
               L.IntegerLookup(vocabulary=vocabulary, output_mode="one_hot")(ids),
               L.IntegerLookup(vocabulary=vocabulary, invert=True)(ids),
               L.IntegerLookup(vocabulary=vocabulary, output_mode="tf_idf", idf_weights=[0.5, 1.0, 2.0, 3.0])(ids),
               L.IntegerLookup(vocabulary=vocabulary, output_mode="multi_hot", pad_to_max_tokens=True,
                               max_tokens=8)(ids),
               L.Dense(2)(L.Embedding(8, 3)(oov_buckets(ids)))]
    proto = assert_parity(perturb(kgraph.Model(ids, outputs)), sampler=_ids, opset=opset)
    assert {n.domain for n in proto.graph.node} <= {"", "ai.onnx"}  # the default domain only, no ai.onnx.ml


@pytest.mark.parametrize("kwargs", [{"num_oov_indices": 0}, {"num_oov_indices": 2, "oov_method": "farmhash"}])
def test_integer_lookup_that_cannot_be_exact_in_onnx_stays_in_the_client(kwargs):
    ids = kgraph.Input(shape=(2,), dtype="int64", name="ids")
    model = kgraph.Model(ids, L.IntegerLookup(vocabulary=[7, 9], name="ids_lookup", **kwargs)(ids))
    with pytest.raises(ExportError, match="'ids_lookup' \\(IntegerLookup\\).*must stay in the client"):
        to_onnx(model)
