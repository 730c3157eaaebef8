"""Embedding and the shape layers: Permute, RepeatVector, UpSampling, ZeroPadding, Cropping, Rescaling."""
import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from tests.gradcheck import check_gradients, check_variable_gradients


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


RNG = np.random.default_rng(0)


def test_embedding_looks_up_rows_for_integer_and_float_indices():
    layer = layers.Embedding(10, 3, name="emb")
    layer.build(None)
    assert [w.path for w in layer.weights] == ["emb/embeddings"]
    table = layer.get_weights()[0]
    assert table.shape == (10, 3) and np.all(np.abs(table) <= 0.05) and np.any(table != 0)
    ids = np.array([[0, 9, 3], [3, 3, 1]])
    np.testing.assert_array_equal(layer(ids), table[ids])
    np.testing.assert_array_equal(layer(ids.astype("float32")), table[ids])
    assert layer(ids).dtype == np.float32
    assert layers.Embedding(4, 2)(kgraph.Input((5,), dtype="int32")).shape == (None, 5, 2)


def test_embedding_gradient_accumulates_repeated_indices(float64):
    layer = layers.Embedding(5, 2)
    ids = np.array([[1, 1, 4], [0, 1, 2]])
    layer.build(None)
    check_variable_gradients(lambda: layer(ids), layer.trainable_weights)
    with kgraph.GradientTape() as tape:
        out = layer(ids)
    grad = tape.gradient(out, layer.embeddings)
    np.testing.assert_array_equal(grad[:, 0], [1, 3, 1, 0, 1])


@pytest.mark.parametrize("ids,bad", [([[0, 10]], 10), ([[-1, 2]], -1), ([[3.0, 12.0]], 12)])
def test_embedding_out_of_range_index_is_a_clear_error(ids, bad):
    layer = layers.Embedding(10, 2, name="words")
    with pytest.raises(ValueError, match=rf"'words' received index {bad}.*input_dim=10"):
        layer(np.array(ids))


def test_embedding_bad_arguments():
    with pytest.raises(ValueError, match="`input_dim` must be a positive integer"):
        layers.Embedding(0, 3)
    layer = layers.Embedding(3, 2, embeddings_initializer="zeros")
    assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


def test_permute_and_repeat_vector(float64):
    x = RNG.standard_normal((2, 3, 4, 5))
    layer = layers.Permute((3, 1, 2))
    np.testing.assert_array_equal(layer(x), np.transpose(x, (0, 3, 1, 2)))
    assert layer.compute_output_shape((None, 3, 4, 5)) == (None, 5, 3, 4)
    check_gradients(lambda xs: layer(xs[0]), [x[:, :2, :2, :2]])
    v = RNG.standard_normal((2, 4))
    repeat = layers.RepeatVector(3)
    np.testing.assert_array_equal(repeat(v), np.repeat(v[:, None], 3, axis=1))
    assert repeat.compute_output_shape((None, 4)) == (None, 3, 4)
    check_gradients(lambda xs: repeat(xs[0]), [v])
    with pytest.raises(ValueError, match="Invalid permutation argument"):
        layers.Permute((1, 3))
    with pytest.raises(TypeError, match="`n`"):
        layers.RepeatVector(0)


def test_upsampling(float64):
    x = RNG.standard_normal((2, 3, 2, 2))
    layer = layers.UpSampling2D((2, 3))
    out = layer(x)
    np.testing.assert_array_equal(out, x.repeat(2, axis=1).repeat(3, axis=2))
    assert out.shape[1:] == layer.compute_output_shape((None, 3, 2, 2))[1:]
    check_gradients(lambda xs: layer(xs[0]), [x])
    seq = RNG.standard_normal((2, 3, 2))
    np.testing.assert_array_equal(layers.UpSampling1D(3)(seq), seq.repeat(3, axis=1))
    with pytest.raises(ValueError, match="nearest"):
        layers.UpSampling2D(interpolation="lanczos3")


def test_zero_padding_and_cropping(float64):
    x = RNG.standard_normal((2, 4, 5, 2))
    pad = layers.ZeroPadding2D(((1, 0), (2, 3)))
    out = pad(x)
    np.testing.assert_array_equal(out, np.pad(x, ((0, 0), (1, 0), (2, 3), (0, 0))))
    assert out.shape[1:] == pad.compute_output_shape((None, 4, 5, 2))[1:]
    np.testing.assert_array_equal(layers.ZeroPadding2D(1)(x), np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))))
    np.testing.assert_array_equal(layers.ZeroPadding2D((2, 1))(x), np.pad(x, ((0, 0), (2, 2), (1, 1), (0, 0))))
    crop = layers.Cropping2D(((1, 2), (0, 3)))
    np.testing.assert_array_equal(crop(x), x[:, 1:2, 0:2])
    assert crop.compute_output_shape((None, 4, 5, 2)) == (None, 1, 2, 2)
    seq = x[:, 0]
    np.testing.assert_array_equal(layers.ZeroPadding1D((2, 1))(seq), np.pad(seq, ((0, 0), (2, 1), (0, 0))))
    np.testing.assert_array_equal(layers.Cropping1D(2)(seq), seq[:, 2:3])
    for layer in (pad, crop, layers.ZeroPadding1D(), layers.Cropping1D()):
        data = seq if "1D" in type(layer).__name__ else x
        check_gradients(lambda xs, layer=layer: layer(xs[0]), [data[:1]])
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
    with pytest.raises(ValueError, match="'crop'.*leaves nothing"):
        layers.Cropping2D(2, name="crop")(kgraph.Input((4, 6, 1)))
    with pytest.raises(ValueError, match="`padding` must be"):
        layers.ZeroPadding2D((1, 2, 3))
    with pytest.raises(ValueError, match="non-negative"):
        layers.ZeroPadding1D(-1)


def test_rescaling_casts_and_broadcasts(float64):
    pixels = RNG.integers(0, 256, (2, 3, 3, 3)).astype("uint8")
    out = layers.Rescaling(1 / 255.0, offset=-0.5)(pixels)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, pixels / 255.0 - 0.5)
    scale = np.array([1.0, 2.0, 3.0])
    layer = layers.Rescaling(scale, offset=[0.0, 1.0, 2.0])
    x = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(layer(x), x * scale + [0.0, 1.0, 2.0])
    check_gradients(lambda xs: layer(xs[0]), [x])
    assert layers.Rescaling.from_config(layer.get_config()).get_config() == layer.get_config()


def test_spatial_dropout_drops_whole_channels():
    x = np.ones((4, 6, 5, 8), dtype="float32")
    layer = layers.SpatialDropout2D(0.5, seed=1)
    np.testing.assert_array_equal(layer(x), x)
    out = layer(x, training=True)
    per_channel = out.reshape(4, 30, 8)
    assert np.all(per_channel.min(axis=1) == per_channel.max(axis=1))
    assert set(np.unique(out)) == {0.0, 2.0}
    out1 = layers.SpatialDropout1D(0.5, seed=2)(x[:, 0], training=True)
    assert np.all(out1.min(axis=1) == out1.max(axis=1))
    with pytest.raises(ValueError, match="expected ndim=3"):
        layers.SpatialDropout1D(0.5)(x)
    assert layers.SpatialDropout2D.from_config(layer.get_config()).rate == 0.5
