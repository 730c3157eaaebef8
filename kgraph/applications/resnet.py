"""ResNet50/101/152 (He et al., CVPR 2015) and the shared ResNet body, as ``keras.applications.resnet`` builds them.

``resnet_v2`` builds its pre-activation variants with ``ResNet`` and ``stack_residual_blocks_v2`` from here.
Layer names and order are Keras's, so Keras's ImageNet weight files load; inputs are preprocessed in "caffe" mode.
"""
from __future__ import annotations

from kgraph.applications import imagenet_utils
from kgraph.backend import image_data_format
from kgraph.layers import (
    Activation,
    Add,
    BatchNormalization,
    Conv2D,
    Dense,
    GlobalAveragePooling2D,
    MaxPooling2D,
    ZeroPadding2D,
)
from kgraph.models import Functional

BASE_WEIGHTS_PATH = imagenet_utils.KERAS_APPLICATIONS + "resnet/"
WEIGHTS_HASHES = {  # name: (top file's hash, no-top file's hash)
    "resnet50": ("2cb95161c43110f7111970584f804107", "4d473c1dd8becc155b73f8504c6f6626"),
    "resnet101": ("f1aeb4b969a6efcfb50fad2f0c20cfc5", "88cf7a10940856eca736dc7b7e228a21"),
    "resnet152": ("100835be76be38e30d865e96f2aaae62", "ee4c566cf9a93f14d82f913c2dc6dd0c"),
    "resnet50v2": ("3ef43a0b657b3be2300d5770ece849e0", "fac2f116257151a9d068a22e544a4917"),
    "resnet101v2": ("6343647c601c52e1368623803854d971", "c0ed64b8031c3730f411d2eb4eea35b5"),
    "resnet152v2": ("a49b44d1979771252814e80f8ec446f9", "ed17cf2e0169df9d443503ef94b23b33"),
}
EPSILON = 1.001e-5
# Residual blocks in stages conv2..conv5.
DEPTHS = {"resnet50": (3, 4, 6, 3), "resnet101": (3, 4, 23, 3), "resnet152": (3, 8, 36, 3)}


def _bn_axis():
    return 3 if image_data_format() == "channels_last" else 1


def _batch_norm(x, name):
    return BatchNormalization(axis=_bn_axis(), epsilon=EPSILON, name=name)(x)


def ResNet(stack_fn, preact, use_bias, include_top=True, weights="imagenet", input_tensor=None, input_shape=None,
           pooling=None, classes=1000, classifier_activation="softmax", name="resnet", weights_name=None):
    """A ResNet: the stem, ``stack_fn``'s residual stages, then the classifier or the optional pooling.

    ``preact`` builds the v2 (pre-activation) layout; ``weights_name`` picks the ImageNet weight files.
    """
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=224, min_size=32,
                                                    data_format=image_data_format(), require_flatten=include_top,
                                                    weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = ZeroPadding2D(padding=((3, 3), (3, 3)), name="conv1_pad")(img_input)
    x = Conv2D(64, 7, strides=2, use_bias=use_bias, name="conv1_conv")(x)
    if not preact:
        x = _batch_norm(x, "conv1_bn")
        x = Activation("relu", name="conv1_relu")(x)
    x = ZeroPadding2D(padding=((1, 1), (1, 1)), name="pool1_pad")(x)
    x = MaxPooling2D(3, strides=2, name="pool1_pool")(x)
    x = stack_fn(x)
    if preact:
        x = _batch_norm(x, "post_bn")
        x = Activation("relu", name="post_relu")(x)
    if include_top:
        x = GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, avg_name="avg_pool", max_name="max_pool")
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    if weights == "imagenet" and weights_name not in WEIGHTS_HASHES:
        return model  # as Keras: an architecture without published weights stays randomly initialized
    suffix = "" if include_top else "_notop"
    file_name = f"{weights_name}_weights_tf_dim_ordering_tf_kernels{suffix}.h5"
    file_hash = WEIGHTS_HASHES[weights_name][0 if include_top else 1] if weights == "imagenet" else None
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=BASE_WEIGHTS_PATH + file_name)


def residual_block_v1(x, filters, kernel_size=3, stride=1, conv_shortcut=True, name=None):
    """A bottleneck block (1x1, ``kernel_size``, 1x1 convolutions, 4x ``filters`` out), activation after the add."""
    if conv_shortcut:
        shortcut = Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(x)
        shortcut = _batch_norm(shortcut, f"{name}_0_bn")
    else:
        shortcut = x
    x = Conv2D(filters, 1, strides=stride, name=f"{name}_1_conv")(x)
    x = _batch_norm(x, f"{name}_1_bn")
    x = Activation("relu", name=f"{name}_1_relu")(x)
    x = Conv2D(filters, kernel_size, padding="SAME", name=f"{name}_2_conv")(x)
    x = _batch_norm(x, f"{name}_2_bn")
    x = Activation("relu", name=f"{name}_2_relu")(x)
    x = Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    x = _batch_norm(x, f"{name}_3_bn")
    x = Add(name=f"{name}_add")([shortcut, x])
    return Activation("relu", name=f"{name}_out")(x)


def stack_residual_blocks_v1(x, filters, blocks, stride1=2, name=None):
    """``blocks`` v1 blocks; the first has the projection shortcut and stride ``stride1``."""
    x = residual_block_v1(x, filters, stride=stride1, name=f"{name}_block1")
    for i in range(2, blocks + 1):
        x = residual_block_v1(x, filters, conv_shortcut=False, name=f"{name}_block{i}")
    return x


def residual_block_v2(x, filters, kernel_size=3, stride=1, conv_shortcut=False, name=None):
    """A pre-activation bottleneck block (batch norm and ReLU before the convolutions)."""
    preact = _batch_norm(x, f"{name}_preact_bn")
    preact = Activation("relu", name=f"{name}_preact_relu")(preact)
    if conv_shortcut:
        shortcut = Conv2D(4 * filters, 1, strides=stride, name=f"{name}_0_conv")(preact)
    else:
        shortcut = MaxPooling2D(1, strides=stride)(x) if stride > 1 else x
    x = Conv2D(filters, 1, strides=1, use_bias=False, name=f"{name}_1_conv")(preact)
    x = _batch_norm(x, f"{name}_1_bn")
    x = Activation("relu", name=f"{name}_1_relu")(x)
    x = ZeroPadding2D(padding=((1, 1), (1, 1)), name=f"{name}_2_pad")(x)
    x = Conv2D(filters, kernel_size, strides=stride, use_bias=False, name=f"{name}_2_conv")(x)
    x = _batch_norm(x, f"{name}_2_bn")
    x = Activation("relu", name=f"{name}_2_relu")(x)
    x = Conv2D(4 * filters, 1, name=f"{name}_3_conv")(x)
    return Add(name=f"{name}_out")([shortcut, x])


def stack_residual_blocks_v2(x, filters, blocks, stride1=2, name=None):
    """``blocks`` v2 blocks; the first has the projection shortcut, the last the stride ``stride1``."""
    x = residual_block_v2(x, filters, conv_shortcut=True, name=f"{name}_block1")
    for i in range(2, blocks):
        x = residual_block_v2(x, filters, name=f"{name}_block{i}")
    return residual_block_v2(x, filters, stride=stride1, name=f"{name}_block{blocks}")


def _stages_v1(depths):
    def stack_fn(x):
        x = stack_residual_blocks_v1(x, 64, depths[0], stride1=1, name="conv2")
        x = stack_residual_blocks_v1(x, 128, depths[1], name="conv3")
        x = stack_residual_blocks_v1(x, 256, depths[2], name="conv4")
        return stack_residual_blocks_v1(x, 512, depths[3], name="conv5")
    return stack_fn


def _resnet_v1(kind, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    return ResNet(_stages_v1(DEPTHS[kind]), preact=False, use_bias=True, weights_name=kind, name=name,
                  include_top=include_top, weights=weights, input_tensor=input_tensor, input_shape=input_shape,
                  pooling=pooling, classes=classes, classifier_activation=classifier_activation)


def ResNet50(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", name="resnet50"):
    """ResNet50 (default input 224x224x3, at least 32x32).

    ``include_top``: the pooling and dense classifier; ``weights``: None, ``"imagenet"`` or a weights file;
    ``input_tensor``/``input_shape``: the image input; ``pooling``: None, ``"avg"`` or ``"max"`` when
    ``include_top`` is False; ``classes`` and ``classifier_activation``: the top classifier's.
    """
    return _resnet_v1("resnet50", include_top, weights, input_tensor, input_shape, pooling, classes,
                      classifier_activation, name)


def ResNet101(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name="resnet101"):
    """ResNet101; arguments as ``ResNet50``'s."""
    return _resnet_v1("resnet101", include_top, weights, input_tensor, input_shape, pooling, classes,
                      classifier_activation, name)


def ResNet152(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
              classifier_activation="softmax", name="resnet152"):
    """ResNet152; arguments as ``ResNet50``'s."""
    return _resnet_v1("resnet152", include_top, weights, input_tensor, input_shape, pooling, classes,
                      classifier_activation, name)


def preprocess_input(x, data_format=None):
    """RGB -> BGR, then each channel zero-centered by ImageNet's mean pixel, without scaling ("caffe" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction row (see ``imagenet_utils.decode_predictions``)."""
    return imagenet_utils.decode_predictions(preds, top=top)
