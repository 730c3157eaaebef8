"""ResNet50V2/101V2/152V2 (He et al., ECCV 2016: pre-activation), as ``keras.applications.resnet_v2`` builds them.

Inputs are preprocessed in "tf" mode (scaled to [-1, 1]).
"""
from __future__ import annotations

from kgraph.applications import imagenet_utils
from kgraph.applications.resnet import ResNet, stack_residual_blocks_v2

DEPTHS = {"resnet50v2": (3, 4, 6, 3), "resnet101v2": (3, 4, 23, 3), "resnet152v2": (3, 8, 36, 3)}


def _stages_v2(depths):
    def stack_fn(x):
        x = stack_residual_blocks_v2(x, 64, depths[0], name="conv2")
        x = stack_residual_blocks_v2(x, 128, depths[1], name="conv3")
        x = stack_residual_blocks_v2(x, 256, depths[2], name="conv4")
        return stack_residual_blocks_v2(x, 512, depths[3], stride1=1, name="conv5")
    return stack_fn


def _resnet_v2(kind, include_top, weights, input_tensor, input_shape, pooling, classes, classifier_activation, name):
    return ResNet(_stages_v2(DEPTHS[kind]), True, True, name=name, weights_name=kind, include_top=include_top,
                  weights=weights, input_tensor=input_tensor, input_shape=input_shape, pooling=pooling,
                  classes=classes, classifier_activation=classifier_activation)


def ResNet50V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
               classifier_activation="softmax", name="resnet50v2"):
    """ResNet50V2 (default input 224x224x3, at least 32x32); arguments as ``resnet.ResNet50``'s."""
    return _resnet_v2("resnet50v2", include_top, weights, input_tensor, input_shape, pooling, classes,
                      classifier_activation, name)


def ResNet101V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
                classifier_activation="softmax", name="resnet101v2"):
    """ResNet101V2; arguments as ``resnet.ResNet50``'s."""
    return _resnet_v2("resnet101v2", include_top, weights, input_tensor, input_shape, pooling, classes,
                      classifier_activation, name)


def ResNet152V2(include_top=True, weights="imagenet", input_tensor=None, input_shape=None, pooling=None, classes=1000,
                classifier_activation="softmax", name="resnet152v2"):
    """ResNet152V2; arguments as ``resnet.ResNet50``'s."""
    return _resnet_v2("resnet152v2", include_top, weights, input_tensor, input_shape, pooling, classes,
                      classifier_activation, name)


def preprocess_input(x, data_format=None):
    """Pixels scaled to [-1, 1], sample-wise ("tf" mode)."""
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each prediction row (see ``imagenet_utils.decode_predictions``)."""
    return imagenet_utils.decode_predictions(preds, top=top)
