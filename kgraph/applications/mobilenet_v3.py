"""MobileNetV3Small and MobileNetV3Large (Howard et al., ICCV 2019), as ``keras.applications`` builds them.

The models rescale their inputs themselves (``include_preprocessing``), so ``preprocess_input`` returns its input.
"""
from __future__ import annotations

import warnings

from kgraph.applications import imagenet_utils
from kgraph.backend import image_data_format, is_keras_tensor
from kgraph.layers import (
    Activation,
    Add,
    BatchNormalization,
    Conv2D,
    DepthwiseConv2D,
    Dropout,
    Flatten,
    GlobalAveragePooling2D,
    Multiply,
    ReLU,
    Rescaling,
    ZeroPadding2D,
)
from kgraph.models import Functional

BASE_WEIGHT_PATH = imagenet_utils.KERAS_APPLICATIONS + "mobilenet_v3/"
WEIGHTS_HASHES = {  # model name: (top file's hash, no-top file's hash)
    "large_224_0.75_float": ("765b44a33ad4005b3ac83185abf1d0eb", "40af19a13ebea4e2ee0c676887f69a2e"),
    "large_224_1.0_float": ("59e551e166be033d707958cf9e29a6a7", "07fb09a5933dd0c8eaafa16978110389"),
    "large_minimalistic_224_1.0_float": ("675e7b876c45c57e9e63e6d90a36599c", "ec5221f64a2f6d1ef965a614bdae7973"),
    "small_224_0.75_float": ("cb65d4e5be93758266aa0a7f2c6708b7", "ebdb5cc8e0b497cd13a7c275d475c819"),
    "small_224_1.0_float": ("8768d4c2e7dee89b9d02b2d03d65d862", "d3e8ec802a04aa4fc771ee12a9a9b836"),
    "small_minimalistic_224_1.0_float": ("99cd97fb2fcdad2bf028eb838de69e37", "cde8136e733e811080d9fcd8a252f7e4"),
}
# Inverted residual blocks: (expansion, filters, kernel ("k": the model's), stride, squeeze-excite, activation
# ("act": the model's)).
SMALL = ((1, 16, 3, 2, True, "relu"), (72.0 / 16, 24, 3, 2, False, "relu"), (88.0 / 24, 24, 3, 1, False, "relu"),
         (4, 40, "k", 2, True, "act"), (6, 40, "k", 1, True, "act"), (6, 40, "k", 1, True, "act"),
         (3, 48, "k", 1, True, "act"), (3, 48, "k", 1, True, "act"), (6, 96, "k", 2, True, "act"),
         (6, 96, "k", 1, True, "act"), (6, 96, "k", 1, True, "act"))
LARGE = ((1, 16, 3, 1, False, "relu"), (4, 24, 3, 2, False, "relu"), (3, 24, 3, 1, False, "relu"),
         (3, 40, "k", 2, True, "relu"), (3, 40, "k", 1, True, "relu"), (3, 40, "k", 1, True, "relu"),
         (6, 80, 3, 2, False, "act"), (2.5, 80, 3, 1, False, "act"), (2.3, 80, 3, 1, False, "act"),
         (2.3, 80, 3, 1, False, "act"), (6, 112, 3, 1, True, "act"), (6, 112, 3, 1, True, "act"),
         (6, 160, "k", 2, True, "act"), (6, 160, "k", 1, True, "act"), (6, 160, "k", 1, True, "act"))


def _depth(v, divisor=8, min_value=None):
    """``v`` rounded to a multiple of ``divisor`` (at least ``min_value``), never more than 10% below ``v``."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def _relu(x):
    return ReLU()(x)


def _hard_swish(x):
    return Activation("hard_swish")(x)


def _hard_sigmoid(x):
    return ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def _channel_axis():
    return 1 if image_data_format() == "channels_first" else -1


def _batch_norm(x, name):
    return BatchNormalization(axis=_channel_axis(), epsilon=1e-3, momentum=0.999, name=name)(x)


def _se_block(inputs, filters, se_ratio, prefix):
    x = GlobalAveragePooling2D(keepdims=True, name=f"{prefix}squeeze_excite_avg_pool")(inputs)
    x = Conv2D(_depth(filters * se_ratio), kernel_size=1, padding="same", name=f"{prefix}squeeze_excite_conv")(x)
    x = ReLU(name=f"{prefix}squeeze_excite_relu")(x)
    x = Conv2D(filters, kernel_size=1, padding="same", name=f"{prefix}squeeze_excite_conv_1")(x)
    x = _hard_sigmoid(x)
    return Multiply(name=f"{prefix}squeeze_excite_mul")([inputs, x])


def _inverted_res_block(x, expansion, filters, kernel_size, stride, se_ratio, activation, block_id):
    shortcut = x
    infilters = x.shape[_channel_axis()]
    prefix = "expanded_conv_"
    if block_id:
        prefix = f"expanded_conv_{block_id}_"
        x = Conv2D(_depth(infilters * expansion), kernel_size=1, padding="same", use_bias=False,
                   name=f"{prefix}expand")(x)
        x = activation(_batch_norm(x, f"{prefix}expand_bn"))
    if stride == 2:
        x = ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size), name=f"{prefix}depthwise_pad")(x)
    x = DepthwiseConv2D(kernel_size, strides=stride, padding="same" if stride == 1 else "valid", use_bias=False,
                        name=f"{prefix}depthwise")(x)
    x = activation(_batch_norm(x, f"{prefix}depthwise_bn"))
    if se_ratio:
        x = _se_block(x, _depth(infilters * expansion), se_ratio, prefix)
    x = Conv2D(filters, kernel_size=1, padding="same", use_bias=False, name=f"{prefix}project")(x)
    x = _batch_norm(x, f"{prefix}project_bn")
    if stride == 1 and infilters == filters:
        x = Add(name=f"{prefix}add")([shortcut, x])
    return x


def _input_shape(input_shape, input_tensor):
    """The image input's shape, checked against ``input_tensor``; Keras's rules, its (cols, rows) order included."""
    if input_tensor is not None and not is_keras_tensor(input_tensor):
        raise ValueError(f"input_tensor specified: {input_tensor!r} is not a keras tensor")
    channels_first = image_data_format() == "channels_first"
    if input_shape is not None and input_tensor is not None:
        axis = 1 if channels_first else 2
        if input_tensor.shape[axis] != input_shape[1]:
            raise ValueError(f"input_shape[1] must equal input_tensor.shape[{axis}].  Received "
                             f"input_shape={input_shape}, input_tensor.shape={input_tensor.shape}")
    if input_shape is None and input_tensor is not None:
        rows, cols = input_tensor.shape[2:4] if channels_first else input_tensor.shape[1:3]
        input_shape = (3, cols, rows) if channels_first else (cols, rows, 3)
    if input_shape is None:
        input_shape = (3, None, None) if channels_first else (None, None, 3)
    rows, cols = (input_shape[1], input_shape[2]) if channels_first else (input_shape[0], input_shape[1])
    if rows and cols and (rows < 32 or cols < 32):
        raise ValueError(f"Input size must be at least 32x32; Received `input_shape={input_shape}`")
    return input_shape, rows, cols


def _check_imagenet(alpha, minimalistic, rows, cols):
    if (not minimalistic and alpha not in [0.75, 1.0]) or (minimalistic and alpha != 1.0):
        raise ValueError("If imagenet weights are being loaded, alpha can be one of `0.75`, `1.0` for non "
                         "minimalistic or `1.0` for minimalistic only.")
    if rows != cols or rows != 224:
        warnings.warn("`input_shape` is undefined or non-square, or `rows` is not 224. Weights for input shape "
                      "(224, 224) will be loaded as the default.", stacklevel=4)


def _classifier(x, last_point_ch, activation, dropout_rate, classes, classifier_activation, weights):
    x = GlobalAveragePooling2D(keepdims=True)(x)
    x = activation(Conv2D(last_point_ch, kernel_size=1, padding="same", use_bias=True, name="conv_2")(x))
    if dropout_rate > 0:
        x = Dropout(dropout_rate)(x)
    x = Flatten()(Conv2D(classes, kernel_size=1, padding="same", name="logits")(x))
    imagenet_utils.validate_activation(classifier_activation, weights)
    return Activation(activation=classifier_activation, name="predictions")(x)


def MobileNetV3(blocks, last_point_ch, input_shape=None, alpha=1.0, model_type="large", minimalistic=False,
                include_top=True, weights="imagenet", input_tensor=None, classes=1000, pooling=None,
                dropout_rate=0.2, classifier_activation="softmax", include_preprocessing=True, name=None):
    """A MobileNetV3 of the inverted residual ``blocks`` (``SMALL`` or ``LARGE``)."""
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape, rows, cols = _input_shape(input_shape, input_tensor)
    if weights == "imagenet":
        _check_imagenet(alpha, minimalistic, rows, cols)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    kernel, activation, se_ratio = (3, _relu, None) if minimalistic else (5, _hard_swish, 0.25)
    x = Rescaling(scale=1.0 / 127.5, offset=-1.0)(img_input) if include_preprocessing else img_input
    x = Conv2D(16, kernel_size=3, strides=(2, 2), padding="same", use_bias=False, name="conv")(x)
    x = activation(_batch_norm(x, "conv_bn"))
    for block_id, (expansion, filters, size, stride, se, act) in enumerate(blocks):
        x = _inverted_res_block(x, expansion, _depth(filters * alpha), kernel if size == "k" else size, stride,
                                se_ratio if se else None, _relu if act == "relu" else activation, block_id)
    last_conv_ch = _depth(x.shape[_channel_axis()] * 6)
    if alpha > 1.0:
        last_point_ch = _depth(last_point_ch * alpha)
    x = Conv2D(last_conv_ch, kernel_size=1, padding="same", use_bias=False, name="conv_1")(x)
    x = activation(_batch_norm(x, "conv_1_bn"))
    if include_top:
        x = _classifier(x, last_point_ch, activation, dropout_rate, classes, classifier_activation, weights)
    else:
        x = imagenet_utils.pool(x, pooling, avg_name="avg_pool", max_name="max_pool")
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    file_name = file_hash = None
    if weights == "imagenet":
        model_name = f"{model_type}{'_minimalistic' if minimalistic else ''}_224_{alpha}_float"
        file_name = f"weights_mobilenet_v3_{model_name}{'' if include_top else '_no_top_v2'}.h5"
        file_hash = WEIGHTS_HASHES[model_name][0 if include_top else 1]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=BASE_WEIGHT_PATH + (file_name or ""))


def MobileNetV3Small(input_shape=None, alpha=1.0, minimalistic=False, include_top=True, weights="imagenet",
                     input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2,
                     classifier_activation="softmax", include_preprocessing=True, name="MobileNetV3Small"):
    """MobileNetV3Small (inputs in [0, 255], rescaled inside unless ``include_preprocessing`` is False).

    ``alpha``: the width multiplier (ImageNet weights: 0.75 or 1.0; 1.0 when ``minimalistic``);
    ``minimalistic``: no squeeze-excite, hard-swish or 5x5 kernels; ``dropout_rate``: before the logits. Other
    arguments as ``resnet.ResNet50``'s.
    """
    return MobileNetV3(SMALL, 1024, input_shape, alpha, "small", minimalistic, include_top, weights, input_tensor,
                       classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name=name)


def MobileNetV3Large(input_shape=None, alpha=1.0, minimalistic=False, include_top=True, weights="imagenet",
                     input_tensor=None, classes=1000, pooling=None, dropout_rate=0.2,
                     classifier_activation="softmax", include_preprocessing=True, name="MobileNetV3Large"):
    """MobileNetV3Large; arguments as ``MobileNetV3Small``'s."""
    return MobileNetV3(LARGE, 1280, input_shape, alpha, "large", minimalistic, include_top, weights, input_tensor,
                       classes, pooling, dropout_rate, classifier_activation, include_preprocessing, name=name)


def preprocess_input(x, data_format=None):
    """The input unchanged: MobileNetV3 models rescale their inputs themselves (kept for API consistency)."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction row (see ``imagenet_utils.decode_predictions``)."""
    return imagenet_utils.decode_predictions(preds, top=top)
