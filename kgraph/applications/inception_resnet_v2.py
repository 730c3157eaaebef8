"""``keras.applications.inception_resnet_v2``: Inception-ResNet-v2 (Szegedy et al., AAAI 2017), Keras's layers
and weights."""
from kgraph import backend, layers, ops
from kgraph.applications import imagenet_utils
from kgraph.layers.layer import Layer
from kgraph.models import Functional

BASE_WEIGHT_URL = "https://storage.googleapis.com/tensorflow/keras-applications/inception_resnet_v2/"
WEIGHTS_FILES = {
    True: ("inception_resnet_v2_weights_tf_dim_ordering_tf_kernels.h5", "e693bd0210a403b3192acc6073ad2e96"),
    False: ("inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5", "d19885ff4a710c122648d3b5c3b684e4"),
}


class CustomScaleLayer(Layer):
    """``inputs[0] + inputs[1] * scale``: the scaled residual sum of an Inception-ResNet block."""

    def __init__(self, scale, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale

    def call(self, inputs):
        x, residual = inputs
        return ops.add(x, ops.multiply(residual, ops.cast(self.scale, residual.dtype)))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def get_config(self):
        config = super().get_config()
        config.update({"scale": self.scale})
        return config


def conv2d_bn(x, filters, kernel_size, strides=1, padding="same", activation="relu", use_bias=False, name=None):
    """Convolution, batch normalization without scale (when the convolution has no bias), then ``activation``."""
    x = layers.Conv2D(filters, kernel_size, strides=strides, padding=padding, use_bias=use_bias, name=name)(x)
    if not use_bias:
        bn_axis = 1 if backend.image_data_format() == "channels_first" else 3
        x = layers.BatchNormalization(axis=bn_axis, scale=False, name=None if name is None else f"{name}_bn")(x)
    if activation is not None:
        x = layers.Activation(activation, name=None if name is None else f"{name}_ac")(x)
    return x


def _branches(x, block_type):
    if block_type == "block35":
        return [conv2d_bn(x, 32, 1), conv2d_bn(conv2d_bn(x, 32, 1), 32, 3),
                conv2d_bn(conv2d_bn(conv2d_bn(x, 32, 1), 48, 3), 64, 3)]
    if block_type == "block17":
        return [conv2d_bn(x, 192, 1), conv2d_bn(conv2d_bn(conv2d_bn(x, 128, 1), 160, [1, 7]), 192, [7, 1])]
    if block_type == "block8":
        return [conv2d_bn(x, 192, 1), conv2d_bn(conv2d_bn(conv2d_bn(x, 192, 1), 224, [1, 3]), 256, [3, 1])]
    raise ValueError(f'Unknown Inception-ResNet block type. Expects "block35", "block17" or "block8", '
                     f"but got: {block_type}")


def inception_resnet_block(x, scale, block_type, block_idx, activation="relu"):
    """A residual Inception block: its branches' concatenation, projected by a 1x1 convolution, scaled by
    ``scale`` and added to ``x``, then ``activation``. ``block_type`` is "block35", "block17" or "block8"."""
    branches = _branches(x, block_type)
    block_name = f"{block_type}_{block_idx}"
    channel_axis = 1 if backend.image_data_format() == "channels_first" else 3
    mixed = layers.Concatenate(axis=channel_axis, name=f"{block_name}_mixed")(branches)
    up = conv2d_bn(mixed, x.shape[channel_axis], 1, activation=None, use_bias=True, name=f"{block_name}_conv")
    x = CustomScaleLayer(scale)([x, up])
    if activation is not None:
        x = layers.Activation(activation, name=f"{block_name}_ac")(x)
    return x


def _stem(img_input, channel_axis):
    x = conv2d_bn(img_input, 32, 3, strides=2, padding="valid")
    x = conv2d_bn(x, 32, 3, padding="valid")
    x = conv2d_bn(x, 64, 3)
    x = layers.MaxPooling2D(3, strides=2)(x)
    x = conv2d_bn(x, 80, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, padding="valid")
    x = layers.MaxPooling2D(3, strides=2)(x)
    branch_0 = conv2d_bn(x, 96, 1)
    branch_1 = conv2d_bn(conv2d_bn(x, 48, 1), 64, 5)
    branch_2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1), 96, 3), 96, 3)
    branch_pool = conv2d_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), 64, 1)
    return layers.Concatenate(axis=channel_axis, name="mixed_5b")([branch_0, branch_1, branch_2, branch_pool])


def _body(img_input):
    channel_axis = 1 if backend.image_data_format() == "channels_first" else 3
    x = _stem(img_input, channel_axis)
    for block_idx in range(1, 11):
        x = inception_resnet_block(x, scale=0.17, block_type="block35", block_idx=block_idx)
    branch_0 = conv2d_bn(x, 384, 3, strides=2, padding="valid")
    branch_1 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 256, 3), 384, 3, strides=2, padding="valid")
    branch_pool = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=channel_axis, name="mixed_6a")([branch_0, branch_1, branch_pool])
    for block_idx in range(1, 21):
        x = inception_resnet_block(x, scale=0.1, block_type="block17", block_idx=block_idx)
    branch_0 = conv2d_bn(conv2d_bn(x, 256, 1), 384, 3, strides=2, padding="valid")
    branch_1 = conv2d_bn(conv2d_bn(x, 256, 1), 288, 3, strides=2, padding="valid")
    branch_2 = conv2d_bn(conv2d_bn(conv2d_bn(x, 256, 1), 288, 3), 320, 3, strides=2, padding="valid")
    branch_pool = layers.MaxPooling2D(3, strides=2, padding="valid")(x)
    x = layers.Concatenate(axis=channel_axis, name="mixed_7a")([branch_0, branch_1, branch_2, branch_pool])
    for block_idx in range(1, 10):
        x = inception_resnet_block(x, scale=0.2, block_type="block8", block_idx=block_idx)
    x = inception_resnet_block(x, scale=1.0, activation=None, block_type="block8", block_idx=10)
    return conv2d_bn(x, 1536, 1, name="conv_7b")


def InceptionResNetV2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                      classes=1000, classifier_activation="softmax", name="inception_resnet_v2"):
    """Instantiate Inception-ResNet-v2 (default input 299x299, at least 75x75; inputs scaled to [-1, 1]).

    Arguments as Keras's: ``weights`` is None, ``"imagenet"`` or a weights file's path; ``input_shape`` may be
    given only with ``include_top=False`` unless it is the default; ``pooling`` is None, ``"avg"`` or ``"max"``.
    """
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=299, min_size=75,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = _body(img_input)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    file_name, file_hash = WEIGHTS_FILES[bool(include_top)]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=BASE_WEIGHT_URL + file_name)


def preprocess_input(x, data_format=None):
    """Scale pixels from [0, 255] to [-1, 1] (the "tf" mode); ``x`` is a NumPy array or a tensor."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction: lists of ``(class_id, class_name, score)``."""
    return imagenet_utils.decode_predictions(preds, top=top)
