"""Zoo model of the random color layers: they train as augmentations and export as identities."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("augmentation_color")
def augmentation_color():
    """Every color augmentation on an RGB image, then a small convolutional head."""
    image = kgraph.Input(shape=(8, 8, 3), name="image")
    h = L.RandomColorJitter(value_range=(-3, 3), brightness_factor=0.1, contrast_factor=0.2,
                            saturation_factor=(0.4, 0.6), hue_factor=0.1)(image)
    h = L.RandomHue(0.2, value_range=(-3, 3))(h)
    h = L.RandomSaturation((0.3, 0.7), value_range=(-3, 3))(h)
    h = L.RandomColorDegeneration(0.3, value_range=(-3, 3))(h)
    h = L.RandomGrayscale(0.2)(h)
    h = L.RandomSharpness(0.4, value_range=(-3, 3))(h)
    h = L.RandomInvert(0.3, value_range=(-3, 3))(h)
    pooled = L.GlobalAveragePooling2D()(L.Conv2D(4, 3, activation="relu")(h))
    return train_briefly(kgraph.Model(image, L.Dense(2)(pooled), name="augmentation_color"))
