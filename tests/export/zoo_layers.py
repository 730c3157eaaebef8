"""Zoo models of the layer library: each convolution, pooling, normalization, embedding and shape layer, alone
and inside small real architectures (a digits CNN, a depthwise-separable block, a 1-D text classifier)."""
import numpy as np

import kgraph
from kgraph import layers as L
from tests.export.zoo import perturb, register_zoo_model, train_briefly


def _model(shape, build, name, dtype=None):
    x = kgraph.Input(shape=shape, name="x", dtype=dtype)
    outputs = build(x)
    return train_briefly(kgraph.Model(x, outputs, name=name))


@register_zoo_model("digits_cnn")
def digits_cnn():
    """Conv2D-BN-ReLU-MaxPool twice, Flatten, Dense softmax on 28x28x1 digits."""
    x = kgraph.Input(shape=(28, 28, 1), name="image")
    h = x
    for filters in (16, 32):
        h = L.Conv2D(filters, 3, padding="same", use_bias=False)(h)
        h = L.BatchNormalization()(h)
        h = L.Activation("relu")(h)
        h = L.MaxPooling2D()(h)
    h = L.Flatten()(h)
    y = L.Dense(10, activation="softmax")(h)
    return train_briefly(kgraph.Model(x, y, name="digits_cnn"))


@register_zoo_model("benchmark_cnn")
def benchmark_cnn():
    """The training benchmark's CNN: Conv2D(32)-MaxPool, Conv2D(64)-MaxPool (relu, run fused natively), Dense."""
    x = kgraph.Input(shape=(28, 28, 1), name="image")
    h = L.MaxPooling2D()(L.Conv2D(32, 3, activation="relu")(x))
    h = L.MaxPooling2D()(L.Conv2D(64, 3, activation="relu")(h))
    h = L.Dense(128, activation="relu")(L.Flatten()(h))
    y = L.Dense(10, activation="softmax")(h)
    return train_briefly(kgraph.Model(x, y, name="benchmark_cnn"))


@register_zoo_model("separable_block")
def separable_block():
    """A MobileNet-style block: strided Conv, DepthwiseConv-BN-ReLU6, SeparableConv, residual Add, global pool."""
    x = kgraph.Input(shape=(15, 15, 3), name="image")
    h = L.Conv2D(8, 3, strides=2, padding="same", activation="relu")(x)
    d = L.DepthwiseConv2D(3, padding="same", use_bias=False)(h)
    d = L.BatchNormalization()(d)
    d = L.Activation("relu6")(d)
    d = L.SeparableConv2D(8, 3, padding="same", depth_multiplier=2)(d)
    h = L.Add()([h, d])
    y = L.Dense(4)(L.GlobalAveragePooling2D()(h))
    return train_briefly(kgraph.Model(x, y, name="separable_block"))


@register_zoo_model("text_cnn")
def text_cnn():
    """Embedding, Conv1D (same and causal), MaxPooling1D, GlobalMaxPooling1D and a sigmoid head."""
    x = kgraph.Input(shape=(20,), name="tokens", dtype="int32")
    h = L.Embedding(50, 8)(x)
    h = L.Conv1D(12, 5, padding="same", activation="relu")(h)
    h = L.MaxPooling1D(2)(h)
    h = L.Conv1D(12, 3, padding="causal", dilation_rate=2, activation="relu")(h)
    h = L.SpatialDropout1D(0.2)(h)
    y = L.Dense(1, activation="sigmoid")(L.GlobalMaxPooling1D()(h))
    return train_briefly(kgraph.Model(x, y, name="text_cnn"))


@register_zoo_model("conv2d_variants")
def conv2d_variants():
    """Conv2D with asymmetric "same" padding at stride 2 and 3, dilation, groups, no bias, valid padding."""
    def build(x):
        return [L.Conv2D(4, 3, strides=2, padding="same")(x),
                L.Conv2D(4, (4, 2), strides=(3, 2), padding="same", activation="tanh")(x),
                L.Conv2D(6, 3, dilation_rate=2, padding="same", groups=3)(x),
                L.Conv2D(3, (2, 3), use_bias=False)(x)]
    return _model((9, 8, 6), build, "conv2d_variants")


@register_zoo_model("conv1d_variants")
def conv1d_variants():
    """Conv1D valid, strided same, causal dilated, grouped."""
    def build(x):
        return [L.Conv1D(5, 3)(x), L.Conv1D(5, 4, strides=3, padding="same")(x),
                L.Conv1D(4, 3, padding="causal", dilation_rate=3)(x), L.Conv1D(4, 2, groups=2)(x)]
    return _model((13, 4), build, "conv1d_variants")


@register_zoo_model("conv2d_transpose")
def conv2d_transpose():
    """Conv2DTranspose valid and same, strides 2 and 3, output_padding, dilation, odd and even kernels."""
    def build(x):
        return [L.Conv2DTranspose(3, 3, strides=2)(x),
                L.Conv2DTranspose(3, 4, strides=2, padding="same", activation="relu")(x),
                L.Conv2DTranspose(2, 3, strides=3, padding="same", output_padding=1)(x),
                L.Conv2DTranspose(2, 2, strides=3)(x),
                L.Conv2DTranspose(2, 3, padding="valid", output_padding=(0, 0), dilation_rate=2, use_bias=False)(x)]
    return _model((4, 5, 3), build, "conv2d_transpose")


@register_zoo_model("depthwise_separable")
def depthwise_separable():
    """DepthwiseConv2D (multiplier 2, strided same) and SeparableConv2D (valid, no bias) alone."""
    def build(x):
        return [L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2)(x),
                L.SeparableConv2D(5, (3, 2), use_bias=False)(x)]
    return _model((7, 8, 3), build, "depthwise_separable")


@register_zoo_model("pooling")
def pooling():
    """Max and average pooling, valid and "same" (average over real cells), overlapping windows, global pools."""
    def build(x):
        return [L.MaxPooling2D()(x), L.MaxPooling2D(3, strides=2, padding="same")(x),
                L.AveragePooling2D((2, 3), padding="same")(x), L.AveragePooling2D(3, strides=1)(x),
                L.GlobalAveragePooling2D()(x), L.GlobalMaxPooling2D(keepdims=True)(x)]
    return _model((7, 9, 3), build, "pooling")


@register_zoo_model("pooling_1d")
def pooling_1d():
    """The 1-D poolings."""
    def build(x):
        return [L.MaxPooling1D(3, strides=2, padding="same")(x), L.AveragePooling1D(2, padding="same")(x),
                L.AveragePooling1D(3)(x), L.GlobalAveragePooling1D(keepdims=True)(x), L.GlobalMaxPooling1D()(x)]
    return _model((11, 4), build, "pooling_1d")


@register_zoo_model("batch_normalization")
def batch_normalization():
    """BatchNormalization on 2-D, 3-D and 4-D inputs, on a non-last axis, without scale or center."""
    def build(x):
        h = L.Dense(6)(x)
        flat = L.Flatten()(x)
        return [L.BatchNormalization()(h), L.BatchNormalization(axis=1, epsilon=1e-2)(h),
                L.BatchNormalization(center=False, scale=False)(flat),
                L.BatchNormalization(momentum=0.5)(L.Reshape((2, 2, 6))(h))]
    return _model((4, 5), build, "batch_normalization")


@register_zoo_model("cnn_flatten_batchnorm")
def cnn_flatten_batchnorm():
    """Flatten of channels-first conv output feeding BatchNormalization and LayerNormalization (FeatureOrder)."""
    x = kgraph.Input(shape=(6, 6, 2), name="image")
    flat = L.Flatten()(L.Conv2D(3, 3)(x))
    y = L.Dense(2)(L.LayerNormalization()(L.BatchNormalization()(flat)))
    return train_briefly(kgraph.Model(x, y, name="cnn_flatten_batchnorm"))


@register_zoo_model("layer_normalization")
def layer_normalization():
    """LayerNormalization over the last axis, two trailing axes, a non-trailing axis, without scale/center."""
    def build(x):
        return [L.LayerNormalization()(x), L.LayerNormalization(axis=[-2, -1], epsilon=1e-5)(x),
                L.LayerNormalization(axis=1, center=False)(x), L.LayerNormalization(axis=[1, -1], scale=False)(x)]
    return _model((5, 4, 3), build, "layer_normalization")


@register_zoo_model("conv_layer_normalization")
def conv_layer_normalization():
    """LayerNormalization of channels-first conv output over the channels and over non-trailing axes."""
    x = kgraph.Input(shape=(5, 5, 2), name="image")
    h = L.Conv2D(4, 3, padding="same")(x)
    return train_briefly(kgraph.Model(x, [L.LayerNormalization()(h), L.LayerNormalization(axis=[1, 2])(h)],
                                      name="conv_layer_normalization"))


@register_zoo_model("embedding_float_indices", benchmark=False,
                    sampler=lambda name, shape, dtype, rng: rng.integers(0, 30, size=shape).astype(dtype))
def embedding_float_indices():
    """Embedding fed float indices (cast to int64 for Gather) on a 2-D index input."""
    x = kgraph.Input(shape=(3, 4), name="ids")
    model = perturb(kgraph.Model(x, L.Embedding(30, 5)(x), name="embedding_float_indices"))
    rng = np.random.default_rng(0)
    model.compile(optimizer="adam", loss="mse")
    model.fit(rng.integers(0, 30, (16, 3, 4)).astype("float32"), rng.standard_normal((16, 3, 4, 5)),
              batch_size=8, verbose=0)
    return model


@register_zoo_model("spatial_shapes")
def spatial_shapes():
    """UpSampling, ZeroPadding and Cropping inside a conv stack (channels-first) and on native data."""
    x = kgraph.Input(shape=(6, 5, 2), name="image")
    h = L.Conv2D(3, 3, padding="same")(x)
    up = L.UpSampling2D((2, 3))(h)
    padded = L.ZeroPadding2D(((1, 0), (2, 1)))(up)
    cropped = L.Cropping2D(((1, 2), (0, 3)))(padded)
    pooled = L.MaxPooling2D()(L.Conv2D(2, 3)(cropped))
    outs = [pooled, L.ZeroPadding2D(1)(x), L.Cropping2D(1)(x), L.UpSampling2D()(x),
            L.SpatialDropout2D(0.3)(h), L.Permute((3, 1, 2))(h)]
    return train_briefly(kgraph.Model(x, outs, name="spatial_shapes"))


@register_zoo_model("sequence_shapes")
def sequence_shapes():
    """UpSampling1D, ZeroPadding1D, Cropping1D, Permute, RepeatVector on sequences."""
    def build(x):
        seq = L.Conv1D(3, 2, padding="same")(x)
        vec = L.Dense(4)(L.Flatten()(x))
        return [L.UpSampling1D(3)(seq), L.ZeroPadding1D((2, 1))(seq), L.Cropping1D((1, 2))(seq),
                L.Permute((2, 1))(x), L.RepeatVector(3)(vec)]
    return _model((6, 2), build, "sequence_shapes")


@register_zoo_model("rescaling", benchmark=False,
                    sampler=lambda name, shape, dtype, rng: rng.integers(0, 256, size=shape).astype(dtype))
def rescaling():
    """Rescaling of uint8 pixels (scalar scale) and of features (per-channel scale and offset)."""
    x = kgraph.Input(shape=(4, 4, 3), name="pixels", dtype="uint8")
    h = L.Rescaling(1.0 / 255)(x)
    y = L.Rescaling(np.array([1.0, 2.0, 0.5]), offset=np.array([0.0, -1.0, 1.0]))(L.Conv2D(3, 1)(h))
    model = perturb(kgraph.Model(x, [h, y], name="rescaling"))
    return model
