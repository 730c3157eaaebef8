"""Zoo model of the geometric and mixing augmentation layers: they train as augmentations, export as identities."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("augmentation_geometric")
def augmentation_geometric():
    """Shear, perspective, erasing, MixUp and CutMix on an RGB image, then a small convolutional head."""
    image = kgraph.Input(shape=(8, 8, 3), name="image")
    h = L.RandomShear(0.2, 0.1, fill_mode="constant")(image)
    h = L.RandomPerspective(factor=0.5, scale=0.3)(h)
    h = L.RandomErasing(factor=0.5, value_range=(-3, 3))(h)
    h = L.CutMix()(L.MixUp(alpha=0.4)(h))
    pooled = L.GlobalAveragePooling2D()(L.Conv2D(4, 3, activation="relu")(h))
    return train_briefly(kgraph.Model(image, L.Dense(2)(pooled), name="augmentation_geometric"))
