"""Zoo models of the 3D layers, the 1D transposed/depthwise/separable convolutions and adaptive pooling."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


def _model(shape, build, name):
    x = kgraph.Input(shape=shape, name="x")
    return train_briefly(kgraph.Model(x, build(x), name=name))


@register_zoo_model("volume_cnn")
def volume_cnn():
    """A small 3D CNN: Conv3D (relu, fused with MaxPooling3D natively), padding, cropping, upsampling, pools,
    spatial dropout."""
    def build(x):
        h = L.MaxPooling3D()(L.Conv3D(4, 3, padding="same", activation="relu")(x))
        h = L.Cropping3D(((1, 0), (0, 1), (1, 1)))(L.ZeroPadding3D(((1, 1), (0, 1), (2, 0)))(h))
        up = L.Conv3D(3, (1, 2, 2), strides=(1, 1, 2), padding="same", groups=1)(L.UpSampling3D((1, 2, 2))(h))
        return [L.GlobalAveragePooling3D()(h), L.GlobalMaxPooling3D(keepdims=True)(up),
                L.AveragePooling3D((2, 1, 2), strides=1, padding="same")(up), L.MaxPooling3D(3, strides=2,
                                                                                            padding="same")(x),
                L.Conv3D(4, 2, dilation_rate=(1, 2, 1), groups=2, use_bias=False, activation="tanh")(x),
                L.UpSampling3D()(x), L.ZeroPadding3D(1)(x), L.Cropping3D(1)(x), L.SpatialDropout3D(0.3)(h)]
    return _model((4, 6, 5, 2), build, "volume_cnn")


@register_zoo_model("conv_transpose_nd")
def conv_transpose_nd():
    """Conv1DTranspose and Conv3DTranspose: valid and same, strides, output_padding, dilation."""
    seq = kgraph.Input(shape=(5, 3), name="seq")
    vol = kgraph.Input(shape=(2, 3, 2, 2), name="vol")
    outputs = [L.Conv1DTranspose(2, 3, strides=2)(seq),
               L.Conv1DTranspose(3, 4, strides=3, padding="same", output_padding=1, activation="relu")(seq),
               L.Conv1DTranspose(2, 3, dilation_rate=2, padding="same", use_bias=False)(seq),
               L.Conv3DTranspose(2, 3, strides=2, padding="same")(vol),
               L.Conv3DTranspose(2, (2, 3, 2), strides=(3, 1, 2), output_padding=(1, 0, 1))(vol)]
    return train_briefly(kgraph.Model([seq, vol], outputs, name="conv_transpose_nd"))


@register_zoo_model("depthwise_separable_1d")
def depthwise_separable_1d():
    """DepthwiseConv1D and SeparableConv1D after a Conv1D (channels-first chain) and alone."""
    def build(x):
        h = L.Conv1D(4, 3, padding="same")(x)
        h = L.DepthwiseConv1D(3, depth_multiplier=2, padding="same", activation="relu")(h)
        return [L.SeparableConv1D(5, 3, strides=2, padding="same", depth_multiplier=2)(h),
                L.DepthwiseConv1D(2, strides=2, use_bias=False)(x),
                L.SeparableConv1D(3, 2, dilation_rate=2, activation="tanh", use_bias=False)(x)]
    return _model((9, 3), build, "depthwise_separable_1d")


@register_zoo_model("adaptive_pooling")
def adaptive_pooling():
    """Adaptive average and max pooling in 1D, 2D and 3D: uneven, overlapping, upsampling and uniform windows."""
    seq = kgraph.Input(shape=(7, 3), name="seq")
    image = kgraph.Input(shape=(7, 8, 2), name="image")
    vol = kgraph.Input(shape=(5, 4, 6, 2), name="vol")
    conv = L.Conv2D(3, 2, padding="same")(image)
    outputs = [L.AdaptiveAveragePooling1D(3)(seq), L.AdaptiveMaxPooling1D(9)(seq),
               L.AdaptiveAveragePooling2D((3, 4))(conv), L.AdaptiveMaxPooling2D(3)(conv),
               L.AdaptiveAveragePooling2D((7, 2))(image), L.AdaptiveMaxPooling2D((7, 4))(image),
               L.AdaptiveAveragePooling3D((2, 3, 4))(vol), L.AdaptiveMaxPooling3D((3, 2, 2))(vol)]
    return train_briefly(kgraph.Model([seq, image, vol], outputs, name="adaptive_pooling"))
