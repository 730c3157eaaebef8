"""3D convolution/pooling/shape layers and the 1D transposed, depthwise and separable convolutions.

Values against direct NumPy references (and Keras 3 on copied weights when it
is installed), float64 finite-difference gradients, config, save and load.
"""
import itertools
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from tests.gradcheck import check_gradients, check_variable_gradients
from tests.kgraph.layers.test_layers_conv import reference_conv, same_pads

RNG = np.random.default_rng(0)


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


def reference_conv_transpose(x, kernel, strides, dilation, crops):
    """Scatter every input cell times the ``(*window, filters, in)`` kernel into the full output, then crop/extend."""
    r = x.ndim - 2
    window = kernel.shape[:r]
    full = [(n - 1) * s + (k - 1) * d + 1 for n, k, s, d in zip(x.shape[1:-1], window, strides, dilation)]
    buf = np.zeros((x.shape[0],) + tuple(f + 8 for f in full) + (kernel.shape[-2],))
    for pos in itertools.product(*(range(n) for n in x.shape[1:-1])):
        contrib = np.einsum("nc,...fc->n...f", x[(slice(None),) + pos], kernel)
        for tap in itertools.product(*(range(k) for k in window)):
            cell = tuple(p * s + t * d for p, s, t, d in zip(pos, strides, tap, dilation))
            buf[(slice(None),) + cell] += contrib[(slice(None),) + tap]
    return buf[(slice(None),) + tuple(slice(c, f + e) for f, (c, e) in zip(full, crops))]


def reference_pool(x, pool, strides, padding, reduce):
    """Pool every window of real cells directly (padded cells never count)."""
    pads = [same_pads(n, k, s, 1) if padding == "same" else (0, 0) for n, k, s in zip(x.shape[1:-1], pool, strides)]
    sizes = [(n + b + a - k) // s + 1 for n, (b, a), k, s in zip(x.shape[1:-1], pads, pool, strides)]
    out = np.zeros((x.shape[0],) + tuple(sizes) + (x.shape[-1],))
    for pos in itertools.product(*(range(o) for o in sizes)):
        cells = tuple(slice(max(p * s - b, 0), p * s - b + k) for p, s, (b, _), k in zip(pos, strides, pads, pool))
        out[(slice(None),) + pos] = reduce(x[(slice(None),) + cells], axis=tuple(range(1, x.ndim - 1)))
    return out


@pytest.mark.parametrize("kernel,strides,dilation,groups,padding", [
    ((2, 3, 2), (1, 2, 1), (1, 1, 1), 1, "same"), ((2, 2, 2), (1, 1, 1), (2, 1, 2), 2, "valid"),
    ((3, 1, 2), (2, 3, 2), (1, 1, 1), 1, "same")])
def test_conv3d_matches_direct_reference(kernel, strides, dilation, groups, padding):
    x = RNG.standard_normal((2, 5, 6, 4, 4)).astype("float32")
    layer = layers.Conv3D(6, kernel, strides=strides, padding=padding, dilation_rate=dilation, groups=groups)
    out = layer(x)
    k, b = layer.get_weights()
    assert k.shape == kernel + (4 // groups, 6)
    pads = [same_pads(n, kk, s, d) if padding == "same" else (0, 0)
            for n, kk, s, d in zip(x.shape[1:4], kernel, strides, dilation)]
    np.testing.assert_allclose(out, reference_conv(x, k, strides, pads, dilation) + b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("make,shape", [
    (lambda: layers.Conv3DTranspose(3, (2, 3, 2), strides=(2, 1, 3), padding="same"), (2, 3, 2, 2, 2)),
    (lambda: layers.Conv3DTranspose(2, 2, strides=3, output_padding=(1, 2, 0)), (1, 2, 2, 3, 3)),
    (lambda: layers.Conv1DTranspose(3, 4, strides=3, padding="same", output_padding=1), (2, 5, 2)),
    (lambda: layers.Conv1DTranspose(2, 3, dilation_rate=2), (2, 4, 3)),
    (lambda: layers.Conv1DTranspose(2, 2, strides=3), (2, 4, 3))])
def test_conv_transpose_matches_scatter_reference(make, shape):
    layer = make()
    x = RNG.standard_normal(shape).astype("float32")
    out = layer(x)
    k, b = layer.get_weights()
    assert k.shape == layer.kernel_size + (layer.filters, shape[-1])
    expected = reference_conv_transpose(x, k, layer.strides, layer.dilation_rate, layer.crops()) + b
    assert out.shape == expected.shape == layer.compute_output_shape(shape)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_depthwise_and_separable_conv1d_convolve_each_channel_with_its_own_filters():
    x = RNG.standard_normal((2, 9, 3)).astype("float32")
    depthwise = layers.DepthwiseConv1D(3, depth_multiplier=2, padding="same", dilation_rate=2)
    out = depthwise(x)
    k, b = depthwise.get_weights()
    assert k.shape == (3, 3, 2) and out.shape == (2, 9, 6)
    for c, m in itertools.product(range(3), range(2)):
        expected = reference_conv(x[..., c:c + 1], k[:, c:c + 1, m:m + 1], (1,), [(2, 2)], (2,))[..., 0]
        np.testing.assert_allclose(out[..., 2 * c + m], expected + b[2 * c + m], rtol=1e-5, atol=1e-5)
    separable = layers.SeparableConv1D(4, 3, depth_multiplier=2, padding="same", dilation_rate=2)
    separable(x)
    assert [w.shape for w in separable.get_weights()] == [(3, 3, 2), (1, 6, 4), (4,)]
    separable.set_weights([k, RNG.standard_normal((1, 6, 4)).astype("float32"), np.ones(4, "float32")])
    pointwise = separable.get_weights()[1][0]
    np.testing.assert_allclose(separable(x), (out - b) @ pointwise + 1.0, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("pool,strides,padding", [((2, 2, 2), None, "valid"), ((3, 2, 2), (2, 1, 2), "same"),
                                                  ((2, 3, 1), (1, 1, 1), "valid")])
def test_pooling3d_matches_direct_reference(pool, strides, padding):
    x = RNG.standard_normal((2, 5, 4, 5, 2)).astype("float32")
    windows = strides or pool
    np.testing.assert_allclose(layers.MaxPooling3D(pool, strides, padding)(x),
                               reference_pool(x, pool, windows, padding, np.max), rtol=1e-6)
    np.testing.assert_allclose(layers.AveragePooling3D(pool, strides, padding)(x),
                               reference_pool(x, pool, windows, padding, np.mean), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layers.GlobalMaxPooling3D()(x), x.max(axis=(1, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(layers.GlobalAveragePooling3D(keepdims=True)(x), x.mean(axis=(1, 2, 3),
                                                                                      keepdims=True), rtol=1e-5)


def test_shape_layers_3d_pad_crop_and_repeat():
    x = RNG.standard_normal((2, 3, 4, 5, 2)).astype("float32")
    np.testing.assert_array_equal(layers.ZeroPadding3D(((1, 0), (2, 1), (0, 2)))(x),
                                  np.pad(x, ((0, 0), (1, 0), (2, 1), (0, 2), (0, 0))))
    np.testing.assert_array_equal(layers.ZeroPadding3D()(x), np.pad(x, ((0, 0),) + ((1, 1),) * 3 + ((0, 0),)))
    np.testing.assert_array_equal(layers.Cropping3D(((1, 0), (0, 2), (1, 1)))(x), x[:, 1:, :2, 1:4])
    np.testing.assert_array_equal(layers.Cropping3D(1)(x), x[:, 1:2, 1:3, 1:4])
    np.testing.assert_array_equal(layers.UpSampling3D((2, 1, 3))(x), x.repeat(2, 1).repeat(3, 3))
    with pytest.raises(ValueError, match="leaves nothing"):
        layers.Cropping3D(((2, 1), (0, 0), (0, 0)))(x)


def test_spatial_dropout3d_drops_whole_channels_in_training_only():
    x = np.ones((4, 2, 3, 2, 8), "float32")
    layer = layers.SpatialDropout3D(0.5, seed=3)
    np.testing.assert_array_equal(layer(x), x)
    out = np.asarray(layer(x, training=True))
    per_channel = out.reshape(4, -1, 8)
    assert np.all(per_channel == per_channel[:, :1]) and set(np.unique(out)) == {0.0, 2.0}
    assert layer.get_config()["data_format"] == "channels_last" and "noise_shape" not in layer.get_config()


def test_conv3d_then_max_pooling3d_runs_fused_in_a_model_with_the_same_values_and_gradients(float64):
    x = kgraph.Input((4, 5, 4, 2))
    conv = layers.Conv3D(3, 2, padding="same", activation="relu")
    model = kgraph.Model(x, layers.MaxPooling3D()(conv(x)))
    data = RNG.standard_normal((2, 4, 5, 4, 2))
    assert conv.fuses_max_pool(model.layers[-1])
    np.testing.assert_allclose(model(data), layers.MaxPooling3D()(conv(data)), rtol=1e-12)
    check_variable_gradients(lambda: model(data), conv.trainable_weights)


@pytest.mark.parametrize("make,shape", [
    (lambda: layers.Conv3D(2, (2, 1, 2), strides=(1, 2, 1), padding="same"), (1, 3, 4, 3, 2)),
    (lambda: layers.Conv3D(2, 2, dilation_rate=(2, 1, 1), groups=2, activation="relu"), (1, 3, 2, 2, 2)),
    (lambda: layers.Conv3DTranspose(2, 2, strides=(2, 1, 2), padding="same"), (1, 2, 2, 2, 2)),
    (lambda: layers.Conv1DTranspose(2, 3, strides=2, output_padding=1, activation="tanh"), (2, 4, 2)),
    (lambda: layers.DepthwiseConv1D(2, depth_multiplier=2, strides=2, padding="same"), (2, 5, 2)),
    (lambda: layers.SeparableConv1D(3, 2, depth_multiplier=2, dilation_rate=2), (2, 5, 2)),
    (lambda: layers.MaxPooling3D(2, strides=1, padding="same"), (1, 3, 3, 2, 2)),
    (lambda: layers.AveragePooling3D((2, 1, 2), padding="same"), (1, 3, 2, 3, 2)),
    (lambda: layers.GlobalMaxPooling3D(), (2, 2, 3, 2, 2)),
    (lambda: layers.GlobalAveragePooling3D(), (2, 2, 3, 2, 2)),
    (lambda: layers.UpSampling3D((1, 2, 2)), (1, 2, 2, 2, 2)),
    (lambda: layers.ZeroPadding3D(((0, 1), 1, (2, 0))), (1, 2, 2, 2, 1)),
    (lambda: layers.Cropping3D(((1, 0), (0, 1), (1, 1))), (1, 3, 3, 3, 2))])
def test_gradients_match_finite_differences(float64, make, shape):
    layer = make()
    x = np.random.default_rng(1).standard_normal(shape)
    layer(x)
    check_gradients(lambda xs: layer(xs[0]), [x])
    if layer.trainable_weights:
        check_variable_gradients(lambda: layer(x), layer.trainable_weights)


def test_model_of_every_layer_trains_saves_and_loads_and_configs_round_trip(tmp_path):
    vol, seq = kgraph.Input((4, 4, 4, 2), name="vol"), kgraph.Input((6, 2), name="seq")
    h = layers.Conv3DTranspose(2, 2, strides=2, padding="same")(layers.Conv3D(3, 2, activation="relu")(vol))
    h = layers.UpSampling3D()(layers.AveragePooling3D(2)(layers.MaxPooling3D(1)(h)))
    h = layers.Cropping3D(1)(layers.ZeroPadding3D(1)(h))
    s = layers.SeparableConv1D(3, 2)(layers.DepthwiseConv1D(2)(layers.Conv1DTranspose(2, 2)(seq)))
    outputs = [layers.GlobalAveragePooling3D()(h), layers.GlobalMaxPooling3D()(h), s]
    model = kgraph.Model([vol, seq], outputs)
    xs = [RNG.standard_normal((4, 4, 4, 4, 2)).astype("float32"), RNG.standard_normal((4, 6, 2)).astype("float32")]
    ys = [RNG.standard_normal((4,) + tuple(o.shape[1:])).astype("float32") for o in outputs]
    model.compile(optimizer="adam", loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    model.fit(xs, ys, epochs=1, batch_size=2, verbose=0)
    assert all(not np.array_equal(a, w.numpy()) for a, w in zip(before, model.trainable_weights))
    expected = model.predict(xs, verbose=0)
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    for a, b in zip(loaded.predict(xs, verbose=0), expected):
        np.testing.assert_array_equal(a, b)
    for layer in model.layers[2:]:
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()


def test_keras_aliases_are_the_same_classes():
    assert layers.Convolution3D is layers.Conv3D and layers.Convolution3DTranspose is layers.Conv3DTranspose
    assert layers.Convolution1DTranspose is layers.Conv1DTranspose
    assert layers.SeparableConvolution1D is layers.SeparableConv1D
    assert layers.MaxPool3D is layers.MaxPooling3D and layers.AvgPool3D is layers.AveragePooling3D
    assert layers.GlobalMaxPool3D is layers.GlobalMaxPooling3D
    assert layers.GlobalAvgPool3D is layers.GlobalAveragePooling3D


@pytest.mark.parametrize("make,message", [
    (lambda: layers.Conv3D(4, (3, 3)), "tuple of 3 positive ints"),
    (lambda: layers.Conv3D(6, 3, groups=4), "evenly divisible by the number of groups"),
    (lambda: layers.Conv3DTranspose(2, 3, strides=2, output_padding=(1, 2, 1)), "greater than output padding"),
    (lambda: layers.Conv1DTranspose(2, 3, output_padding=(0, 0)), "tuple of 1 non-negative ints"),
    (lambda: layers.Conv1DTranspose(2, 3, padding="causal"), "must be one of"),
    (lambda: layers.DepthwiseConv1D(3, depth_multiplier=0), "strictly positive integer"),
    (lambda: layers.SeparableConv1D(2, 3, strides=2, dilation_rate=2), "not supported in conjunction"),
    (lambda: layers.Conv3D(2, 3, lora_alpha=2.0), "does not support `lora_alpha`"),
    (lambda: layers.MaxPooling3D(data_format="channels_first"), "channels_last"),
    (lambda: layers.ZeroPadding3D((1, 2)), "tuple of 3 ints"),
])
def test_bad_arguments(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_inputs_name_the_layer():
    with pytest.raises(ValueError, match='"vol".*expected ndim=5, found ndim=4'):
        layers.Conv3D(2, 2, name="vol")(np.zeros((1, 3, 3, 1), "float32"))
    with pytest.raises(ValueError, match="'tiny'.*output size would be negative"):
        layers.MaxPooling3D(3, name="tiny")(kgraph.Input((2, 4, 4, 1)))


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


KERAS_CASES = [
    ("Conv3D", {"filters": 3, "kernel_size": (2, 3, 2), "strides": (1, 2, 1), "padding": "same"}, (2, 4, 5, 4, 2)),
    ("Conv3D", {"filters": 4, "kernel_size": 2, "dilation_rate": 2, "groups": 2, "activation": "relu"},
     (2, 5, 5, 4, 2)),
    ("Conv3DTranspose", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same"}, (2, 3, 2, 3, 2)),
    ("Conv3DTranspose", {"filters": 2, "kernel_size": (2, 3, 2), "strides": (3, 1, 2), "output_padding": (1, 0, 1)},
     (2, 2, 3, 2, 3)),
    ("Conv3DTranspose", {"filters": 2, "kernel_size": 3, "dilation_rate": 2, "padding": "same"}, (1, 3, 3, 2, 2)),
    ("Conv1DTranspose", {"filters": 3, "kernel_size": 3, "strides": 2}, (2, 5, 2)),
    ("Conv1DTranspose", {"filters": 3, "kernel_size": 4, "strides": 3, "padding": "same", "output_padding": 1},
     (2, 5, 2)),
    ("Conv1DTranspose", {"filters": 3, "kernel_size": 3, "dilation_rate": 2, "padding": "same"}, (2, 5, 2)),
    ("DepthwiseConv1D", {"kernel_size": 3, "depth_multiplier": 2, "strides": 2, "padding": "same"}, (2, 7, 3)),
    ("DepthwiseConv1D", {"kernel_size": 2, "dilation_rate": 2, "activation": "relu"}, (2, 7, 3)),
    ("SeparableConv1D", {"filters": 4, "kernel_size": 3, "depth_multiplier": 2, "padding": "same", "strides": 2},
     (2, 7, 3)),
    ("SeparableConv1D", {"filters": 2, "kernel_size": 2, "dilation_rate": 3, "use_bias": False}, (2, 9, 3)),
    ("MaxPooling3D", {}, (2, 4, 5, 4, 2)),
    ("MaxPooling3D", {"pool_size": (3, 2, 2), "strides": (2, 1, 2), "padding": "same"}, (2, 5, 4, 5, 2)),
    ("AveragePooling3D", {"pool_size": 2, "padding": "same"}, (2, 5, 4, 3, 2)),
    ("AveragePooling3D", {"pool_size": (2, 3, 1), "strides": 1}, (2, 4, 4, 3, 2)),
    ("GlobalMaxPooling3D", {}, (2, 3, 4, 2, 3)),
    ("GlobalAveragePooling3D", {"keepdims": True}, (2, 3, 4, 2, 3)),
    ("ZeroPadding3D", {"padding": ((1, 0), (2, 1), (0, 2))}, (2, 2, 3, 2, 2)),
    ("Cropping3D", {"cropping": ((1, 0), (0, 2), (1, 1))}, (2, 3, 4, 4, 2)),
    ("UpSampling3D", {"size": (2, 1, 3)}, (2, 2, 3, 2, 2)),
]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,kwargs,shape", KERAS_CASES)
def test_keras_parity_on_copied_weights_and_config(keras, name, kwargs, shape):
    x = RNG.standard_normal(shape).astype("float32")
    reference = getattr(keras.layers, name)(**kwargs)
    reference(x)
    reference.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in reference.get_weights()])
    layer = getattr(layers, name)(**kwargs)
    layer(x)
    assert [w.shape for w in layer.weights] == [tuple(w.shape) for w in reference.weights]
    assert [w.path for w in layer.weights] == [w.path.replace(reference.name, layer.name) for w in reference.weights]
    layer.set_weights(reference.get_weights())
    np.testing.assert_allclose(layer(x), keras.ops.convert_to_numpy(reference(x)), rtol=1e-5, atol=1e-5)
    expected = reference.get_config()
    config = layer.get_config()
    assert {k: v for k, v in config.items() if k not in ("name", "dtype") and not k.endswith("initializer")} == {
        k: expected[k] for k in config if k not in ("name", "dtype") and not k.endswith("initializer")}
