"""``keras.applications.convnext``: ConvNeXt Tiny..XLarge (Liu et al., CVPR 2022), Keras's layers and weights.

The models take pixels in [0, 255] and normalize them themselves (``include_preprocessing=True``).
"""
import numpy as np

from kgraph import backend, layers, ops, random
from kgraph.applications import imagenet_utils
from kgraph.layers.layer import Layer
from kgraph.models import Functional, Sequential

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/convnext/"
WEIGHTS_HASHES = {  # variant: (with top, without top), SHA-256
    "convnext_tiny": ("8ae6e78ce2933352b1ef4008e6dd2f17bc40771563877d156bc6426c7cf503ff",
                      "d547c096cabd03329d7be5562c5e14798aa39ed24b474157cef5e85ab9e49ef1"),
    "convnext_small": ("ce1277d8f1ee5a0ef0e171469089c18f5233860ceaf9b168049cb9263fd7483c",
                       "6fc8009faa2f00c1c1dfce59feea9b0745eb260a7dd11bee65c8e20843da6eab"),
    "convnext_base": ("52cbb006d3dadd03f6e095a8ca1aca47aecdd75acb4bc74bce1f5c695d0086e6",
                      "40a20c5548a5e9202f69735ecc06c990e6b7c9d2de39f0361e27baeb24cb7c45"),
    "convnext_large": ("070c5ed9ed289581e477741d3b34beffa920db8cf590899d6d2c67fba2a198a6",
                       "96f02b6f0753d4f543261bc9d09bed650f24dd6bc02ddde3066135b63d23a1cd"),
    "convnext_xlarge": ("c1f5ccab661354fc3a79a10fa99af82f0fbf10ec65cb894a3ae0815f17a889ee",
                        "de3f8a54174130e0cecdc71583354753d557fcf1f4487331558e2a16ba0cfe05"),
}
MODEL_CONFIGS = {
    "tiny": {"depths": [3, 3, 9, 3], "projection_dims": [96, 192, 384, 768], "default_size": 224},
    "small": {"depths": [3, 3, 27, 3], "projection_dims": [96, 192, 384, 768], "default_size": 224},
    "base": {"depths": [3, 3, 27, 3], "projection_dims": [128, 256, 512, 1024], "default_size": 224},
    "large": {"depths": [3, 3, 27, 3], "projection_dims": [192, 384, 768, 1536], "default_size": 224},
    "xlarge": {"depths": [3, 3, 27, 3], "projection_dims": [256, 512, 1024, 2048], "default_size": 224},
}


class StochasticDepth(Layer):
    """In training, drops each sample's residual branch with probability ``drop_path_rate`` (and rescales the
    kept ones); the identity at inference."""

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate

    def call(self, x, training=None):
        if not training:
            return x
        keep_prob = 1 - self.drop_path_rate
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        mask = ops.floor(keep_prob + random.uniform(shape, 0, 1, dtype=x.dtype))
        return ops.multiply(ops.divide(x, keep_prob), mask)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"drop_path_rate": self.drop_path_rate})
        return config


class LayerScale(Layer):
    """Multiplies by a learned per-channel ``gamma`` (``projection_dim`` values, initially ``init_values``)."""

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, _):
        from kgraph import initializers
        self.gamma = self.add_weight(shape=(self.projection_dim,),
                                     initializer=initializers.Constant(self.init_values), trainable=True)

    def call(self, x):
        return ops.multiply(x, self.gamma)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"init_values": self.init_values, "projection_dim": self.projection_dim})
        return config


def ConvNeXtBlock(projection_dim, drop_path_rate=0.0, layer_scale_init_value=1e-6, name=None):
    """Depthwise 7x7 convolution, layer normalization, an inverted-bottleneck MLP (GELU), layer scale and the
    residual sum; returned as a function of its input tensor."""
    name = f"prestem{backend.get_uid('prestem')}" if name is None else name

    def apply(inputs):
        x = layers.Conv2D(filters=projection_dim, kernel_size=7, padding="same", groups=projection_dim,
                          name=f"{name}_depthwise_conv")(inputs)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_layernorm")(x)
        x = layers.Dense(4 * projection_dim, name=f"{name}_pointwise_conv_1")(x)
        x = layers.Activation("gelu", name=f"{name}_gelu")(x)
        x = layers.Dense(projection_dim, name=f"{name}_pointwise_conv_2")(x)
        if layer_scale_init_value is not None:
            x = LayerScale(layer_scale_init_value, projection_dim, name=f"{name}_layer_scale")(x)
        if drop_path_rate:
            layer = StochasticDepth(drop_path_rate, name=f"{name}_stochastic_depth")
        else:
            layer = layers.Activation("linear", name=f"{name}_identity")
        return inputs + layer(x)
    return apply


def PreStem(name=None):
    """Normalization by ImageNet's mean and std of pixels in [0, 255]; returned as a function of its input."""
    name = f"prestem{backend.get_uid('prestem')}" if name is None else name

    def apply(x):
        return layers.Normalization(mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                    variance=[(0.229 * 255) ** 2, (0.224 * 255) ** 2, (0.225 * 255) ** 2],
                                    name=f"{name}_prestem_normalization")(x)
    return apply


def Head(num_classes=1000, classifier_activation=None, name=None):
    """Global average pooling, layer normalization and the classifier; returned as a function of its input."""
    name = str(backend.get_uid("head")) if name is None else name

    def apply(x):
        x = layers.GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = layers.LayerNormalization(epsilon=1e-6, name=f"{name}_head_layernorm")(x)
        return layers.Dense(num_classes, activation=classifier_activation, name=f"{name}_head_dense")(x)
    return apply


def _downsampling(name, projection_dims):
    stem = Sequential([layers.Conv2D(projection_dims[0], kernel_size=4, strides=4, name=f"{name}_stem_conv"),
                       layers.LayerNormalization(epsilon=1e-6, name=f"{name}_stem_layernorm")], name=f"{name}_stem")
    blocks = [Sequential([layers.LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
                          layers.Conv2D(projection_dims[i + 1], kernel_size=2, strides=2,
                                        name=f"{name}_downsampling_conv_{i}")],
                         name=f"{name}_downsampling_block_{i}") for i in range(3)]
    return [stem] + blocks


def _check_imagenet_variant(weights_name, depths, projection_dims, name):
    if weights_name not in WEIGHTS_HASHES:
        raise ValueError(f"ImageNet weights exist for `weights_name` in {sorted(WEIGHTS_HASHES)} only. "
                         f"Received: weights_name={weights_name}")
    expected = MODEL_CONFIGS[weights_name.split("convnext_")[-1]]
    if list(depths) != expected["depths"] or list(projection_dims) != expected["projection_dims"]:
        raise ValueError(f"Architecture configuration does not match {weights_name} variant. When using pre-trained "
                         "weights, the model architecture must match the pre-trained configuration exactly. "
                         f"Expected depths: {expected['depths']}, got: {depths}. Expected projection_dims: "
                         f"{expected['projection_dims']}, got: {projection_dims}.")
    if weights_name not in name:
        raise ValueError(f'Model name "{name}" does not match weights variant "{weights_name}". When using imagenet '
                         'weights, model name must contain the weights variant (e.g., '
                         f'"convnext_{weights_name.split("convnext_")[-1]}").')


def ConvNeXt(depths, projection_dims, drop_path_rate=0.0, layer_scale_init_value=1e-6, default_size=224,
             name="convnext", include_preprocessing=True, include_top=True, weights=None, input_tensor=None,
             input_shape=None, pooling=None, classes=1000, classifier_activation="softmax", weights_name=None):
    """A ConvNeXt of four stages of ``depths`` blocks of ``projection_dims`` channels (inputs at least 32x32)."""
    if backend.image_data_format() == "channels_first":
        raise ValueError("ConvNeXt does not support the `channels_first` image data format. Switch to "
                         "`channels_last` by editing your local config file at ~/.keras/keras.json")
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    if input_tensor is not None:
        inputs, x = imagenet_utils.model_inputs(input_tensor, img_input)[0], img_input
    else:
        inputs = x = img_input
    if include_preprocessing and input_shape[2] == 3:
        x = PreStem(name=name)(x)
    drop_rates = [float(rate) for rate in np.linspace(0.0, drop_path_rate, sum(depths))]
    cur = 0
    for i, downsampling in enumerate(_downsampling(name, projection_dims)):
        x = downsampling(x)
        for j in range(depths[i]):
            x = ConvNeXtBlock(projection_dim=projection_dims[i], drop_path_rate=drop_rates[cur + j],
                              layer_scale_init_value=layer_scale_init_value, name=f"{name}_stage_{i}_block_{j}")(x)
        cur += depths[i]
    if include_top:
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Head(num_classes=classes, classifier_activation=classifier_activation, name=name)(x)
    else:
        x = layers.LayerNormalization(epsilon=1e-6)(imagenet_utils.pool(x, pooling))
    model = Functional(inputs=inputs, outputs=x, name=name)
    if weights != "imagenet":
        return imagenet_utils.load_weights(model, weights)
    _check_imagenet_variant(weights_name, depths, projection_dims, name)
    file_name = name + (".h5" if include_top else "_notop.h5")
    file_hash = WEIGHTS_HASHES[weights_name][0 if include_top else 1]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=BASE_WEIGHTS_PATH + file_name)


def _variant(size):
    config = MODEL_CONFIGS[size]

    def builder(include_top=True, include_preprocessing=True, weights="imagenet", input_tensor=None, input_shape=None,
                pooling=None, classes=1000, classifier_activation="softmax", name=f"convnext_{size}"):
        return ConvNeXt(weights_name=f"convnext_{size}", depths=config["depths"],
                        projection_dims=config["projection_dims"], drop_path_rate=0.0, layer_scale_init_value=1e-6,
                        default_size=config["default_size"], name=name, include_top=include_top,
                        include_preprocessing=include_preprocessing, weights=weights, input_tensor=input_tensor,
                        input_shape=input_shape, pooling=pooling, classes=classes,
                        classifier_activation=classifier_activation)
    label = "XLarge" if size == "xlarge" else size.capitalize()
    builder.__name__ = builder.__qualname__ = f"ConvNeXt{label}"
    builder.__doc__ = (f"Instantiate ConvNeXt-{label} (default input 224x224, at least 32x32; pixels in [0, 255]); "
                       f"arguments as ``keras.applications.ConvNeXt{label}``.")
    return builder


ConvNeXtTiny = _variant("tiny")
ConvNeXtSmall = _variant("small")
ConvNeXtBase = _variant("base")
ConvNeXtLarge = _variant("large")
ConvNeXtXLarge = _variant("xlarge")


def preprocess_input(x, data_format=None):
    """Return ``x`` unchanged, as Keras does: the ConvNeXt models normalize inside (``data_format`` is accepted for
    the common signature and not used)."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction: lists of ``(class_id, class_name, score)``."""
    return imagenet_utils.decode_predictions(preds, top=top)
