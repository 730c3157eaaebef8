"""Zoo model of the filtering augmentation layers: random in training, identities in the exported graph."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("augmentation_filters")
def augmentation_filters():
    """Gaussian blur and elastic warps (both data formats) in front of a small CNN, trained with them active."""
    image = kgraph.Input(shape=(8, 8, 3), name="image")
    h = L.RandomGaussianBlur(kernel_size=(3, 5), sigma=(0.3, 0.8), value_range=(-4, 4), seed=1)(image)
    h = L.RandomElasticTransform(scale=0.8, value_range=(-4, 4), seed=2)(h)
    h = L.Permute((3, 1, 2))(L.Conv2D(4, 3, padding="same", activation="relu")(h))
    h = L.RandomElasticTransform(factor=(0.5, 1.0), interpolation="nearest", fill_mode="constant", seed=3,
                                 data_format="channels_first")(h)
    h = L.RandomGaussianBlur(factor=(1.0, 1.0), data_format="channels_first", seed=4)(h)
    return train_briefly(kgraph.Model(image, L.Dense(2)(L.Flatten()(h)), name="augmentation_filters"))
