"""VGG16 and VGG19 (Simonyan & Zisserman, ICLR 2015), as ``keras.applications.vgg16`` / ``vgg19`` build them.

Layer names and order are Keras's, so Keras's ImageNet weight files load; inputs are preprocessed in "caffe" mode.
"""
from __future__ import annotations

from kgraph.applications import imagenet_utils
from kgraph.backend import image_data_format
from kgraph.layers import Conv2D, Dense, Flatten, MaxPooling2D
from kgraph.models import Functional

WEIGHTS = {  # name: ((top file, hash), (no-top file, hash))
    "vgg16": (("vgg16_weights_tf_dim_ordering_tf_kernels.h5", "64373286793e3c8b2b4e3219cbf3544b"),
              ("vgg16_weights_tf_dim_ordering_tf_kernels_notop.h5", "6d6bbae143d832006294945121d1f1fc")),
    "vgg19": (("vgg19_weights_tf_dim_ordering_tf_kernels.h5", "cbe5617147190e668d6c5d5026f83318"),
              ("vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5", "253f8cb515780f3b799900260a226db6")),
}
# Convolutions per block: VGG16 has 2, 2, 3, 3, 3; VGG19 2, 2, 4, 4, 4.
BLOCKS = {"vgg16": (2, 2, 3, 3, 3), "vgg19": (2, 2, 4, 4, 4)}
FILTERS = (64, 128, 256, 512, 512)


def _vgg(kind, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=224, min_size=32,
                                                    data_format=image_data_format(), require_flatten=include_top,
                                                    weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = img_input
    for block, (convs, filters) in enumerate(zip(BLOCKS[kind], FILTERS), start=1):
        for conv in range(1, convs + 1):
            x = Conv2D(filters, (3, 3), activation="relu", padding="same", name=f"block{block}_conv{conv}")(x)
        x = MaxPooling2D((2, 2), strides=(2, 2), name=f"block{block}_pool")(x)
    if include_top:
        x = Flatten(name="flatten")(x)
        x = Dense(4096, activation="relu", name="fc1")(x)
        x = Dense(4096, activation="relu", name="fc2")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling)
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    file_name, file_hash = WEIGHTS[kind][0 if include_top else 1]
    origin = f"{imagenet_utils.KERAS_APPLICATIONS}{kind}/{file_name}"
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=origin)


def VGG16(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
          classifier_activation="softmax", name="vgg16"):
    """The VGG16 model (default input 224x224x3, at least 32x32).

    ``include_top``: the 3 fully-connected layers on top; ``weights``: None, ``"imagenet"`` or a weights file;
    ``input_tensor``/``input_shape``: the image input; ``pooling``: None, ``"avg"`` or ``"max"`` when
    ``include_top`` is False; ``classes`` and ``classifier_activation``: the top classifier's.
    """
    return _vgg("vgg16", include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
                name)


def VGG19(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
          classifier_activation="softmax", name="vgg19"):
    """The VGG19 model (default input 224x224x3, at least 32x32); arguments as ``VGG16``'s."""
    return _vgg("vgg19", include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation,
                name)


def preprocess_input(x, data_format=None):
    """RGB -> BGR, then each channel zero-centered by ImageNet's mean pixel, without scaling ("caffe" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction row (see ``imagenet_utils.decode_predictions``)."""
    return imagenet_utils.decode_predictions(preds, top=top)
