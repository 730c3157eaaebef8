"""MobileNetV2 (Sandler et al., CVPR 2018: inverted residuals), as ``keras.applications.mobilenet_v2`` builds it.

Inputs are preprocessed in "tf" mode (scaled to [-1, 1]).
"""
from __future__ import annotations

import warnings

from kgraph.applications import imagenet_utils
from kgraph.backend import image_data_format, is_keras_tensor
from kgraph.layers import (
    Add,
    BatchNormalization,
    Conv2D,
    Dense,
    DepthwiseConv2D,
    GlobalAveragePooling2D,
    ReLU,
    ZeroPadding2D,
)
from kgraph.models import Functional

BASE_WEIGHT_PATH = imagenet_utils.KERAS_APPLICATIONS + "mobilenet_v2/"
IMAGENET_SIZES = (96, 128, 160, 192, 224)
IMAGENET_ALPHAS = (0.35, 0.50, 0.75, 1.0, 1.3, 1.4)
# (filters, stride, expansion) of inverted residual blocks 0..16.
BLOCKS = ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (32, 1, 6), (64, 2, 6), (64, 1, 6),
          (64, 1, 6), (64, 1, 6), (96, 1, 6), (96, 1, 6), (96, 1, 6), (160, 2, 6), (160, 1, 6), (160, 1, 6),
          (320, 1, 6))


def _make_divisible(v, divisor, min_value=None):
    """``v`` rounded to a multiple of ``divisor`` (at least ``min_value``), never more than 10% below ``v``."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(v + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * v else rounded


def _channel_axis():
    return 1 if image_data_format() == "channels_first" else -1


def _batch_norm(x, name):
    return BatchNormalization(axis=_channel_axis(), epsilon=1e-3, momentum=0.999, name=name)(x)


def _inverted_res_block(inputs, expansion, stride, alpha, filters, block_id):
    in_channels = inputs.shape[_channel_axis()]
    pointwise_filters = _make_divisible(int(filters * alpha), 8)
    x = inputs
    prefix = f"block_{block_id}_"
    if block_id:
        x = Conv2D(expansion * in_channels, kernel_size=1, padding="same", use_bias=False, activation=None,
                   name=f"{prefix}expand")(x)
        x = _batch_norm(x, f"{prefix}expand_BN")
        x = ReLU(6.0, name=f"{prefix}expand_relu")(x)
    else:
        prefix = "expanded_conv_"
    if stride == 2:
        x = ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name=f"{prefix}pad")(x)
    x = DepthwiseConv2D(kernel_size=3, strides=stride, activation=None, use_bias=False,
                        padding="same" if stride == 1 else "valid", name=f"{prefix}depthwise")(x)
    x = _batch_norm(x, f"{prefix}depthwise_BN")
    x = ReLU(6.0, name=f"{prefix}depthwise_relu")(x)
    x = Conv2D(pointwise_filters, kernel_size=1, padding="same", use_bias=False, activation=None,
               name=f"{prefix}project")(x)
    x = _batch_norm(x, f"{prefix}project_BN")
    if in_channels == pointwise_filters and stride == 1:
        return Add(name=f"{prefix}add")([inputs, x])
    return x


def _rows_cols(shape, offset=0):
    """Rows and columns of an image shape (``offset`` 1 for a shape with its batch axis)."""
    first = offset + (1 if image_data_format() == "channels_first" else 0)
    return shape[first], shape[first + 1]


def _default_size(input_shape, input_tensor):
    """224, or the input's size when it is square and one of the ImageNet sizes; ``input_tensor`` checked."""
    if input_tensor is not None and not is_keras_tensor(input_tensor):
        raise ValueError(f"input_tensor is not a Keras tensor; Received `input_tensor={input_tensor}`")
    if input_shape is not None and input_tensor is not None:
        axis, what = (1, "input_shape[1] must equal shape(input_tensor)[1] when `image_data_format` is "
                      "`channels_first`") if image_data_format() == "channels_first" else \
            (2, "input_tensor.shape[2] must equal input_shape[1]")
        if input_tensor.shape[axis] != input_shape[1]:
            raise ValueError(f"{what}; Received `input_tensor.shape={input_tensor.shape}`, "
                             f"`input_shape={input_shape}`")
    if input_shape is not None:
        rows, cols = _rows_cols(input_shape)
    elif input_tensor is not None:
        rows, cols = _rows_cols(input_tensor.shape, offset=1)
    else:
        return 224
    return rows if rows == cols and rows in IMAGENET_SIZES else 224


def _imagenet_rows(rows, cols, alpha):
    if alpha not in IMAGENET_ALPHAS:
        raise ValueError("If imagenet weights are being loaded, alpha must be one of `0.35`, `0.50`, `0.75`, `1.0`, "
                         f"`1.3` or `1.4` only; Received `alpha={alpha}`")
    if rows != cols or rows not in IMAGENET_SIZES:
        warnings.warn("`input_shape` is undefined or non-square, or `rows` is not in [96, 128, 160, 192, 224]. "
                      "Weights for input shape (224, 224) will be loaded as the default.", stacklevel=3)
        return 224
    return rows


def MobileNetV2(input_shape=None, alpha=1.0, include_top=True, weights="imagenet", input_tensor=None, pooling=None,
                classes=1000, classifier_activation="softmax", name=None):
    """MobileNetV2 (default input 224x224x3, at least 32x32; ImageNet weights for 96, 128, 160, 192 and 224).

    ``alpha``: the width multiplier. Other arguments as ``resnet.ResNet50``'s. The default name is
    ``mobilenetv2_{alpha:0.2f}_{rows}``.
    """
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=_default_size(input_shape, input_tensor),
                                                    min_size=32, data_format=image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    rows, cols = _rows_cols(input_shape)
    if weights == "imagenet":
        rows = _imagenet_rows(rows, cols, alpha)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = Conv2D(_make_divisible(32 * alpha, 8), kernel_size=3, strides=(2, 2), padding="same", use_bias=False,
               name="Conv1")(img_input)
    x = _batch_norm(x, "bn_Conv1")
    x = ReLU(6.0, name="Conv1_relu")(x)
    for block_id, (filters, stride, expansion) in enumerate(BLOCKS):
        x = _inverted_res_block(x, filters=filters, alpha=alpha, stride=stride, expansion=expansion,
                                block_id=block_id)
    last_block_filters = _make_divisible(1280 * alpha, 8) if alpha > 1.0 else 1280
    x = Conv2D(last_block_filters, kernel_size=1, use_bias=False, name="Conv_1")(x)
    x = _batch_norm(x, "Conv_1_bn")
    x = ReLU(6.0, name="out_relu")(x)
    if include_top:
        x = GlobalAveragePooling2D()(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    if name is None:
        name = f"mobilenetv2_{alpha:0.2f}_{rows}"
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    file_name = None
    if weights == "imagenet":
        file_name = f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_{float(alpha)}_{rows}" \
            f"{'' if include_top else '_no_top'}.h5"
    return imagenet_utils.load_weights(model, weights, file_name, origin=BASE_WEIGHT_PATH + (file_name or ""))


def preprocess_input(x, data_format=None):
    """Pixels scaled to [-1, 1], sample-wise ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction row (see ``imagenet_utils.decode_predictions``)."""
    return imagenet_utils.decode_predictions(preds, top=top)
