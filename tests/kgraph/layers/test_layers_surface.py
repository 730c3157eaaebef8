"""Dot, EinsumDense, UnitNormalization, GroupNormalization, RMSNormalization, Keras's aliases, and saving them all."""
import os

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


@pytest.mark.parametrize("shapes,axes,expected_shape", [
    (((2, 3, 4), (2, 5, 4)), (2, 2), (2, 3, 5)), (((2, 4), (2, 4)), 1, (2, 1)),
    (((2, 3, 4), (2, 4)), (2, 1), (2, 3)), (((2, 4), (2, 4, 3)), (1, 1), (2, 3)),
    (((2, 3, 4, 2), (2, 4, 5)), (-2, 1), (2, 3, 2, 5))])
def test_dot_is_keras_batch_dot(float64, shapes, axes, expected_shape):
    a, b = RNG.standard_normal(shapes[0]), RNG.standard_normal(shapes[1])
    layer = layers.Dot(axes=axes)
    out = layer([a, b])
    assert out.shape == expected_shape == layer.compute_output_shape(shapes)
    pair = (axes, axes) if isinstance(axes, int) else axes
    reference = np.stack([np.tensordot(a[i], b[i], axes=(pair[0] % a.ndim - 1, pair[1] % b.ndim - 1))
                          for i in range(2)]).reshape(expected_shape)
    np.testing.assert_allclose(out, reference, rtol=1e-12)
    check_gradients(lambda xs: layer(xs), [a, b])
    symbolic = layers.Dot(axes=axes)([kgraph.Input(s[1:]) for s in shapes])
    assert symbolic.shape == (None,) + expected_shape[1:]


def test_dot_normalize_is_cosine_similarity(float64):
    a, b = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    cosine = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    out = layers.dot([a, b], axes=-1, normalize=True)
    np.testing.assert_allclose(out[:, 0], cosine, rtol=1e-12)
    check_gradients(lambda xs: layers.Dot(1, normalize=True)(xs), [a, b])
    layer = layers.Dot(axes=[1, 1], normalize=True)
    assert layers.Dot.from_config(layer.get_config()).get_config() == layer.get_config()


def test_dot_errors_are_keras_messages():
    with pytest.raises(TypeError, match="Invalid type for argument `axes`"):
        layers.Dot(axes="1")
    with pytest.raises(ValueError, match="it should contain two elements"):
        layers.Dot(axes=(1, 2, 3))
    with pytest.raises(ValueError, match="Cannot perform batch_dot over axis 0"):
        layers.Dot(axes=0)([kgraph.Input((3,)), kgraph.Input((3,))])
    with pytest.raises(ValueError, match=r"Incompatible input shapes: axis values 3 \(at axis 1\) != 4"):
        layers.Dot(axes=1)([kgraph.Input((3,)), kgraph.Input((4,))])
    with pytest.raises(ValueError, match="should be called on a list of 2 inputs"):
        layers.Dot(axes=1)([kgraph.Input((3,))] * 3)


@pytest.mark.parametrize("equation,output_shape,bias_axes,input_shape,kernel_shape,bias_shape,out_shape", [
    ("ab,bc->ac", 4, "c", (2, 3), (3, 4), (4,), (2, 4)),
    ("abc,cd->abd", (5, 4), "d", (2, 5, 3), (3, 4), (4,), (2, 5, 4)),
    ("abc,cde->abde", (5, 2, 4), "de", (2, 5, 3), (3, 2, 4), (2, 4), (2, 5, 2, 4)),
    ("abc,cde->abde", (None, 2, 4), "b", (2, 5, 3), (3, 2, 4), (5, 1, 1), (2, 5, 2, 4)),
    ("...b,bc->...c", 4, "c", (2, 5, 3), (3, 4), (4,), (2, 5, 4)),
    ("ab...,bc->ac...", 4, "c", (2, 3, 5), (3, 4), (4, 1), (2, 4, 5)),
    ("abcd,cde->abe", (5, 2), None, (2, 5, 3, 6), (3, 6, 2), None, (2, 5, 2))])
def test_einsum_dense_shapes_follow_keras(float64, equation, output_shape, bias_axes, input_shape, kernel_shape,
                                          bias_shape, out_shape):
    layer = layers.EinsumDense(equation, output_shape, bias_axes=bias_axes, activation="tanh",
                               bias_initializer="random_normal", name="ed")
    x = RNG.standard_normal(input_shape)
    out = layer(x)
    assert [w.path for w in layer.weights] == ["ed/kernel"] + (["ed/bias"] if bias_axes else [])
    assert layer.kernel.shape == kernel_shape and (layer.bias is None if bias_shape is None
                                                   else layer.bias.shape == bias_shape)
    assert out.shape == out_shape == layer.compute_output_shape(input_shape)
    expected = np.einsum(equation, x, layer.kernel.numpy())
    np.testing.assert_allclose(out, np.tanh(expected + (layer.bias.numpy() if bias_axes else 0)), rtol=1e-12)
    check_gradients(lambda xs: layer(xs[0]), [x[:1]])
    check_variable_gradients(lambda: layer(x[:1]), layer.trainable_weights)
    assert layers.EinsumDense.from_config(layer.get_config()).get_config() == layer.get_config()


def test_einsum_dense_kernel_fans_are_its_input_and_output_axes():
    # glorot_uniform: limit sqrt(6 / (fan_in + fan_out)) with fan_in = 64 (c), fan_out = 2 * 8 (d, e).
    layer = layers.EinsumDense("abc,cde->abde", (3, 2, 8))
    layer.build((None, 3, 64))
    kernel = layer.get_weights()[0]
    limit = np.sqrt(6 / (64 + 16))
    assert np.abs(kernel).max() <= limit and np.abs(kernel).max() > 0.9 * limit


def test_einsum_dense_errors():
    with pytest.raises(ValueError, match="Invalid einsum equation 'ab->b'"):
        layers.EinsumDense("ab->b", 3)(kgraph.Input((4,)))
    with pytest.raises(ValueError, match="Bias dimension 'x' was requested"):
        layers.EinsumDense("ab,bc->ac", 3, bias_axes="x")(kgraph.Input((4,)))
    with pytest.raises(ValueError, match="Weight dimension 'z' did not have a match"):
        layers.EinsumDense("ab,bz->ab", 4)(kgraph.Input((4,)))
    with pytest.raises(ValueError, match="needs an `output_shape` of 1 sizes"):
        layers.EinsumDense("ab,bc->ac", (3, 2))(kgraph.Input((4,)))
    with pytest.raises(ValueError, match="do not match at shared dimension 'b'"):
        layers.EinsumDense("abc,cd->abd", (5, 2))(kgraph.Input((4, 3)))
    with pytest.raises(ValueError, match="lora_rank"):
        layers.EinsumDense("ab,bc->ac", 3, lora_rank=2)


def _group_norm_reference(x, groups, gamma, beta, epsilon, axis=-1):
    x = np.moveaxis(x, axis, -1)
    shape = x.shape
    grouped = x.reshape(shape[0], -1, groups, shape[-1] // groups)
    mean = grouped.mean(axis=(1, 3), keepdims=True)
    var = grouped.var(axis=(1, 3), keepdims=True)
    out = ((grouped - mean) / np.sqrt(var + epsilon)).reshape(shape)
    return np.moveaxis(out, -1, axis) * gamma + beta


@pytest.mark.parametrize("groups,axis,shape", [(2, -1, (2, 3, 4, 6)), (-1, -1, (2, 5, 3)), (3, 1, (2, 6, 4)),
                                               (1, -1, (3, 4))])
def test_group_normalization_matches_grouped_statistics(float64, groups, axis, shape):
    layer = layers.GroupNormalization(groups=groups, axis=axis, epsilon=1e-3, name="gn")
    x = 2.0 + 3.0 * RNG.standard_normal(shape)
    layer.build(shape)
    channels = shape[axis]
    layer.set_weights([RNG.standard_normal(channels), RNG.standard_normal(channels)])
    assert [w.path for w in layer.weights] == ["gn/gamma", "gn/beta"]
    gamma, beta = layer.get_weights()
    bshape = [1] * len(shape)
    bshape[axis] = channels
    expected = _group_norm_reference(x, layer.groups, gamma.reshape(bshape), beta.reshape(bshape), 1e-3, axis)
    np.testing.assert_allclose(layer(x), expected, rtol=1e-10, atol=1e-12)
    check_gradients(lambda xs: layer(xs[0]), [x[:1].reshape((1,) + shape[1:])])
    check_variable_gradients(lambda: layer(x), layer.trainable_weights)


def test_group_normalization_config_and_errors():
    layer = layers.GroupNormalization(groups=4, center=False)
    assert layers.GroupNormalization.from_config(layer.get_config()).get_config() == layer.get_config()
    layer.build((None, 8))
    assert [w.name for w in layer.weights] == ["gamma"]
    assert layers.GroupNormalization(-1)(kgraph.Input((None, 3))).shape == (None, None, 3)
    with pytest.raises(ValueError, match="expected a positive integer \\(or `-1` for instance normalization\\)"):
        layers.GroupNormalization(groups=0)
    with pytest.raises(ValueError, match=r"Number of groups \(8\) cannot be more than the number of channels \(4\)"):
        layers.GroupNormalization(groups=8)(kgraph.Input((4,)))
    with pytest.raises(ValueError, match=r"number of channels \(6\) must be a multiple of the number of groups \(4\)"):
        layers.GroupNormalization(groups=4)(kgraph.Input((6,)))


@pytest.mark.parametrize("axis", [-1, [1, 2], 1])
def test_rms_and_unit_normalization(float64, axis):
    x = RNG.standard_normal((2, 3, 4))
    axes = tuple(axis) if isinstance(axis, list) else (axis,)
    rms = layers.RMSNormalization(axis=axis, epsilon=1e-6, name="rms")
    rms.build(x.shape)
    assert [w.path for w in rms.weights] == ["rms/scale"]
    rms.set_weights([RNG.standard_normal(rms.scale.shape)])
    scale_shape = [1, 1, 1]
    for a in axes:
        scale_shape[a] = x.shape[a]
    expected = x / np.sqrt(np.mean(x ** 2, axis=axes, keepdims=True) + 1e-6) * rms.get_weights()[0].reshape(
        scale_shape)
    np.testing.assert_allclose(rms(x), expected, rtol=1e-12)
    unit = layers.UnitNormalization(axis=axis)
    np.testing.assert_allclose(unit(x), x / np.sqrt(np.sum(x ** 2, axis=axes, keepdims=True)), rtol=1e-12)
    zeros = np.zeros((1, 3, 4))
    np.testing.assert_array_equal(unit(zeros), 0.0)
    with kgraph.GradientTape() as tape:
        tape.watch(zeros)
        out = unit(zeros)
    assert np.all(np.isfinite(tape.gradient(out, zeros)))
    for layer in (rms, unit):
        check_gradients(lambda xs, layer=layer: layer(xs[0]), [x[:1]])
        assert type(layer).from_config(layer.get_config()).get_config() == layer.get_config()
    check_variable_gradients(lambda: rms(x), rms.trainable_weights)
    with pytest.raises(ValueError, match="Axis 3 is out of bounds"):
        layers.UnitNormalization(axis=3)(kgraph.Input((3, 4)))
    with pytest.raises(TypeError, match="Invalid value for `axis` argument"):
        layers.UnitNormalization(axis="last")


def test_keras_aliases_are_the_same_classes():
    assert layers.MaxPool2D is layers.MaxPooling2D and layers.AvgPool1D is layers.AveragePooling1D
    assert layers.GlobalAvgPool2D is layers.GlobalAveragePooling2D
    assert layers.GlobalMaxPool1D is layers.GlobalMaxPooling1D
    assert layers.Convolution2D is layers.Conv2D and layers.Convolution2DTranspose is layers.Conv2DTranspose
    assert layers.SeparableConvolution2D is layers.SeparableConv2D
    a, b = np.array([[1.0, 5.0]]), np.array([[3.0, 2.0]])
    for fn, expected in ((layers.average, [[2.0, 3.5]]), (layers.maximum, [[3.0, 5.0]]), (layers.minimum, [[1.0, 2.0]]),
                         (layers.multiply, [[3.0, 10.0]]), (layers.subtract, [[-2.0, 3.0]])):
        np.testing.assert_array_equal(fn([a, b]), expected)
    assert type(layers.subtract([kgraph.Input((2,)), kgraph.Input((2,))])._keras_history.layer) is layers.Subtract


def _every_new_layer_model():
    x = kgraph.Input((4, 6), name="x")
    h = layers.ReLU(max_value=4.0, negative_slope=0.1, threshold=0.2)(layers.Dense(6)(x))
    h = layers.PReLU(shared_axes=[1])(layers.LeakyReLU(0.2)(h))
    h = layers.GroupNormalization(groups=3)(layers.ELU(0.5)(h))
    h = layers.RMSNormalization()(layers.UnitNormalization()(h))
    h = layers.EinsumDense("abc,cd->abd", (4, 5), bias_axes="d")(h)
    h = layers.AlphaDropout(0.1)(layers.GaussianDropout(0.1)(layers.GaussianNoise(0.1)(h)))
    h = layers.Softmax(axis=[1, 2])(layers.ActivityRegularization(l2=0.01)(h))
    y = layers.Dot(axes=(1, 1), normalize=True)([h, layers.Dense(5)(x)])
    return kgraph.Model(x, y)


def test_every_new_layer_trains_saves_and_loads(tmp_path):
    model = _every_new_layer_model()
    x = RNG.standard_normal((8, 4, 6)).astype("float32")
    y = RNG.standard_normal((8, 5, 5)).astype("float32")
    model.compile(optimizer="adam", loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    model.fit(x, y, epochs=1, batch_size=4, verbose=0)
    assert all(not np.array_equal(a, w.numpy()) for a, w in zip(before, model.trainable_weights))
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "model.pkl")
    loaded = kgraph.load_model(tmp_path / "model.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)
    rebuilt = kgraph.Model.from_config(model.get_config())
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_array_equal(rebuilt.predict(x, verbose=0), expected)
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in model.layers]


@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,kwargs,shape", [
    ("EinsumDense", {"equation": "abc,cde->abde", "output_shape": (4, 2, 3), "bias_axes": "de"}, (2, 4, 6)),
    ("EinsumDense", {"equation": "...b,bc->...c", "output_shape": 5, "bias_axes": "c", "activation": "relu"},
     (2, 4, 6)),
    ("GroupNormalization", {"groups": 3}, (2, 4, 6)), ("GroupNormalization", {"groups": -1, "axis": 1}, (2, 4, 6)),
    ("RMSNormalization", {"axis": -1}, (2, 4, 6)), ("UnitNormalization", {"axis": [1, 2]}, (2, 4, 6)),
    ("Dot", {"axes": (2, 2), "normalize": True}, [(2, 4, 6), (2, 3, 6)]), ("Dot", {"axes": 1}, [(2, 6), (2, 6)])])
def test_keras_parity_on_copied_weights(keras, name, kwargs, shape):
    inputs = [RNG.standard_normal(s).astype("float32") for s in shape] if isinstance(shape, list) else \
        RNG.standard_normal(shape).astype("float32")
    reference = getattr(keras.layers, name)(**kwargs)
    reference(inputs)
    reference.set_weights([RNG.standard_normal(w.shape).astype("float32") for w in reference.get_weights()])
    layer = getattr(layers, name)(**kwargs)
    layer(inputs)
    assert [w.shape for w in layer.weights] == [tuple(w.shape) for w in reference.weights]
    layer.set_weights(reference.get_weights())
    np.testing.assert_allclose(layer(inputs), keras.ops.convert_to_numpy(reference(inputs)), rtol=1e-5, atol=1e-5)


def test_masks_pass_through_elementwise_layers_and_stop_at_dot():
    tokens = kgraph.Input((5,), dtype="int32")
    h = layers.Embedding(10, 4, mask_zero=True)(tokens)
    for layer in (layers.ReLU(), layers.PReLU(), layers.GroupNormalization(2), layers.UnitNormalization(),
                  layers.GaussianNoise(0.1), layers.ActivityRegularization(0.1)):
        h = layer(h)
        assert h._keras_mask is not None, type(layer).__name__
    assert layers.Dot(axes=(2, 2))([h, h])._keras_mask is None
