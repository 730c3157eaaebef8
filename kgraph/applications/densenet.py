"""``keras.applications.densenet``: DenseNet-121/169/201 (Huang et al., CVPR 2017), Keras's layers and weights."""
from kgraph import backend, layers
from kgraph.applications import imagenet_utils
from kgraph.models import Functional

WEIGHTS_BASE = "https://storage.googleapis.com/tensorflow/keras-applications/densenet/"
BLOCKS = {121: (6, 12, 24, 16), 169: (6, 12, 32, 32), 201: (6, 12, 48, 32)}
WEIGHTS_HASHES = {  # depth: (with top, without top)
    121: ("9d60b8095a5708f2dcce2bca79d332c7", "30ee3e1110167f948a6b9946edeeb738"),
    169: ("d699b8f76981ab1b30698df4c175e90b", "b8c4d4c20dd625c148057b9ff1c1176b"),
    201: ("1ceb130c1ea1b78c3bf6114dbdfd8807", "c13680b51ded0fb44dff2d8f86ac8bb1"),
}
_EPSILON = 1.001e-5


def dense_block(x, blocks, name):
    """``blocks`` convolution blocks, each concatenating 32 new channels to its input."""
    for i in range(blocks):
        x = conv_block(x, 32, name=f"{name}_block{i + 1}")
    return x


def transition_block(x, reduction, name):
    """Batch normalization, ReLU, a 1x1 convolution keeping ``reduction`` of the channels, 2x2 average pooling."""
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPSILON, name=f"{name}_bn")(x)
    x = layers.Activation("relu", name=f"{name}_relu")(x)
    x = layers.Conv2D(int(x.shape[bn_axis] * reduction), 1, use_bias=False, name=f"{name}_conv")(x)
    return layers.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)


def conv_block(x, growth_rate, name):
    """The bottleneck block: BN, ReLU, 1x1 conv (4 x ``growth_rate``), BN, ReLU, 3x3 conv; concatenated to ``x``."""
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    x1 = layers.BatchNormalization(axis=bn_axis, epsilon=_EPSILON, name=f"{name}_0_bn")(x)
    x1 = layers.Activation("relu", name=f"{name}_0_relu")(x1)
    x1 = layers.Conv2D(4 * growth_rate, 1, use_bias=False, name=f"{name}_1_conv")(x1)
    x1 = layers.BatchNormalization(axis=bn_axis, epsilon=_EPSILON, name=f"{name}_1_bn")(x1)
    x1 = layers.Activation("relu", name=f"{name}_1_relu")(x1)
    x1 = layers.Conv2D(growth_rate, 3, padding="same", use_bias=False, name=f"{name}_2_conv")(x1)
    return layers.Concatenate(axis=bn_axis, name=f"{name}_concat")([x, x1])


def _densenet_body(img_input, blocks):
    bn_axis = 3 if backend.image_data_format() == "channels_last" else 1
    x = layers.ZeroPadding2D(padding=((3, 3), (3, 3)))(img_input)
    x = layers.Conv2D(64, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPSILON, name="conv1_bn")(x)
    x = layers.Activation("relu", name="conv1_relu")(x)
    x = layers.ZeroPadding2D(padding=((1, 1), (1, 1)))(x)
    x = layers.MaxPooling2D(3, strides=2, name="pool1")(x)
    for stage, count in enumerate(blocks[:3]):
        x = dense_block(x, count, name=f"conv{stage + 2}")
        x = transition_block(x, 0.5, name=f"pool{stage + 2}")
    x = dense_block(x, blocks[3], name="conv5")
    x = layers.BatchNormalization(axis=bn_axis, epsilon=_EPSILON, name="bn")(x)
    return layers.Activation("relu", name="relu")(x)


def DenseNet(blocks, include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
             classes=1000, classifier_activation="softmax", name="densenet"):
    """A DenseNet of four dense blocks of ``blocks`` convolution blocks each (default input 224x224, at least 32).

    ImageNet weights exist for the block counts of DenseNet121, DenseNet169 and DenseNet201 only.
    """
    if backend.image_data_format() == "channels_first":
        raise ValueError("DenseNet does not support the `channels_first` image data format. Switch to "
                         "`channels_last` by editing your local config file at ~/.keras/keras.json")
    imagenet_utils.check_weights_argument(weights, include_top, classes)
    blocks = [int(b) for b in blocks]
    if len(blocks) != 4:
        raise ValueError(f"`blocks` must give the number of convolution blocks of 4 dense blocks. Received: {blocks}")
    depth = next((d for d, b in BLOCKS.items() if list(b) == blocks), None)
    if weights == "imagenet" and depth is None:
        raise ValueError(f"No ImageNet weights exist for a DenseNet with blocks={blocks}; use "
                         f"one of {[list(b) for b in BLOCKS.values()]} or `weights=None`.")
    input_shape = imagenet_utils.obtain_input_shape(input_shape, default_size=224, min_size=32,
                                                    data_format=backend.image_data_format(),
                                                    require_flatten=include_top, weights=weights)
    img_input = imagenet_utils.image_input(input_tensor, input_shape)
    x = _densenet_body(img_input, blocks)
    if include_top:
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
        imagenet_utils.validate_activation(classifier_activation, weights)
        x = layers.Dense(classes, activation=classifier_activation, name="predictions")(x)
    else:
        x = imagenet_utils.pool(x, pooling, avg_name="avg_pool", max_name="max_pool")
    model = Functional(imagenet_utils.model_inputs(input_tensor, img_input), x, name=name)
    if depth is None:  # no ImageNet file for these blocks (refused above when weights="imagenet")
        return imagenet_utils.load_weights(model, weights)
    file_name = f"densenet{depth}_weights_tf_dim_ordering_tf_kernels{'' if include_top else '_notop'}.h5"
    file_hash = WEIGHTS_HASHES[depth][0 if include_top else 1]
    return imagenet_utils.load_weights(model, weights, file_name, file_hash, origin=WEIGHTS_BASE + file_name)


def DenseNet121(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="densenet121"):
    """Instantiate DenseNet-121 (blocks 6, 12, 24, 16); arguments as ``keras.applications.DenseNet121``."""
    return DenseNet(BLOCKS[121], include_top, weights, input_tensor, input_shape, pooling, classes,
                    classifier_activation, name=name)


def DenseNet169(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="densenet169"):
    """Instantiate DenseNet-169 (blocks 6, 12, 32, 32); arguments as ``keras.applications.DenseNet169``."""
    return DenseNet(BLOCKS[169], include_top, weights, input_tensor, input_shape, pooling, classes,
                    classifier_activation, name=name)


def DenseNet201(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None,
                classes=1000, classifier_activation="softmax", name="densenet201"):
    """Instantiate DenseNet-201 (blocks 6, 12, 48, 32); arguments as ``keras.applications.DenseNet201``."""
    return DenseNet(BLOCKS[201], include_top, weights, input_tensor, input_shape, pooling, classes,
                    classifier_activation, name=name)


def preprocess_input(x, data_format=None):
    """Scale pixels to [0, 1], then normalize each channel by ImageNet's mean and std (the "torch" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction: lists of ``(class_id, class_name, score)``."""
    return imagenet_utils.decode_predictions(preds, top=top)
