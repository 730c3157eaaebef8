"""``keras.applications``: ImageNet architectures with Keras's layer names, weight files and preprocessing.

Each architecture has its module (``kgraph.applications.resnet``, ...) with its builder(s), ``preprocess_input``
and ``decode_predictions``; ``vgg16``, ``vgg19`` and ``resnet50`` are the modules Keras names them by.
"""
import sys
import types

from kgraph.applications import (
    convnext,
    densenet,
    efficientnet,
    efficientnet_v2,
    imagenet_utils,
    inception_resnet_v2,
    inception_v3,
    mobilenet,
    mobilenet_v2,
    mobilenet_v3,
    resnet,
    resnet_v2,
    vgg,
    xception,
)
from kgraph.applications.convnext import ConvNeXtBase, ConvNeXtLarge, ConvNeXtSmall, ConvNeXtTiny, ConvNeXtXLarge
from kgraph.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from kgraph.applications.efficientnet import (
    EfficientNetB0,
    EfficientNetB1,
    EfficientNetB2,
    EfficientNetB3,
    EfficientNetB4,
    EfficientNetB5,
    EfficientNetB6,
    EfficientNetB7,
)
from kgraph.applications.efficientnet_v2 import (
    EfficientNetV2B0,
    EfficientNetV2B1,
    EfficientNetV2B2,
    EfficientNetV2B3,
    EfficientNetV2L,
    EfficientNetV2M,
    EfficientNetV2S,
)
from kgraph.applications.inception_resnet_v2 import InceptionResNetV2
from kgraph.applications.inception_v3 import InceptionV3
from kgraph.applications.mobilenet import MobileNet
from kgraph.applications.mobilenet_v2 import MobileNetV2
from kgraph.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from kgraph.applications.resnet import ResNet50, ResNet101, ResNet152
from kgraph.applications.resnet_v2 import ResNet50V2, ResNet101V2, ResNet152V2
from kgraph.applications.vgg import VGG16, VGG19
from kgraph.applications.xception import Xception


def _module(name, doc, **members):
    """A submodule ``kgraph.applications.<name>`` holding ``members`` (importable by its dotted name)."""
    module = types.ModuleType(f"{__name__}.{name}", doc)
    module.__dict__.update(members)
    module.__all__ = sorted(members)
    sys.modules[module.__name__] = module
    return module


vgg16 = _module("vgg16", "``keras.applications.vgg16``.", VGG16=VGG16, preprocess_input=vgg.preprocess_input,
                decode_predictions=vgg.decode_predictions)
vgg19 = _module("vgg19", "``keras.applications.vgg19``.", VGG19=VGG19, preprocess_input=vgg.preprocess_input,
                decode_predictions=vgg.decode_predictions)
resnet50 = _module("resnet50", "``keras.applications.resnet50``.", ResNet50=ResNet50,
                   preprocess_input=resnet.preprocess_input, decode_predictions=resnet.decode_predictions)

__all__ = ["MobileNet", "MobileNetV2", "MobileNetV3Large", "MobileNetV3Small", "ResNet50", "ResNet50V2", "ResNet101",
           "ResNet101V2", "ResNet152", "ResNet152V2", "VGG16", "VGG19", "imagenet_utils", "mobilenet", "mobilenet_v2",
           "mobilenet_v3", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19",
           "ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge", "DenseNet121",
           "DenseNet169", "DenseNet201", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
           "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "EfficientNetV2B0",
           "EfficientNetV2B1", "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2L", "EfficientNetV2M",
           "EfficientNetV2S", "InceptionResNetV2", "InceptionV3", "Xception", "convnext", "densenet", "efficientnet",
           "efficientnet_v2", "inception_resnet_v2", "inception_v3", "xception"]
