"""MobileNet (Howard et al., 2017: depthwise separable convolutions), as ``keras.applications.mobilenet`` builds it.

Inputs are preprocessed in "tf" mode (scaled to [-1, 1]).
"""
from __future__ import annotations

import warnings

from kgraph.applications import imagenet_utils
from kgraph.backend import image_data_format
from kgraph.layers import (
    Activation,
    BatchNormalization,
    Conv2D,
    DepthwiseConv2D,
    Dropout,
    GlobalAveragePooling2D,
    ReLU,
    Reshape,
    ZeroPadding2D,
)
from kgraph.models import Functional

BASE_WEIGHT_PATH = imagenet_utils.KERAS_APPLICATIONS + "mobilenet/"
IMAGENET_SIZES = (128, 160, 192, 224)
IMAGENET_ALPHAS = {1.0: "1_0", 0.75: "7_5", 0.5: "5_0", 0.25: "2_5"}
# (pointwise filters, strides) of depthwise separable blocks 1..13.
BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1), (512, 1),
          (512, 1), (1024, 2), (1024, 1))


def _channel_axis():
    return 1 if image_data_format() == "channels_first" else -1


def _rows_cols(input_shape):
    return (input_shape[1], input_shape[2]) if image_data_format() == "channels_first" \
        else (input_shape[0], input_shape[1])


def _conv_block(inputs, filters, alpha, kernel=(3, 3), strides=(1, 1)):
    x = Conv2D(int(filters * alpha), kernel, padding="same", use_bias=False, strides=strides, name="conv1")(inputs)
    x = BatchNormalization(axis=_channel_axis(), name="conv1_bn")(x)
    return ReLU(6.0, name="conv1_relu")(x)


def _depthwise_conv_block(inputs, pointwise_conv_filters, alpha, depth_multiplier=1, strides=(1, 1), block_id=1):
    x = inputs
    if strides != (1, 1):
        x = ZeroPadding2D(((0, 1), (0, 1)), name=f"conv_pad_{block_id}")(x)
    x = DepthwiseConv2D((3, 3), padding="same" if strides == (1, 1) else "valid", depth_multiplier=depth_multiplier,
                        strides=strides, use_bias=False, name=f"conv_dw_{block_id}")(x)
    x = BatchNormalization(axis=_channel_axis(), name=f"conv_dw_{block_id}_bn")(x)
    x = ReLU(6.0, name=f"conv_dw_{block_id}_relu")(x)
    x = Conv2D(int(pointwise_conv_filters * alpha), (1, 1), padding="same", use_bias=False, strides=(1, 1),
               name=f"conv_pw_{block_id}")(x)
    x = BatchNormalization(axis=_channel_axis(), name=f"conv_pw_{block_id}_bn")(x)
    return ReLU(6.0, name=f"conv_pw_{block_id}_relu")(x)


def _imagenet_rows(rows, cols, alpha, depth_multiplier):
    """The input size of the ImageNet weights to load (224 when the input is not one of theirs)."""
    if depth_multiplier != 1:
        raise ValueError("If imagenet weights are being loaded, depth multiplier must be 1.  "
                         f"Received depth_multiplier={depth_multiplier}")
    if alpha not in IMAGENET_ALPHAS:
        raise ValueError("If imagenet weights are being loaded, alpha can be one of`0.25`, `0.50`, `0.75` or `1.0` "
                         f"only.  Received alpha={alpha}")
    if rows != cols or rows not in IMAGENET_SIZES:
        warnings.warn("`input_shape` is undefined or non-square, or `rows` is not in [128, 160, 192, 224]. Weights "
                      "for input shape (224, 224) will be loaded as the default.", stacklevel=3)
        return 224
    return rows


def MobileNet(input_shape=None, alpha=1.0, depth_multiplier=1, dropout=1e-3, include_top=True, weights="imagenet",
              input_tensor=None, pooling=None, classes=1000, classifier_activation="softmax", name=None):
    """MobileNet (default input 224x224x3, at least 32x32; ImageNet weights for 128, 160, 192 and 224).

    ``alpha``: the width multiplier (filters per layer scaled by it); ``depth_multiplier``: the depthwise
    convolutions'; ``dropout``: the rate before the classifier. Other arguments as ``resnet.ResNet50``'s. The
    default name is ``mobilenet_{alpha:0.2f}_{rows}``.
    """
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    default_size = 224
    if input_shape is not None:
        rows, cols = _rows_cols(input_shape)
        default_size = rows if rows == cols and rows in IMAGENET_SIZES else 224
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                                    data_format=image_data_format(), require_flatten=include_top,
                                                    weights=weights)
    rows, cols = _rows_cols(input_shape)
    if weights == "imagenet":
        rows = _imagenet_rows(rows, cols, alpha, depth_multiplier)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = _conv_block(img_input, 32, alpha, strides=(2, 2))
    for block_id, (filters, stride) in enumerate(BLOCKS, start=1):
        x = _depthwise_conv_block(x, filters, alpha, depth_multiplier, strides=(stride, stride), block_id=block_id)
    if include_top:
        x = GlobalAveragePooling2D(keepdims=True)(x)
        x = Dropout(dropout, name="dropout")(x)
        x = Conv2D(classes, (1, 1), padding="same", name="conv_preds")(x)
        x = Reshape((classes,), name="reshape_2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Activation(activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    if name is None:
        name = f"mobilenet_{alpha:0.2f}_{rows}"
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    file_name = None
    if weights == "imagenet":
        file_name = f"mobilenet_{IMAGENET_ALPHAS[alpha]}_{rows}_tf{'' if include_top else '_no_top'}.h5"
    return imagenet_utils.load_weights(model, weights, file_name, origin=BASE_WEIGHT_PATH + (file_name or ""))


def preprocess_input(x, data_format=None):
    """Pixels scaled to [-1, 1], sample-wise ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction row (see ``imagenet_utils.decode_predictions``)."""
    return imagenet_utils.decode_predictions(preds, top=top)
