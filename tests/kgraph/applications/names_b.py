"""The names of ``keras.applications`` that kgraph's second group of architectures provides, and those of that
group it does not provide yet, with the reason."""
NAMES = ("ConvNeXtBase", "ConvNeXtLarge", "ConvNeXtSmall", "ConvNeXtTiny", "ConvNeXtXLarge", "DenseNet121",
         "DenseNet169", "DenseNet201", "EfficientNetB0", "EfficientNetB1", "EfficientNetB2", "EfficientNetB3",
         "EfficientNetB4", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7", "EfficientNetV2B0", "EfficientNetV2B1",
         "EfficientNetV2B2", "EfficientNetV2B3", "EfficientNetV2L", "EfficientNetV2M", "EfficientNetV2S",
         "InceptionResNetV2", "InceptionV3", "Xception", "convnext", "densenet", "efficientnet", "efficientnet_v2",
         "inception_resnet_v2", "inception_v3", "xception")
_NASNET = ("not built yet: NASNet's searched normal and reduction cells; Keras 3.15's own NASNetMobile refuses the "
           "torch backend, so no reference model runs here to compare with")
UNPROVIDED = {"NASNetLarge": _NASNET, "NASNetMobile": _NASNET, "nasnet": _NASNET}
