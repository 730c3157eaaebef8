"""``keras.applications.efficientnet_v2``: EfficientNetV2 B0..B3, S, M, L (Tan & Le, ICML 2021), Keras's layers and
weights. The models take pixels in [0, 255] and rescale them themselves (``include_preprocessing=True``)."""
import copy
import math

from kgraph import backend, layers
from kgraph.applications import imagenet_utils
from kgraph.models import Functional

BASE_WEIGHTS_PATH = "https://storage.googleapis.com/tensorflow/keras-applications/efficientnet_v2/"
WEIGHTS_HASHES = {  # variant: (with top, without top)
    "b0": ("21ecbf6da12460d5c40bb2f29ceb2188", "893217f2bb855e2983157299931e43ff"),
    "b1": ("069f0534ff22adf035c89e2d9547a9dc", "0e80663031ca32d657f9caa404b6ec37"),
    "b2": ("424e49f28180edbde1e94797771950a7", "1dfe2e7a5d45b6632553a8961ea609eb"),
    "b3": ("1f1fc43bd98a6e4fd8fdfd551e02c7a0", "f6abf7b5849ac99a89b50dd3fd532856"),
    "-s": ("e1d88a8495beba45748fedd0cecbe016", "af0682fb74e8c54910f2d4393339c070"),
    "-m": ("a3bf6aa3276309f4fc6a34aa114c95cd", "1b8dc055df72dde80d614482840fe342"),
    "-l": ("27e6d408b53c7ebc868fefa357689935", "b0b66b5c863aef5b46e8608fe1711615"),
}
_KEYS = ("kernel_size", "num_repeat", "input_filters", "output_filters", "expand_ratio", "se_ratio", "strides",
         "conv_type")
_B_STAGES = ((3, 1, 32, 16, 1, 0, 1, 1), (3, 2, 16, 32, 4, 0, 2, 1), (3, 2, 32, 48, 4, 0, 2, 1),
             (3, 3, 48, 96, 4, 0.25, 2, 0), (3, 5, 96, 112, 6, 0.25, 1, 0), (3, 8, 112, 192, 6, 0.25, 2, 0))
_STAGES = {  # conv_type 1: fused MBConv, 0: MBConv
    "efficientnetv2-s": ((3, 2, 24, 24, 1, 0.0, 1, 1), (3, 4, 24, 48, 4, 0.0, 2, 1), (3, 4, 48, 64, 4, 0, 2, 1),
                         (3, 6, 64, 128, 4, 0.25, 2, 0), (3, 9, 128, 160, 6, 0.25, 1, 0),
                         (3, 15, 160, 256, 6, 0.25, 2, 0)),
    "efficientnetv2-m": ((3, 3, 24, 24, 1, 0, 1, 1), (3, 5, 24, 48, 4, 0, 2, 1), (3, 5, 48, 80, 4, 0, 2, 1),
                         (3, 7, 80, 160, 4, 0.25, 2, 0), (3, 14, 160, 176, 6, 0.25, 1, 0),
                         (3, 18, 176, 304, 6, 0.25, 2, 0), (3, 5, 304, 512, 6, 0.25, 1, 0)),
    "efficientnetv2-l": ((3, 4, 32, 32, 1, 0, 1, 1), (3, 7, 32, 64, 4, 0, 2, 1), (3, 7, 64, 96, 4, 0, 2, 1),
                         (3, 10, 96, 192, 4, 0.25, 2, 0), (3, 19, 192, 224, 6, 0.25, 1, 0),
                         (3, 25, 224, 384, 6, 0.25, 2, 0), (3, 7, 384, 640, 6, 0.25, 1, 0)),
    **{f"efficientnetv2-b{i}": _B_STAGES for i in range(4)},
}
DEFAULT_BLOCKS_ARGS = {name: [dict(zip(_KEYS, stage)) for stage in stages] for name, stages in _STAGES.items()}
CONV_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal"}}
DENSE_KERNEL_INITIALIZER = {"class_name": "VarianceScaling",
                            "config": {"scale": 1.0 / 3.0, "mode": "fan_out", "distribution": "uniform"}}
# variant: (width_coefficient, depth_coefficient, default_size)
VARIANTS = {"b0": (1.0, 1.0, 224), "b1": (1.0, 1.1, 240), "b2": (1.1, 1.2, 260), "b3": (1.2, 1.4, 300),
            "-s": (1.0, 1.0, 384), "-m": (1.0, 1.0, 480), "-l": (1.0, 1.0, 480)}


def round_filters(filters, width_coefficient, min_depth, depth_divisor):
    """``filters`` scaled by ``width_coefficient``, rounded to a multiple of ``depth_divisor`` (at least
    ``min_depth``)."""
    filters *= width_coefficient
    minimum_depth = min_depth or depth_divisor
    return int(max(minimum_depth, int(filters + depth_divisor / 2) // depth_divisor * depth_divisor))


def round_repeats(repeats, depth_coefficient):
    """A stage's number of blocks scaled by ``depth_coefficient``, rounded up."""
    return int(math.ceil(depth_coefficient * repeats))


def _squeeze_excite(x, filters, input_filters, se_ratio, activation, name, bn_axis):
    se = layers.GlobalAveragePooling2D(name=f"{name}se_squeeze")(x)
    se = layers.Reshape((filters, 1, 1) if bn_axis == 1 else (1, 1, filters), name=f"{name}se_reshape")(se)
    se = layers.Conv2D(max(1, int(input_filters * se_ratio)), 1, padding="same", activation=activation,
                       kernel_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}se_reduce")(se)
    se = layers.Conv2D(filters, 1, padding="same", activation="sigmoid", kernel_initializer=CONV_KERNEL_INITIALIZER,
                       name=f"{name}se_expand")(se)
    return layers.multiply([x, se], name=f"{name}se_excite")


def _conv_bn(x, filters, kernel_size, strides, bn_momentum, bn_axis, name):
    x = layers.Conv2D(filters, kernel_size, strides=strides, kernel_initializer=CONV_KERNEL_INITIALIZER,
                      padding="same", use_bias=False, name=f"{name}_conv")(x)
    return layers.BatchNormalization(axis=bn_axis, momentum=bn_momentum, name=f"{name}_bn")(x)


def _shortcut(x, inputs, strides, input_filters, output_filters, survival_probability, name):
    if strides == 1 and input_filters == output_filters:
        if survival_probability:  # Keras passes this value to Dropout as its rate
            x = layers.Dropout(survival_probability, noise_shape=(None, 1, 1, 1), name=f"{name}drop")(x)
        x = layers.add([x, inputs], name=f"{name}add")
    return x


def MBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3, strides=1, se_ratio=0.0,
                bn_momentum=0.9, activation="swish", survival_probability=0.8, name=None):
    """The inverted residual block (1x1 expansion, depthwise convolution, squeeze-and-excitation, projection),
    returned as a function of its input tensor."""
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    name = backend.get_uid("block0") if name is None else name

    def apply(inputs):
        filters = input_filters * expand_ratio
        x = inputs
        if expand_ratio != 1:
            x = _conv_bn(x, filters, 1, 1, bn_momentum, bn_axis, f"{name}expand")
            x = layers.Activation(activation, name=f"{name}expand_activation")(x)
        x = layers.DepthwiseConv2D(kernel_size=kernel_size, strides=strides, padding="same", use_bias=False,
                                   depthwise_initializer=CONV_KERNEL_INITIALIZER, name=f"{name}dwconv2")(x)
        x = layers.BatchNormalization(axis=bn_axis, momentum=bn_momentum, name=f"{name}bn")(x)
        x = layers.Activation(activation, name=f"{name}activation")(x)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, filters, input_filters, se_ratio, activation, name, bn_axis)
        x = _conv_bn(x, output_filters, 1, 1, bn_momentum, bn_axis, f"{name}project")
        return _shortcut(x, inputs, strides, input_filters, output_filters, survival_probability, name)
    return apply


def FusedMBConvBlock(input_filters, output_filters, expand_ratio=1, kernel_size=3, strides=1, se_ratio=0.0,
                     bn_momentum=0.9, activation="swish", survival_probability=0.8, name=None):
    """The fused block: one full ``kernel_size`` convolution in place of the expansion and depthwise pair,
    returned as a function of its input tensor."""
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    name = backend.get_uid("block0") if name is None else name

    def apply(inputs):
        filters = input_filters * expand_ratio
        x = inputs
        if expand_ratio != 1:
            x = _conv_bn(x, filters, kernel_size, strides, bn_momentum, bn_axis, f"{name}expand")
            x = layers.Activation(activation, name=f"{name}expand_activation")(x)
        if 0 < se_ratio <= 1:
            x = _squeeze_excite(x, filters, input_filters, se_ratio, activation, name, bn_axis)
        fused = expand_ratio == 1
        x = _conv_bn(x, output_filters, kernel_size if fused else 1, strides if fused else 1, bn_momentum, bn_axis,
                     f"{name}project")
        if fused:
            x = layers.Activation(activation, name=f"{name}project_activation")(x)
        return _shortcut(x, inputs, strides, input_filters, output_filters, survival_probability, name)
    return apply


def _preprocessing(x, name, channels, bn_axis):
    if name.split("-")[-1].startswith("b") and channels == 3:
        x = layers.Rescaling(scale=1.0 / 255)(x)
        return layers.Normalization(mean=[0.485, 0.456, 0.406], variance=[0.229**2, 0.224**2, 0.225**2],
                                    axis=bn_axis)(x)
    return layers.Rescaling(scale=1.0 / 128.0, offset=-1)(x)


def _blocks(x, blocks_args, width_coefficient, depth_coefficient, depth_divisor, min_depth, bn_momentum, activation,
            drop_connect_rate):
    blocks_args = copy.deepcopy(blocks_args)
    total = float(sum(args["num_repeat"] for args in blocks_args))
    b = 0
    for i, args in enumerate(blocks_args):
        if args["num_repeat"] <= 0:
            raise ValueError("The number of repeats in `EfficientNetV2` must be > 0. "
                             f"Received: num_repeat={args['num_repeat']}")
        for key in ("input_filters", "output_filters"):
            args[key] = round_filters(args[key], width_coefficient, min_depth, depth_divisor)
        block = {0: MBConvBlock, 1: FusedMBConvBlock}[args.pop("conv_type")]
        for j in range(round_repeats(args.pop("num_repeat"), depth_coefficient)):
            if j > 0:
                args["strides"] = 1
                args["input_filters"] = args["output_filters"]
            x = block(activation=activation, bn_momentum=bn_momentum, survival_probability=drop_connect_rate * b / total,
                      name=f"block{i + 1}{chr(j + 97)}_", **args)(x)
            b += 1
    return x


def _top(x, include_top, pooling, classes, classifier_activation, weights, dropout_rate):
    if not include_top:
        return imagenet_utils.pool(x, pooling, avg_name="avg_pool", max_name="max_pool")
    x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    if dropout_rate > 0:
        x = layers.Dropout(dropout_rate, name="top_dropout")(x)
    imagenet_utils.validate_activation(classifier_activation, weights)
    return layers.Dense(classes, activation=classifier_activation, kernel_initializer=DENSE_KERNEL_INITIALIZER,
                        bias_initializer="zeros", name="predictions")(x)


def EfficientNetV2(width_coefficient, depth_coefficient, default_size, dropout_rate=0.2, drop_connect_rate=0.2,
                   depth_divisor=8, min_depth=8, bn_momentum=0.9, activation="swish", blocks_args="default",
                   name="efficientnetv2", include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
                   pooling=None, classes=1000, classifier_activation="softmax", include_preprocessing=True,
                   weights_name=None):
    """An EfficientNetV2 scaled by ``width_coefficient`` / ``depth_coefficient`` (inputs at least 32x32).

    ``blocks_args="default"`` takes the stages of the variant named ``name`` (``"efficientnetv2-s"``, ...).
    """
    if blocks_args == "default":
        if name not in DEFAULT_BLOCKS_ARGS:
            raise ValueError(f"`blocks_args='default'` needs `name` to be one of {sorted(DEFAULT_BLOCKS_ARGS)}; "
                             f"pass the blocks' arguments otherwise. Received: name={name}")
        blocks_args = DEFAULT_BLOCKS_ARGS[name]
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    if weights == "imagenet" and weights_name not in WEIGHTS_HASHES:
        raise ValueError(f"ImageNet weights exist for `weights_name` in {sorted(WEIGHTS_HASHES)} only. "
                         f"Received: weights_name={weights_name}")
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=default_size, min_size=32,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    x = _preprocessing(img_input, name, input_shape[bn_axis - 1], bn_axis) if include_preprocessing else img_input
    x = layers.Conv2D(round_filters(blocks_args[0]["input_filters"], width_coefficient, min_depth, depth_divisor), 3,
                      strides=2, kernel_initializer=CONV_KERNEL_INITIALIZER, padding="same", use_bias=False,
                      name="stem_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, momentum=bn_momentum, name="stem_bn")(x)
    x = layers.Activation(activation, name="stem_activation")(x)
    x = _blocks(x, blocks_args, width_coefficient, depth_coefficient, depth_divisor, min_depth, bn_momentum,
                activation, drop_connect_rate)
    x = _conv_bn(x, round_filters(1280, width_coefficient, min_depth, depth_divisor), 1, 1, bn_momentum, bn_axis,
                 "top")
    x = layers.Activation(activation, name="top_activation")(x)
    x = _top(x, include_top, pooling, classes, classifier_activation, weights, dropout_rate)
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    if weights != "imagenet":
        return imagenet_utils.load_weights(model, weights)
    file_name = name + (".h5" if include_top else "_notop.h5")
    file_hash = WEIGHTS_HASHES[weights_name][0 if include_top else 1]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=BASE_WEIGHTS_PATH + file_name)


def _variant(key):
    width, depth, size = VARIANTS[key]
    label = key.lstrip("-").upper()

    def builder(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", include_preprocessing=True,
                name=f"efficientnetv2-{key.lstrip('-')}"):
        return EfficientNetV2(width_coefficient=width, depth_coefficient=depth, default_size=size, name=name,
                              include_top=include_top, weights=weights, input_tensor=input_tensor,
                              input_shape=input_shape, pooling=pooling, classes=classes,
                              classifier_activation=classifier_activation, include_preprocessing=include_preprocessing,
                              weights_name=key)
    builder.__name__ = builder.__qualname__ = f"EfficientNetV2{label}"
    builder.__doc__ = (f"Instantiate EfficientNetV2-{label} (default input {size}x{size}, at least 32x32; pixels in "
                       f"[0, 255]); arguments as ``keras.applications.EfficientNetV2{label}``.")
    return builder


EfficientNetV2B0 = _variant("b0")
EfficientNetV2B1 = _variant("b1")
EfficientNetV2B2 = _variant("b2")
EfficientNetV2B3 = _variant("b3")
EfficientNetV2S = _variant("-s")
EfficientNetV2M = _variant("-m")
EfficientNetV2L = _variant("-l")


def preprocess_input(x, data_format=None):
    """Return ``x`` unchanged, as Keras does: the EfficientNetV2 models rescale inside (``data_format`` is accepted
    for the common signature and not used)."""
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction: lists of ``(class_id, class_name, score)``."""
    return imagenet_utils.decode_predictions(preds, top=top)
