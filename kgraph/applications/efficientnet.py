"""``keras.applications.efficientnet``: EfficientNet B0..B7 (Tan & Le, ICML 2019), Keras's layers and weights.

The models rescale and normalize their input themselves: they take pixels in [0, 255].
"""
import copy
import math

from kgraph import backend, layers
from kgraph.applications import imagenet_utils
from kgraph.models import Functional

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/keras-applications/"
WEIGHTS_HASHES = {  # variant: (with top, without top)
    "b0": ("902e53a9f72be733fc0bcb005b3ebbac", "50bc09e76180e00e4465e1a485ddc09d"),
    "b1": ("1d254153d4ab51201f1646940f018540", "74c4e6b3e1f6a1eea24c589628592432"),
    "b2": ("b15cce36ff4dcbd00b6dd88e7857a6ad", "111f8e2ac8aa800a7a99e3239f7bfb39"),
    "b3": ("ffd1fdc53d0ce67064dc6a9c7960ede0", "af6d107764bb5b1abb91932881670226"),
    "b4": ("18c95ad55216b8f92d7e70b3a046e2fc", "ebc24e6d6c33eaebbd558eafbeedf1ba"),
    "b5": ("ace28f2a6363774853a83a0b21b9421a", "38879255a25d3c92d5e44e04ae6cec6f"),
    "b6": ("165f6e37dce68623721b423839de8be5", "9ecce42647a20130c1f39a5d4cb75743"),
    "b7": ("8c03f828fec3ef71311cd463b6759d99", "cbcfe4450ddf6f3ad90b1b398090fe4a"),
}
# (kernel_size, repeats, filters_in, filters_out, expand_ratio, strides) of the seven stages of B0.
_STAGES = ((3, 1, 32, 16, 1, 1), (3, 2, 16, 24, 6, 2), (5, 2, 24, 40, 6, 2), (3, 3, 40, 80, 6, 2),
           (5, 3, 80, 112, 6, 1), (5, 4, 112, 192, 6, 2), (3, 1, 192, 320, 6, 1))
DEFAULT_BLOCKS_ARGS = [
    {"kernel_size": k, "repeats": r, "filters_in": fi, "filters_out": fo, "expand_ratio": e, "id_skip": True,
     "strides": s, "se_ratio": 0.25} for k, r, fi, fo, e, s in _STAGES]
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}
IMAGENET_STDDEV_RGB = [0.229, 0.224, 0.225]
# variant: (width_coefficient, depth_coefficient, default_size, dropout_rate)
VARIANTS = {"b0": (1.0, 1.0, 224, 0.2), "b1": (1.0, 1.1, 240, 0.2), "b2": (1.1, 1.2, 260, 0.3),
            "b3": (1.2, 1.4, 300, 0.3), "b4": (1.4, 1.8, 380, 0.4), "b5": (1.6, 2.2, 456, 0.4),
            "b6": (1.8, 2.6, 528, 0.5), "b7": (2.0, 3.1, 600, 0.5)}


def round_filters(filters, width_coefficient, divisor=8):
    """``filters`` scaled by ``width_coefficient``, rounded to a multiple of ``divisor`` losing at most 10%."""
    filters *= width_coefficient
    new_filters = max(divisor, int(filters + divisor / 2) // divisor * divisor)
    if new_filters < 0.9 * filters:
        new_filters += divisor
    return int(new_filters)


def round_repeats(repeats, depth_coefficient):
    """A stage's number of blocks scaled by ``depth_coefficient``, rounded up."""
    return int(math.ceil(depth_coefficient * repeats))


def _squeeze_excite(x, filters, filters_se, activation, name, bn_axis):
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se_shape = (filters, 1, 1) if bn_axis == 1 else (1, 1, filters)
    se = layers.Reshape(se_shape, name=f"{name}se_reshape")(se)
    se = layers.Conv2D(filters_se, 1, padding="same", activation=activation,
                       kernel_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=CONV_KERNEL_INITIALIZER,
                       name=f"{name}se_expand")(se)
    return layers.multiply([x, se], name=f"{name}se_excite")


def block(inputs, activation="swish", drop_rate=0.0, name="", filters_in=32, filters_out=16, kernel_size=3,
          strides=1, expand_ratio=1, se_ratio=0.0, id_skip=True):
    """The inverted residual block: 1x1 expansion, depthwise convolution, squeeze-and-excitation, 1x1 projection;
    with a (stochastically dropped) identity shortcut when shapes allow."""
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    filters = filters_in * expand_ratio
    x = inputs
    if expand_ratio != 1:
        x = layers.Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                          name=f"{name}expand_conv")(x)
        x = layers.BatchNormalization(axis=bn_axis, name=f"{name}expand_bn")(x)
        x = layers.Activation(activation, name=f"{name}expand_activation")(x)
    conv_pad = "same"
    if strides == 2:
        x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, kernel_size), name=f"{name}dwconv_pad")(x)
        conv_pad = "valid"
    x = layers.DepthwiseConv2D(kernel_size, strides=strides, padding=conv_pad, use_bias=False,
                               depthwise_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}dwconv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=f"{name}bn")(x)
    x = layers.Activation(activation, name=f"{name}activation")(x)
    if 0 < se_ratio <= 1:
        x = _squeeze_excite(x, filters, max(1, int(filters_in * se_ratio)), activation, name, bn_axis)
    x = layers.Conv2D(filters_out, 1, padding="same", use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      name=f"{name}project_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name=f"{name}project_bn")(x)
    if id_skip and strides == 1 and filters_in == filters_out:
        if drop_rate > 0:
            x = layers.Dropout(drop_rate, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.add([x, inputs], name=f"{name}add")
    return x


def _stem(img_input, width_coefficient, depth_divisor, activation, weights, bn_axis):
    x = layers.Rescaling(1.0 / 255.0)(img_input)
    x = layers.Normalization(axis=bn_axis)(x)
    if weights == "imagenet":
        # The published weights normalize by the variance where the std was meant: Keras rescales to undo it.
        x = layers.Rescaling([1.0 / math.sqrt(stddev) for stddev in IMAGENET_STDDEV_RGB])(x)
    x = layers.ZeroPadding2D(padding=imagenet_utils.correct_pad(x, 3), name="stem_conv_pad")(x)
    x = layers.Conv2D(round_filters(32, width_coefficient, depth_divisor), 3, strides=2, padding="valid",
                      use_bias=False, kernel_initializer=CONV_KERNEL_INITIALIZER, name="stem_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name="stem_bn")(x)
    return layers.Activation(activation, name="stem_activation")(x)


def _blocks(x, blocks_args, width_coefficient, depth_coefficient, depth_divisor, activation, drop_connect_rate):
    blocks_args = copy.deepcopy(blocks_args)
    total = float(sum(round_repeats(args["repeats"], depth_coefficient) for args in blocks_args))
    b = 0
    for i, args in enumerate(blocks_args):
        if args["repeats"] <= 0:
            raise ValueError(f"The number of repeats in `EfficientNet` must be > 0. Received: repeats={args['repeats']}")
        args["filters_in"] = round_filters(args["filters_in"], width_coefficient, depth_divisor)
        args["filters_out"] = round_filters(args["filters_out"], width_coefficient, depth_divisor)
        for j in range(round_repeats(args.pop("repeats"), depth_coefficient)):
            if j > 0:
                args["strides"] = 1
                args["filters_in"] = args["filters_out"]
            x = block(x, activation, drop_connect_rate * b / total, name=f"block{i + 1}{chr(j + 97)}_", **args)
            b += 1
    return x


def EfficientNet(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2, drop_connect_rate=0.2,
                 depth_divisor=8, activation="swish", blocks_args="default", name="efficientnet", include_top=True,
                 weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
                 classifier_activation="softmax", weights_name=None):
    """An EfficientNet scaled by ``width_coefficient`` / ``depth_coefficient`` (inputs at least 32x32).

    ``weights="imagenet"`` loads the file of ``weights_name`` (``"b0"``..``"b7"``), named after ``name``.
    """
    if blocks_args == "default":
        blocks_args = DEFAULT_BLOCKS_ARGS
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    if weights == "imagenet" and weights_name not in WEIGHTS_HASHES:
        raise ValueError(f"ImageNet weights exist for `weights_name` in {sorted(WEIGHTS_HASHES)} only. "
                         f"Received: weights_name={weights_name}")
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    x = _stem(img_input, width_coefficient, depth_divisor, activation, weights, bn_axis)
    x = _blocks(x, blocks_args, width_coefficient, depth_coefficient, depth_divisor, activation, drop_connect_rate)
    x = layers.Conv2D(round_filters(1280, width_coefficient, depth_divisor), 1, padding="same", use_bias=False,
                      kernel_initializer=CONV_KERNEL_INITIALIZER, name="top_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, name="top_bn")(x)
    x = layers.Activation(activation, name="top_activation")(x)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        if dropout_rate > 0:
            x = layers.Dropout(dropout_rate, name="top_dropout")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_KERNEL_INITIALIZER,
                         name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, avg_name="avg_pool", max_name="max_pool")
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    if weights != "imagenet":
        return imagenet_utils.load_weights(model, weights)
    file_name = name + (".h5" if include_top else "_notop.h5")
    file_hash = WEIGHTS_HASHES[weights_name][0 if include_top else 1]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=BASE_WEIGHTS_PATH + file_name)


def _variant(key):
    width, depth, size, dropout = VARIANTS[key]

    def builder(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name=f"efficientnet{key}"):
        return EfficientNet(width, depth, size, dropout, name=name, include_top=include_top, weights=weights,
                            input_tensor=input_tensor, input_shape=input_shape, pooling=pooling, classes=classes,
                            classifier_activation=classifier_activation, weights_name=key)
    builder.__name__ = builder.__qualname__ = f"EfficientNet{key.upper()}"
    builder.__doc__ = (f"Instantiate EfficientNet-{key.upper()} (default input {size}x{size}, at least 32x32; "
                       "pixels in [0, 255]); arguments as ``keras.applications."
                       f"EfficientNet{key.upper()}``.")
    return builder


EfficientNetB0 = _variant("b0")
EfficientNetB1 = _variant("b1")
EfficientNetB2 = _variant("b2")
EfficientNetB3 = _variant("b3")
EfficientNetB4 = _variant("b4")
EfficientNetB5 = _variant("b5")
EfficientNetB6 = _variant("b6")
EfficientNetB7 = _variant("b7")


def preprocess_input(x, data_format=None):
    """Return ``x`` unchanged, as Keras does: the EfficientNet models scale and normalize inside (``data_format``
    is accepted for the common signature and not used)."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction: lists of ``(class_id, class_name, score)``."""
    return imagenet_utils.decode_predictions(preds, top=top)
