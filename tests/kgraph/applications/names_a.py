"""The names of ``keras.applications`` that kgraph's first group of architectures provides."""
NAMES = ("MobileNet", "MobileNetV2", "MobileNetV3Large", "MobileNetV3Small", "ResNet101", "ResNet101V2", "ResNet152",
         "ResNet152V2", "ResNet50", "ResNet50V2", "VGG16", "VGG19", "imagenet_utils", "mobilenet", "mobilenet_v2",
         "mobilenet_v3", "resnet", "resnet50", "resnet_v2", "vgg16", "vgg19")
