"""``keras.applications.inception_v3``: Inception-v3 (Szegedy et al., CVPR 2016), Keras's layers and weights."""
from kgraph import backend, layers
from kgraph.applications import imagenet_utils
from kgraph.models import Functional

WEIGHTS_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/inception_v3/"
WEIGHTS_FILES = {
    True: ("inception_v3_weights_tf_dim_ordering_tf_kernels.h5", "9a0d58056eeedaa3f26cb7ebd46da564"),
    False: ("inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5", "bcbd6486424b2319ff4ef7d526e38f63"),
}


def conv2d_bn(x, filters, num_row, num_col, padding="same", strides=(1, 1), name=None):
    """Convolution (no bias), batch normalization without scale, ReLU; ``name`` names the three layers."""
    bn_axis = 1 if backend.image_data_format() == "channels_first" else 3
    conv_name, bn_name = (None, None) if name is None else (f"{name}_conv", f"{name}_bn")
    x = layers.Conv2D(filters, (num_row, num_col), strides=strides, padding=padding, use_bias=False,
                      name=conv_name)(x)
    x = layers.BatchNormalization(axis=bn_axis, scale=False, name=bn_name)(x)
    return layers.Activation("relu", name=name)(x)


def _pool_branch(x, filters):
    branch = layers.AveragePooling2D((3, 3), strides=(1, 1), padding="same")(x)
    return conv2d_bn(branch, filters, 1, 1)


def _block_35(x, pool_filters, name, axis):
    """The 35x35 module: 1x1, 1x1 -> 5x5, 1x1 -> 3x3 -> 3x3 and pooling branches (``mixed0``..``mixed2``)."""
    branch1x1 = conv2d_bn(x, 64, 1, 1)
    branch5x5 = conv2d_bn(conv2d_bn(x, 48, 1, 1), 64, 5, 5)
    branch3x3dbl = conv2d_bn(conv2d_bn(conv2d_bn(x, 64, 1, 1), 96, 3, 3), 96, 3, 3)
    branch_pool = _pool_branch(x, pool_filters)
    return layers.concatenate([branch1x1, branch5x5, branch3x3dbl, branch_pool], axis=axis, name=name)


def _block_17(x, width, name, axis):
    """The 17x17 module with factorized 7x7 convolutions of ``width`` inner filters (``mixed4``..``mixed7``)."""
    branch1x1 = conv2d_bn(x, 192, 1, 1)
    branch7x7 = conv2d_bn(x, width, 1, 1)
    branch7x7 = conv2d_bn(branch7x7, width, 1, 7)
    branch7x7 = conv2d_bn(branch7x7, 192, 7, 1)
    branch7x7dbl = conv2d_bn(x, width, 1, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, width, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, width, 1, 7)
    branch7x7dbl = conv2d_bn(branch7x7dbl, width, 7, 1)
    branch7x7dbl = conv2d_bn(branch7x7dbl, 192, 1, 7)
    branch_pool = _pool_branch(x, 192)
    return layers.concatenate([branch1x1, branch7x7, branch7x7dbl, branch_pool], axis=axis, name=name)


def _block_8(x, index, axis):
    """The 8x8 module with split 1x3 / 3x1 branches (``mixed9``, ``mixed10``)."""
    branch1x1 = conv2d_bn(x, 320, 1, 1)
    branch3x3 = conv2d_bn(x, 384, 1, 1)
    branch3x3 = layers.concatenate([conv2d_bn(branch3x3, 384, 1, 3), conv2d_bn(branch3x3, 384, 3, 1)], axis=axis,
                                   name=f"mixed9_{index}")
    branch3x3dbl = conv2d_bn(conv2d_bn(x, 448, 1, 1), 384, 3, 3)
    branch3x3dbl = layers.concatenate([conv2d_bn(branch3x3dbl, 384, 1, 3), conv2d_bn(branch3x3dbl, 384, 3, 1)],
                                      axis=axis)
    branch_pool = _pool_branch(x, 192)
    return layers.concatenate([branch1x1, branch3x3, branch3x3dbl, branch_pool], axis=axis, name=f"mixed{9 + index}")


def _inception_body(x, axis):
    x = conv2d_bn(x, 32, 3, 3, strides=(2, 2), padding="valid")
    x = conv2d_bn(x, 32, 3, 3, padding="valid")
    x = conv2d_bn(x, 64, 3, 3)
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = conv2d_bn(x, 80, 1, 1, padding="valid")
    x = conv2d_bn(x, 192, 3, 3, padding="valid")
    x = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    for index, pool_filters in enumerate((32, 64, 64)):
        x = _block_35(x, pool_filters, f"mixed{index}", axis)
    branch3x3 = conv2d_bn(x, 384, 3, 3, strides=(2, 2), padding="valid")
    branch3x3dbl = conv2d_bn(conv2d_bn(x, 64, 1, 1), 96, 3, 3)
    branch3x3dbl = conv2d_bn(branch3x3dbl, 96, 3, 3, strides=(2, 2), padding="valid")
    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([branch3x3, branch3x3dbl, branch_pool], axis=axis, name="mixed3")
    for index, width in enumerate((128, 160, 160, 192)):
        x = _block_17(x, width, f"mixed{4 + index}", axis)
    branch3x3 = conv2d_bn(conv2d_bn(x, 192, 1, 1), 320, 3, 3, strides=(2, 2), padding="valid")
    branch7x7x3 = conv2d_bn(x, 192, 1, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 1, 7)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 7, 1)
    branch7x7x3 = conv2d_bn(branch7x7x3, 192, 3, 3, strides=(2, 2), padding="valid")
    branch_pool = layers.MaxPooling2D((3, 3), strides=(2, 2))(x)
    x = layers.concatenate([branch3x3, branch7x7x3, branch_pool], axis=axis, name="mixed8")
    for index in range(2):
        x = _block_8(x, index, axis)
    return x


def InceptionV3(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="inception_v3"):
    """Instantiate the Inception-v3 architecture (default input 299x299, at least 75x75; inputs in [-1, 1]).

    Arguments as Keras's: ``weights`` is None, ``"imagenet"`` or a weights file's path; ``input_shape`` may be
    given only with ``include_top=False`` unless it is the default; ``pooling`` is None, ``"avg"`` or ``"max"``.
    """
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=299, min_size=75,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    axis = 1 if backend.image_data_format() == "channels_first" else 3
    x = _inception_body(img_input, axis)
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
