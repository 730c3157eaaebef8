"""``keras.applications.xception``: Xception (Chollet, CVPR 2017), Keras's layer names and ImageNet weights."""
from kgraph import backend, layers
from kgraph.applications import imagenet_utils
from kgraph.models import Functional

WEIGHTS_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/xception/"
WEIGHTS_FILES = {
    True: ("xception_weights_tf_dim_ordering_tf_kernels.h5", "0a58e3b7378bc2990ea3b43d5981f1f6"),
    False: ("xception_weights_tf_dim_ordering_tf_kernels_notop.h5", "b0042744bf5b25fce3cb969f33bebb97"),
}


def _sepconv_bn(x, filters, name, channel_axis, relu_before=True):
    if relu_before:
        x = layers.Activation("relu", name=f"{name}_act")(x)
    x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=name)(x)
    return layers.BatchNormalization(axis=channel_axis, name=f"{name}_bn")(x)


def _residual(x, filters, channel_axis):
    residual = layers.Conv2D(filters, (1, 1), strides=(2, 2), padding="same", use_bias=False)(x)
    return layers.BatchNormalization(axis=channel_axis)(residual)


def _entry_block(x, block, filters, channel_axis, first_relu=True):
    """Two separable convolutions and a strided max pooling, added to a strided 1x1 projection of the input."""
    residual = _residual(x, filters, channel_axis)
    prefix = f"block{block}"
    if first_relu:
        x = _sepconv_bn(x, filters, f"{prefix}_sepconv1", channel_axis)
    else:
        x = layers.SeparableConv2D(filters, (3, 3), padding="same", use_bias=False, name=f"{prefix}_sepconv1")(x)
        x = layers.BatchNormalization(axis=channel_axis, name=f"{prefix}_sepconv1_bn")(x)
    x = _sepconv_bn(x, filters, f"{prefix}_sepconv2", channel_axis)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name=f"{prefix}_pool")(x)
    return layers.add([x, residual])


def _xception_body(img_input, channel_axis):
    x = layers.Conv2D(32, (3, 3), strides=(2, 2), use_bias=False, name="block1_conv1")(img_input)
    x = layers.BatchNormalization(axis=channel_axis, name="block1_conv1_bn")(x)
    x = layers.Activation("relu", name="block1_conv1_act")(x)
    x = layers.Conv2D(64, (3, 3), use_bias=False, name="block1_conv2")(x)
    x = layers.BatchNormalization(axis=channel_axis, name="block1_conv2_bn")(x)
    x = layers.Activation("relu", name="block1_conv2_act")(x)
    x = _entry_block(x, 2, 128, channel_axis, first_relu=False)
    x = _entry_block(x, 3, 256, channel_axis)
    x = _entry_block(x, 4, 728, channel_axis)
    for block in range(5, 13):
        residual = x
        for conv in (1, 2, 3):
            x = _sepconv_bn(x, 728, f"block{block}_sepconv{conv}", channel_axis)
        x = layers.add([x, residual])
    residual = _residual(x, 1024, channel_axis)
    x = _sepconv_bn(x, 728, "block13_sepconv1", channel_axis)
    x = _sepconv_bn(x, 1024, "block13_sepconv2", channel_axis)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2), padding="same", name="block13_pool")(x)
    x = layers.add([x, residual])
    for conv, filters in ((1, 1536), (2, 2048)):
        x = _sepconv_bn(x, filters, f"block14_sepconv{conv}", channel_axis, relu_before=False)
        x = layers.Activation("relu", name=f"block14_sepconv{conv}_act")(x)
    return x


def Xception(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
             classifier_activation="softmax", name="xception"):
    """Instantiate the Xception architecture (default input 299x299, at least 71x71; inputs scaled to [-1, 1]).

    Arguments as Keras's: ``weights`` is None, ``"imagenet"`` or a weights file's path; ``input_shape`` may be
    given only with ``include_top=False`` unless it is the default; ``pooling`` is None, ``"avg"`` or ``"max"``.
    """
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=299, min_size=71,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    channel_axis = 1 if backend.image_data_format() == "channels_first" else -1
    x = _xception_body(img_input, channel_axis)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    file_name, file_hash = WEIGHTS_FILES[bool(include_top)]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=WEIGHTS_BASE + file_name)


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (the "tf" mode); ``x`` is a NumPy array or a tensor."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction: lists of ``(class_id, class_name, score)``."""
    return imagenet_utils.decode_predictions(preds, top=top)
