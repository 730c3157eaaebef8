"""Zoo model of the exportable preprocessing layers: numeric, image (augmentation included) and integer lookups."""
import numpy as np

import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("preprocessing")
def preprocessing():
    """Augmented, resized and rescaled images; adapted Normalization and Discretization on features; an
    IntegerLookup (mask, floormod OOV buckets) feeding an Embedding and a CategoryEncoding of its indices."""
    image = kgraph.Input(shape=(8, 8, 3), name="image")
    features = kgraph.Input(shape=(4,), name="features")
    ids = kgraph.Input(shape=(3,), dtype="int64", name="ids")
    h = L.RandomBrightness(0.1, value_range=(-3, 3))(L.RandomFlip()(image))
    h = L.Rescaling(0.5)(L.Resizing(6, 6)(L.RandomRotation(0.05, fill_mode="constant")(h)))
    pooled = L.GlobalAveragePooling2D()(L.Conv2D(4, 3, activation="relu")(L.CenterCrop(5, 5)(h)))
    normalization = L.Normalization()
    normalization.adapt(np.random.default_rng(0).normal(1.0, 2.0, size=(64, 4)))
    bins = L.Flatten()(L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5], output_mode="one_hot")(features))
    indices = L.IntegerLookup(vocabulary=[1, 2, 3, 5, 8], mask_token=0, num_oov_indices=2)(ids)
    embedded = L.GlobalAveragePooling1D()(L.Embedding(8, 3)(indices))
    counts = L.CategoryEncoding(8, output_mode="count")(indices)
    merged = L.Concatenate()([pooled, L.Dense(4)(normalization(features)), bins, embedded, counts])
    return train_briefly(kgraph.Model([image, features, ids], L.Dense(2)(merged), name="preprocessing"))
