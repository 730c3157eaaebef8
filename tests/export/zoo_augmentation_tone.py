"""Zoo model of the tone-curve layers: CLAHE and AutoContrast act at inference (traced into ops); posterization,
solarization and equalization act only in training and export as identities."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


def _pixels(name, shape, dtype, rng):
    """Images in the layers' value range [0, 255]."""
    return rng.uniform(0, 255, size=shape).astype(dtype)


@register_zoo_model("augmentation_tone", sampler=_pixels)
def augmentation_tone():
    """Tone curves on 7x10 images (CLAHE pads them to its 2x3 grid), then a small classifier head."""
    image = kgraph.Input(shape=(7, 10, 3), name="image")
    h = L.Solarization(addition_factor=0.1, threshold_factor=0.8)(L.RandomPosterization((3, 6))(image))
    h = L.Equalization(bins=64)(h)
    # CLAHE quantizes its input to 8-bit levels, so it reads the exact input: after float arithmetic that
    # onnxruntime may round differently, a pixel could move to the next level.
    h = L.AutoContrast()(L.ContrastLimitedAdaptiveHistogramEqualization(clip_limit=3.0, tile_grid_size=(2, 3))(h))
    h = L.Rescaling(1 / 255)(h)
    pooled = L.GlobalAveragePooling2D()(L.Conv2D(4, 3, activation="relu")(h))
    return train_briefly(kgraph.Model(image, L.Dense(2)(pooled), name="augmentation_tone"))
