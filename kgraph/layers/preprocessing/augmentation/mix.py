"""Augmentation layers that mix images of a batch (MixUp, CutMix).

Each image is mixed with another image of the same batch, chosen by a random permutation (an image may be drawn
with itself). Given Keras's dict form ``{"images": ..., "labels": ...}``, the labels are mixed with the same
weights; a plain image tensor is mixed the same way. Active only with ``training=True``; a single image (rank 3)
has no partner and comes back unchanged.
"""
import numpy as np

from kgraph import ops
from kgraph.layers.preprocessing.augmentation.basic import _RandomLayer, factor_range
from kgraph.layers.preprocessing.augmentation.geometric import (
    box_mask,
    join_outputs,
    random_box,
    same_shape,
    split_inputs,
)
from kgraph.layers.preprocessing.image import spatial_axes

__all__ = ["CutMix", "MixUp"]


def _per_sample(weight, rank, dtype):
    """``weight`` of shape ``(batch,)`` reshaped to broadcast against a rank-``rank`` batch."""
    return np.reshape(weight, (-1,) + (1,) * (rank - 1)).astype(dtype)


def mix_labels(labels, weight, order, dtype):
    """``weight * labels + (1 - weight) * labels[order]``, per sample, in ``dtype``."""
    labels = ops.cast(labels, dtype)
    weight = _per_sample(weight, len(labels.shape), dtype)
    return ops.add(ops.multiply(labels, weight), ops.multiply(ops.take(labels, order, axis=0), 1 - weight))


class _BatchMix(_RandomLayer):
    """Shared call of the mixing layers: ``mix(images, labels)`` on a batch, in training only."""

    def call(self, inputs, training=True):
        images, labels = split_inputs(self, inputs)
        spatial_axes(len(images.shape), self.data_format)  # a rank other than 3 or 4 is a clear error
        if training and len(images.shape) == 4:
            images, labels = self.mix(images, labels)
        return join_outputs(inputs, images, labels)

    def compute_output_shape(self, input_shape):
        return same_shape(input_shape)


class MixUp(_BatchMix):
    """Blends each image with a partner: ``lam * x_i + (1 - lam) * x_j``, ``lam ~ Beta(alpha, alpha)`` per image;
    the labels get the same ``lam``."""

    def __init__(self, alpha=0.2, data_format=None, seed=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if not isinstance(alpha, (int, float)) or alpha <= 0:
            raise ValueError(f"The `alpha` argument should be a positive number. Received: alpha={alpha}")
        self.alpha = alpha

    def sample_mix(self, batch):
        """``(weight, order)``: each image's own weight ``lam`` and the index of its partner."""
        order = self.rng.permutation(batch)
        return self.rng.beta(self.alpha, self.alpha, size=batch), order

    def apply_mix(self, images, labels, weight, order):
        """The images (and labels, unless ``None``) blended with their partners ``order`` by ``weight``."""
        own = _per_sample(weight, 4, images.dtype)
        images = ops.add(ops.multiply(images, own), ops.multiply(ops.take(images, order, axis=0), 1 - own))
        return images, None if labels is None else mix_labels(labels, weight, order, images.dtype)

    def mix(self, images, labels):
        return self.apply_mix(images, labels, *self.sample_mix(images.shape[0]))

    def get_config(self):
        config = super().get_config()
        config["alpha"] = self.alpha
        return config


class CutMix(_BatchMix):
    """Pastes a random box of each image's partner into it; the box has sides ``sqrt(1 - lam)`` of the image's,
    ``lam ~ Beta(a, a)`` per image with ``a`` drawn in ``factor`` per batch. The labels are mixed by area: the
    partner's label weighs the box's area over the image's (the continuous box, as Keras)."""

    def __init__(self, factor=1.0, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))

    def sample_cut(self, batch, height, width):
        """``(box, order)``: the box corners ``(x0, x1, y0, y1)`` of each image and the index of its partner."""
        # The small offset keeps the Beta parameter positive when `factor` reaches 0.
        alpha = self.rng.uniform(*self.factor) + 1e-6
        ratio = np.sqrt(1.0 - self.rng.beta(alpha, alpha, size=batch))
        box = random_box(self.rng, batch, height, width, ratio, ratio)
        return box, self.rng.permutation(batch)

    def apply_cut(self, images, labels, box, order):
        """The images with their partners' ``box`` pasted in, and the labels (unless ``None``) mixed by area."""
        h_axis, w_axis = spatial_axes(4, self.data_format)
        height, width = images.shape[h_axis], images.shape[w_axis]
        mask = box_mask(box, height, width)
        if self.data_format == "channels_first":
            mask = np.moveaxis(mask, -1, 1)
        images = ops.where(mask, ops.take(images, order, axis=0), images)
        if labels is None:
            return images, None
        x0, x1, y0, y1 = box
        weight = 1.0 - (x1 - x0) * (y1 - y0) / (width * height)
        return images, mix_labels(labels, weight, order, images.dtype)

    def mix(self, images, labels):
        h_axis, w_axis = spatial_axes(4, self.data_format)
        box, order = self.sample_cut(images.shape[0], images.shape[h_axis], images.shape[w_axis])
        return self.apply_cut(images, labels, box, order)

    def get_config(self):
        config = super().get_config()
        config["factor"] = self.factor
        return config
