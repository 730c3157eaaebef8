"""Zoo model of the augmentation policies: they train as augmentations, export as identities."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("augmentation_policies")
def augmentation_policies():
    """RandAugment then AugMix on an RGB image with values in (-3, 3), then a small convolutional head."""
    image = kgraph.Input(shape=(8, 8, 3), name="image")
    h = L.RandAugment(value_range=(-3, 3), num_ops=2, seed=1)(image)
    h = L.AugMix(value_range=(-3, 3), chain_depth=2, seed=2)(h)
    pooled = L.GlobalAveragePooling2D()(L.Conv2D(4, 3, activation="relu")(h))
    return train_briefly(kgraph.Model(image, L.Dense(2)(pooled), name="augmentation_policies"))
