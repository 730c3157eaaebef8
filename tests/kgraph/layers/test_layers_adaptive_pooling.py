"""Adaptive pooling in 1D, 2D and 3D: windows, values against a direct reference (and Keras 3 when installed),
float64 finite-difference gradients, config, save and load."""
import itertools
import math
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from kgraph.layers.pooling.adaptive_pooling import adaptive_windows
from tests.gradcheck import check_gradients

RNG = np.random.default_rng(0)
LAYERS = {("average", 1): layers.AdaptiveAveragePooling1D, ("average", 2): layers.AdaptiveAveragePooling2D,
          ("average", 3): layers.AdaptiveAveragePooling3D, ("max", 1): layers.AdaptiveMaxPooling1D,
          ("max", 2): layers.AdaptiveMaxPooling2D, ("max", 3): layers.AdaptiveMaxPooling3D}


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


def reference(x, output_size, reduce):
    """Reduce each box of input cells floor(i * n / o) .. ceil((i + 1) * n / o) - 1 directly."""
    spatial = x.shape[1:-1]
    out = np.zeros((x.shape[0],) + tuple(output_size) + (x.shape[-1],))
    for pos in itertools.product(*(range(o) for o in output_size)):
        box = tuple(slice(i * n // o, math.ceil((i + 1) * n / o)) for i, n, o in zip(pos, spatial, output_size))
        out[(slice(None),) + pos] = reduce(x[(slice(None),) + box], axis=tuple(range(1, x.ndim - 1)))
    return out


def test_windows_cover_the_axis_in_order_and_overlap_only_when_uneven():
    index, lengths = adaptive_windows(7, 3)
    assert index.tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6]] and lengths.tolist() == [3, 3, 3]
    index, lengths = adaptive_windows(5, 3)
    assert index.tolist() == [[0, 1, 1], [1, 2, 3], [3, 4, 4]] and lengths.tolist() == [2, 3, 2]
    index, lengths = adaptive_windows(6, 3)
    assert index.tolist() == [[0, 1], [2, 3], [4, 5]] and lengths.tolist() == [2, 2, 2]
    index, lengths = adaptive_windows(3, 5)
    assert index.tolist() == [[0, 0], [0, 1], [1, 1], [1, 2], [2, 2]] and lengths.tolist() == [1, 2, 1, 2, 1]
    index, lengths = adaptive_windows(10, 4)
    assert index.tolist() == [[0, 1, 2], [2, 3, 4], [5, 6, 7], [7, 8, 9]] and lengths.tolist() == [3, 3, 3, 3]


@pytest.mark.parametrize("kind", ["average", "max"])
@pytest.mark.parametrize("shape,output_size", [((2, 7, 3), (3,)), ((2, 3, 3), (5,)), ((2, 8, 2), (4,)),
                                               ((2, 7, 5, 2), (3, 2)), ((2, 6, 8, 2), (3, 4)), ((2, 4, 3, 1), (6, 3)),
                                               ((1, 5, 4, 3, 2), (2, 3, 2)), ((1, 4, 6, 2, 2), (2, 3, 1))])
def test_values_match_the_direct_reference(kind, shape, output_size):
    x = RNG.standard_normal(shape).astype("float32")
    layer = LAYERS[kind, len(output_size)](output_size)
    out = layer(x)
    assert out.shape == layer.compute_output_shape(shape) == (shape[0],) + output_size + (shape[-1],)
    np.testing.assert_allclose(out, reference(x, output_size, np.mean if kind == "average" else np.max),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["average", "max"])
@pytest.mark.parametrize("shape,output_size", [((2, 5, 2), (3,)), ((1, 4, 5, 2), (3, 5)), ((1, 4, 3, 2), (2, 3)),
                                               ((1, 3, 4, 3, 1), (2, 3, 2))])
def test_gradients_match_finite_differences(float64, kind, shape, output_size):
    x = np.random.default_rng(1).standard_normal(shape)
    layer = LAYERS[kind, len(output_size)](output_size)
    check_gradients(lambda xs: layer(xs[0]), [x])


def test_unknown_spatial_sizes_take_the_size_of_each_call():
    x = kgraph.Input((None, 4, 2))
    model = kgraph.Model(x, layers.AdaptiveMaxPooling2D(2)(layers.AdaptiveAveragePooling2D((3, 4))(x)))
    assert model.output.shape == (None, 2, 2, 2)
    for rows in (3, 8):
        data = RNG.standard_normal((2, rows, 4, 2)).astype("float32")
        expected = reference(reference(data, (3, 4), np.mean), (2, 2), np.max)
        np.testing.assert_allclose(model.predict(data, verbose=0), expected, rtol=1e-5, atol=1e-6)


def test_model_trains_saves_and_loads_and_configs_round_trip(tmp_path):
    x = kgraph.Input((6, 5, 2))
    h = layers.Conv2D(3, 2, padding="same")(x)
    model = kgraph.Model(x, [layers.Flatten()(layers.AdaptiveMaxPooling2D((4, 3))(h)),
                             layers.Flatten()(layers.AdaptiveAveragePooling2D(2)(h))])
    data = RNG.standard_normal((4, 6, 5, 2)).astype("float32")
    model.compile(optimizer="adam", loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    model.fit(data, [np.ones((4, 36), "float32"), np.ones((4, 12), "float32")], epochs=1, batch_size=2, verbose=0)
    assert all(not np.array_equal(a, w.numpy()) for a, w in zip(before, model.trainable_weights))
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    for a, b in zip(loaded.predict(data, verbose=0), model.predict(data, verbose=0)):
        np.testing.assert_array_equal(a, b)
    for cls in LAYERS.values():
        layer = cls(3, name="pool")
        config = layer.get_config()
        assert config["output_size"] == (3,) * cls.rank and config["data_format"] == "channels_last"
        assert cls.from_config(config).get_config() == config


@pytest.mark.parametrize("make,message", [
    (lambda: layers.AdaptiveMaxPooling1D((2, 3)), "tuple of 1 positive ints"),
    (lambda: layers.AdaptiveAveragePooling2D(0), "tuple of 2 positive ints"),
    (lambda: layers.AdaptiveAveragePooling3D(2, data_format="channels_first"), "channels_last")])
def test_bad_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,output_size,shape", [
    ("AdaptiveAveragePooling1D", 3, (2, 7, 2)), ("AdaptiveAveragePooling1D", 9, (2, 7, 2)),
    ("AdaptiveMaxPooling1D", 4, (2, 10, 2)), ("AdaptiveAveragePooling2D", (3, 2), (2, 7, 5, 2)),
    ("AdaptiveMaxPooling2D", (3, 4), (2, 6, 8, 2)), ("AdaptiveMaxPooling2D", 3, (2, 7, 5, 2)),
    ("AdaptiveAveragePooling3D", (2, 3, 2), (2, 5, 4, 3, 2)), ("AdaptiveMaxPooling3D", (2, 3, 4), (2, 5, 4, 3, 2))])
def test_keras_parity_and_config(keras, name, output_size, shape):
    x = RNG.standard_normal(shape).astype("float32")
    reference_layer = getattr(keras.layers, name)(output_size)
    layer = getattr(layers, name)(output_size)
    np.testing.assert_allclose(layer(x), keras.ops.convert_to_numpy(reference_layer(x)), rtol=1e-5, atol=1e-6)
    expected = reference_layer.get_config()
    assert {k: layer.get_config()[k] for k in ("output_size", "data_format")} == {
        k: expected[k] for k in ("output_size", "data_format")}
