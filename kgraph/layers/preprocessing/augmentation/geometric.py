"""Geometric augmentation layers of Keras 3 (shear, perspective, erasing).

Like the other random layers they act only when called with ``training=True``. Each draws its random parameters
with NumPy (``sample_*``) and applies them with ops (``apply_*``), so the images stay differentiable and a given
set of parameters can be replayed. They take an image batch, one image, or Keras's dict form
``{"images": ..., "labels": ...}`` (the labels pass through unchanged).
"""
import numpy as np

from kgraph import ops
from kgraph.layers.preprocessing.augmentation.basic import _RandomAffine, _RandomLayer, affine_sample, factor_range
from kgraph.ops import image as image_ops

__all__ = ["RandomErasing", "RandomPerspective", "RandomShear"]

_DICT_KEYS = ("images", "labels")


def split_inputs(layer, inputs):
    """``(images, labels)`` of an image tensor (labels ``None``) or of a dict ``{"images": ..., "labels": ...}``."""
    if not isinstance(inputs, dict):
        return inputs, None
    if "images" not in inputs or set(inputs) - set(_DICT_KEYS):
        raise ValueError(f"{type(layer).__name__} takes an image tensor or a dict with the keys 'images' and "
                         f"(optionally) 'labels'. Received: keys={sorted(inputs)}")
    return inputs["images"], inputs.get("labels")


def join_outputs(inputs, images, labels):
    """The outputs in the form of ``inputs``: the images alone, or the dict with its entries replaced."""
    if not isinstance(inputs, dict):
        return images
    outputs = dict(inputs, images=images)
    if "labels" in inputs:
        outputs["labels"] = labels
    return outputs


def same_shape(input_shape):
    """The output shape of a layer that keeps its input's structure and shapes (a shape or a dict of them)."""
    return dict(input_shape) if isinstance(input_shape, dict) else tuple(input_shape)


def random_box(rng, batch, height, width, ratio_x, ratio_y):
    """Corners ``(x0, x1, y0, y1)`` of one box per image, ``ratio`` times the image's width and height long,
    placed uniformly at random inside it (Keras's rule: continuous, not snapped to pixels)."""
    corners = []
    for length, ratio in ((width, ratio_x), (height, ratio_y)):
        size = ratio * length
        start = rng.uniform(size=batch) * (length - size)
        corners += [start, start + size]
    return tuple(corners)


def box_mask(box, height, width):
    """``(batch, height, width, 1)`` booleans: pixel (row, col) lies in ``[x0, x1) x [y0, y1)`` of its image."""
    x0, x1, y0, y1 = (np.asarray(c, dtype=np.float64)[:, None] for c in box)
    cols, rows = np.arange(width), np.arange(height)
    inside_x = (cols >= x0) & (cols < x1)
    inside_y = (rows >= y0) & (rows < y1)
    return (inside_y[:, :, None] & inside_x[:, None, :])[..., None]


class _ImagesOrDict:
    """Lets a random image layer take Keras's dict form: the images are transformed, the labels kept."""

    def call(self, inputs, training=True):
        images, labels = split_inputs(self, inputs)
        return join_outputs(inputs, super().call(images, training), labels)

    def compute_output_shape(self, input_shape):
        return same_shape(input_shape)


def _shear_range(name, factor):
    """Keras's shear factor parsing: a number ``f`` in [0, 1] gives ``(-f, f)``; a pair is sorted.

    Keras also asks a pair to lie in [0, 1], which rejects its own configs (``0.2`` is stored as ``(-0.2, 0.2)``);
    here a pair may lie in [-1, 1], so that a saved layer loads.
    """
    message = (f"The `{name}` argument should be a number in the range [0, 1.0] (or a list of two numbers in "
               f"[-1.0, 1.0]). Received: {name}={factor}")
    pair = isinstance(factor, (tuple, list))
    values = list(factor) if pair else [factor]
    if (pair and len(values) != 2) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                              for v in values):
        raise ValueError(message)
    if not all((-1.0 if pair else 0.0) <= v <= 1.0 for v in values):
        raise ValueError(message)
    return tuple(sorted(values)) if pair else (-factor, factor)


class RandomShear(_ImagesOrDict, _RandomAffine):
    """Shears each image about its top-left corner: the output pixel (x, y) reads the input at
    ``(x + s_x * y, y + s_y * x)``, with ``s_x`` drawn in ``x_factor``, ``s_y`` in ``y_factor`` and one random
    sign for both (Keras's rule)."""

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                 data_format=None, seed=None, **kwargs):
        super().__init__(fill_mode=fill_mode, interpolation=interpolation, seed=seed, fill_value=fill_value,
                         data_format=data_format, **kwargs)
        self.x_factor = _shear_range("x_factor", x_factor)
        self.y_factor = _shear_range("y_factor", y_factor)

    def sample_shear(self, batch):
        """``(batch, 2)`` shear factors ``(s_x, s_y)``."""
        sign = np.where(self.rng.uniform(size=batch) > 0.5, -1.0, 1.0)
        shear_y = self.rng.uniform(*self.y_factor, size=batch)
        shear_x = self.rng.uniform(*self.x_factor, size=batch)
        return np.stack([shear_x, shear_y], axis=-1) * sign[:, None]

    def apply_shear(self, x, shear):
        """NHWC images ``x`` sheared by the ``(batch, 2)`` factors ``shear``."""
        batch = len(shear)
        matrices = np.zeros((batch, 2, 3))
        # (row, col) read from: (row + s_y * col, s_x * row + col).
        matrices[:, 0, 0] = matrices[:, 1, 1] = 1.0
        matrices[:, 0, 1], matrices[:, 1, 0] = shear[:, 1], shear[:, 0]
        return affine_sample(x, matrices, self.interpolation, self.fill_mode, self.fill_value)

    def augment(self, x):
        return self.apply_shear(x, self.sample_shear(x.shape[0]))

    def get_config(self):
        config = super().get_config()
        config.update({"x_factor": self.x_factor, "y_factor": self.y_factor})
        return config


class RandomPerspective(_ImagesOrDict, _RandomLayer):
    """With a probability drawn in ``factor``, warps each image so that its corners move by up to ``scale / 2``
    of their coordinates (the top-left corner stays), filling the uncovered area with ``fill_value``."""

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_value=0.0, seed=None,
                 data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        if not isinstance(scale, (int, float)) or not 0.0 <= scale <= 1.0:
            raise ValueError(f"The `scale` argument should be a number in the range [0,1]. Received: scale={scale}")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      "('nearest', 'bilinear').")
        self.scale = scale
        self.interpolation = interpolation
        self.fill_value = fill_value

    def sample_corners(self, batch, height, width):
        """``(apply, start_points, end_points)``: which images warp, and where their corners (x, y) go."""
        probability = self.rng.uniform(*self.factor, size=batch)
        apply = self.rng.uniform(size=batch) < probability
        offsets = self.rng.uniform(-0.5 * self.scale, 0.5 * self.scale, size=(batch, 4, 2))
        corners = np.array([[0.0, 0.0], [width - 1, 0.0], [0.0, height - 1], [width - 1, height - 1]])
        start = np.broadcast_to(corners, (batch, 4, 2))
        return apply, start, start * (1.0 + offsets)

    def apply_corners(self, x, apply, start, end):
        """NHWC images ``x`` warped from ``start`` to ``end`` corners where ``apply``, unchanged elsewhere."""
        if not np.any(apply):
            return x
        dtype = x.dtype
        warped = image_ops.perspective_transform(x, start.astype(dtype), end.astype(dtype),
                                                 interpolation=self.interpolation, fill_value=self.fill_value)
        return ops.where(np.asarray(apply)[:, None, None, None], warped, x)

    def augment(self, x):
        return self.apply_corners(x, *self.sample_corners(*x.shape[:3]))

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "scale": self.scale, "interpolation": self.interpolation,
                       "fill_value": self.fill_value})
        return config


class RandomErasing(_ImagesOrDict, _RandomLayer):
    """With a probability drawn in ``factor``, replaces a random box of each image, whose sides are
    ``sqrt(u)`` of the image's (``u`` drawn in ``scale`` per side), by ``fill_value``: a number, one value per
    channel, or (``None``) Gaussian noise times ``value_range[1]``; the fill is clipped to ``value_range``."""

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255), seed=None,
                 data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.scale = factor_range("scale", scale, (0, 1))
        number = isinstance(fill_value, (int, float)) and not isinstance(fill_value, bool)
        if not (fill_value is None or number or (isinstance(fill_value, (tuple, list)) and len(fill_value) == 3)):
            raise ValueError("The `fill_value` argument should be a number (or a list of three numbers). "
                             f"Received: fill_value={fill_value}")
        if len(value_range) != 2 or value_range[0] > value_range[1]:
            raise ValueError("The `value_range` argument should be a list of two numbers. "
                             f"Received: value_range={value_range}")
        self.fill_value = fill_value
        self.value_range = value_range

    def sample_erasing(self, shape):
        """``(box, apply, fill)`` for an NHWC batch of ``shape``: the box corners, which images are erased, and
        the ``shape``-sized fill."""
        batch, height, width = shape[:3]
        ratio = np.sqrt(self.rng.uniform(*self.scale, size=(batch, 2)))
        box = random_box(self.rng, batch, height, width, ratio[:, 0], ratio[:, 1])
        probability = self.rng.uniform(*self.factor, size=batch)
        apply = self.rng.uniform(size=batch) < probability
        if self.fill_value is None:
            fill = self.rng.normal(size=shape) * self.value_range[1]
        else:
            fill = np.broadcast_to(np.asarray(self.fill_value, dtype=np.float64), shape)
        return box, apply, np.clip(fill, self.value_range[0], self.value_range[1])

    def apply_erasing(self, x, box, apply, fill):
        """NHWC images ``x`` with ``box`` replaced by ``fill`` where ``apply``."""
        mask = box_mask(box, x.shape[1], x.shape[2]) & np.asarray(apply)[:, None, None, None]
        return ops.where(mask, fill.astype(x.dtype), x)

    def augment(self, x):
        return self.apply_erasing(x, *self.sample_erasing(tuple(x.shape)))

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "scale": self.scale, "fill_value": self.fill_value,
                       "value_range": self.value_range})
        return config
