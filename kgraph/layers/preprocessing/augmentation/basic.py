"""Random image augmentation layers.

As in Keras 3, ``training`` defaults to True: a direct call (a data pipeline,
``model(x)``) augments; ``fit`` passes ``training=True``, and ``predict``,
``evaluate`` and the exporter pass ``training=False``, where they are identities.
"""
import math

import numpy as np

from kgraph import ops
from kgraph.backend.autodiff import no_inputs, primitive
from kgraph.layers.layer import Layer
from kgraph.layers.preprocessing.image import crop_axis, smart_resize, spatial_axes, standardize_data_format
from kgraph.random import generator

FILL_MODES = ("reflect", "wrap", "constant", "nearest")


def factor_range(name, factor, bounds):
    """``(lower, upper)`` from a number ``f`` (``(-f, f)`` clipped to ``bounds``) or a pair, as Keras reads them."""
    message = (f"The `{name}` argument should be a number (or a list of two numbers) in the range "
               f"[{bounds[0]}, {bounds[1]}]. Received: {name}={factor}")
    if isinstance(factor, (tuple, list)):
        if len(factor) != 2 or factor[0] > bounds[1] or factor[1] < bounds[0]:
            raise ValueError(message)
        return tuple(sorted(float(f) for f in factor))
    if not isinstance(factor, (int, float)) or not bounds[0] <= factor <= bounds[1]:
        raise ValueError(message)
    return (max(-abs(float(factor)), bounds[0]), abs(float(factor)))


@primitive(num_inputs=0)
def drawn(draw, *args):
    """``draw(*args)``: the arrays a random layer draws for a batch (its random parameters and what it derives
    from them without a gradient), as one op without inputs, so that a replayed training step draws anew at
    every step, from the same generator in the same order as the step run as written (as ``Dropout``'s mask)."""
    return draw(*args), no_inputs


class _RandomLayer(Layer):
    """Shared state of the random layers: seed, generator, data format; ``call`` runs ``augment`` in training
    (the default, as in Keras)."""

    _preserves_dtype = True

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self.data_format = standardize_data_format(data_format)
        self._rng = np.random.default_rng(seed) if seed is not None else None

    @property
    def rng(self):
        return self._rng or generator()

    def call(self, inputs, training=True):
        if not training:
            return inputs
        spatial_axes(len(inputs.shape), self.data_format)  # a rank other than 3 or 4 is a clear error
        x = inputs if len(inputs.shape) == 4 else ops.expand_dims(inputs, 0)
        if self.data_format == "channels_first":
            x = ops.moveaxis(x, 1, -1)
        x = self.augment(x)
        if self.data_format == "channels_first":
            x = ops.moveaxis(x, -1, 1)
        return x if len(inputs.shape) == 4 else ops.squeeze(x, 0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "seed": self.seed})
        return config


def _fill(index, size, fill_mode):
    """Source indices mapped into ``[0, size)`` by ``fill_mode``, and whether each was inside the image."""
    inside = (index >= 0) & (index < size)
    if fill_mode == "reflect":
        index = np.mod(index, 2 * size)
        index = np.where(index >= size, 2 * size - 1 - index, index)
    elif fill_mode == "wrap":
        index = np.mod(index, size)
    else:
        index = np.clip(index, 0, size - 1)
    return index, inside | (fill_mode != "constant")


def sample_plan(matrices, shape, dtype, interpolation, fill_mode, fill_value):
    """What ``affine_sample`` reads, as a list of arrays: for each interpolation corner the flat source index of
    every output pixel and its weight (0 outside the image under the ``constant`` fill), then the constant fill's
    term where there is one (an odd length)."""
    batch, height, width, channels = shape
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    points = np.stack([rows.ravel(), cols.ravel(), np.ones(height * width)])
    src_r, src_c = np.einsum("bij,jp->ibp", matrices, points)
    if interpolation == "nearest":
        corners = [(np.round(src_r), np.round(src_c), np.ones_like(src_r))]
    else:
        r0, c0 = np.floor(src_r), np.floor(src_c)
        fr, fc = src_r - r0, src_c - c0
        corners = [(r0, c0, (1 - fr) * (1 - fc)), (r0, c0 + 1, (1 - fr) * fc),
                   (r0 + 1, c0, fr * (1 - fc)), (r0 + 1, c0 + 1, fr * fc)]
    plan, fill_weight = [], np.zeros_like(src_r)
    for r, c, weight in corners:
        r, r_inside = _fill(r.astype(np.int64), height, fill_mode)
        c, c_inside = _fill(c.astype(np.int64), width, fill_mode)
        inside = r_inside & c_inside
        plan.append(np.broadcast_to((r * width + c)[..., None], (batch, height * width, channels)))
        plan.append((weight * inside)[..., None].astype(dtype))
        fill_weight = fill_weight + weight * ~inside
    if fill_mode == "constant" and fill_value != 0:
        plan.append((fill_value * fill_weight[..., None]).astype(dtype))
    return plan


def apply_plan(images, plan):
    """``images`` resampled by a ``sample_plan``: the weighted sum of the corners' pixels, plus the fill."""
    batch, height, width, channels = images.shape
    flat = ops.reshape(images, (batch, height * width, channels))
    out, corners = None, len(plan) // 2
    for index, weight in zip(plan[:2 * corners:2], plan[1:2 * corners:2]):
        term = ops.multiply(ops.take_along_axis(flat, index, axis=1), weight)
        out = term if out is None else ops.add(out, term)
    if len(plan) % 2:
        out = ops.add(out, plan[-1])
    return ops.reshape(out, (batch, height, width, channels))


def affine_sample(images, matrices, interpolation, fill_mode, fill_value):
    """Each output pixel ``p`` of image ``b`` reads the input at ``matrices[b] @ (row, col, 1)``."""
    return apply_plan(images, sample_plan(matrices, tuple(images.shape), np.dtype(images.dtype), interpolation,
                                          fill_mode, fill_value))


class _RandomAffine(_RandomLayer):
    """A random affine resampling per image, with Keras's ``fill_mode``/``interpolation``/``fill_value``."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if fill_mode not in FILL_MODES:
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one {FILL_MODES}.")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      "('nearest', 'bilinear').")
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value

    def augment(self, x):
        return apply_plan(x, drawn(self._plan, tuple(x.shape), np.dtype(x.dtype)))

    def _plan(self, shape, dtype):
        """A batch's random transforms, drawn, as the ``sample_plan`` that applies them."""
        batch, height, width = shape[:3]
        centre = np.array([(height - 1) / 2, (width - 1) / 2])
        linear, shift = self.sample_transform(batch, height, width)
        # source = centre + linear @ (p - centre) - shift
        offset = centre - np.einsum("bij,j->bi", linear, centre) - shift
        return tuple(sample_plan(np.concatenate([linear, offset[..., None]], axis=2), shape, dtype,
                                 self.interpolation, self.fill_mode, self.fill_value))

    def get_config(self):
        config = super().get_config()
        config.update({"fill_mode": self.fill_mode, "interpolation": self.interpolation,
                       "fill_value": self.fill_value})
        return config


class RandomRotation(_RandomAffine):
    """Rotates each image by a random fraction of a full turn in ``factor`` (positive: counter-clockwise)."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = factor_range("factor", factor, (-1, 1))

    def sample_transform(self, batch, height, width):
        angle = self.rng.uniform(*self.factor, size=batch) * 2 * math.pi
        cos, sin = np.cos(angle), np.sin(angle)
        return np.stack([np.stack([cos, sin], -1), np.stack([-sin, cos], -1)], 1), np.zeros((batch, 2))

    def get_config(self):
        config = super().get_config()
        config["factor"] = self.factor
        return config


class RandomZoom(_RandomAffine):
    """Zooms each image by ``1 + u`` per axis, ``u`` drawn in the factors (positive: out, negative: in)."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._height_range = factor_range("height_factor", height_factor, (-1, 1))
        self._width_range = factor_range("width_factor", width_factor, (-1, 1)) if width_factor is not None \
            else None

    def sample_transform(self, batch, height, width):
        zoom_h = 1 + self.rng.uniform(*self._height_range, size=batch)
        zoom_w = 1 + self.rng.uniform(*self._width_range, size=batch) if self._width_range else zoom_h
        linear = np.zeros((batch, 2, 2))
        linear[:, 0, 0], linear[:, 1, 1] = zoom_h, zoom_w
        return linear, np.zeros((batch, 2))

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return config


class RandomTranslation(_RandomAffine):
    """Shifts each image by random fractions of its height and width (positive: down and right)."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._ranges = (factor_range("height_factor", height_factor, (-1, 1)),
                        factor_range("width_factor", width_factor, (-1, 1)))

    def sample_transform(self, batch, height, width):
        shift = np.stack([self.rng.uniform(*self._ranges[0], size=batch) * height,
                          self.rng.uniform(*self._ranges[1], size=batch) * width], -1)
        return np.broadcast_to(np.eye(2), (batch, 2, 2)), shift

    def get_config(self):
        config = super().get_config()
        config.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return config


class RandomFlip(_RandomLayer):
    """Flips each image with probability 1/2 along ``mode``'s axes (both at once for horizontal_and_vertical)."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument {mode}")
        self.mode = mode

    def augment(self, x):
        flip = drawn(self._flips, x.shape[0])
        axes = [axis for axis, wanted in ((2, "horizontal"), (1, "vertical")) if wanted in self.mode]
        return ops.where(flip, ops.flip(x, axis=tuple(axes)), x)

    def _flips(self, batch):
        return self.rng.uniform(size=(batch, 1, 1, 1)) <= 0.5

    def get_config(self):
        config = super().get_config()
        config["mode"] = self.mode
        return config


class RandomContrast(_RandomLayer):
    """Scales each image's deviation from its per-channel mean by a factor in ``[1 - lower, 1 + upper]``."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor_range("factor", factor, (0, 1))
        self.value_range = value_range

    def augment(self, x):
        factor = drawn(self._factors, x.shape[0], np.dtype(x.dtype))
        mean = ops.mean(x, axis=(1, 2), keepdims=True)
        out = ops.add(ops.multiply(ops.subtract(x, mean), factor), mean)
        return ops.clip(out, self.value_range[0], self.value_range[1])

    def _factors(self, batch, dtype):
        return self.rng.uniform(1 - self.factor[0], 1 + self.factor[1], size=(batch, 1, 1, 1)).astype(dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomBrightness(_RandomLayer):
    """Adds to each image a random fraction in ``factor`` of the width of ``value_range``, then clips to it."""

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor_range("factor", factor, (-1, 1))
        if len(value_range) != 2 or value_range[0] > value_range[1]:
            raise ValueError("The `value_range` argument should be a list of two numbers. "
                             f"Received: value_range={value_range}")
        self.value_range = list(value_range)

    def augment(self, x):
        delta = drawn(self._deltas, x.shape[0], np.dtype(x.dtype))
        return ops.clip(ops.add(x, delta), self.value_range[0], self.value_range[1])

    def _deltas(self, batch, dtype):
        delta = self.rng.uniform(*self.factor, size=(batch, 1, 1, 1))
        return (delta * (self.value_range[1] - self.value_range[0])).astype(dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"factor": self.factor, "value_range": self.value_range})
        return config


class RandomCrop(_RandomLayer):
    """A random ``(height, width)`` window in training; at inference the largest centred window, resized."""

    def __init__(self, height, width, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, name=name, **kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs, training=True):
        h_axis, w_axis = spatial_axes(len(inputs.shape), self.data_format)
        in_h, in_w = inputs.shape[h_axis], inputs.shape[w_axis]
        if training and in_h >= self.height and in_w >= self.width:
            top = int(self.rng.integers(0, in_h - self.height + 1))
            left = int(self.rng.integers(0, in_w - self.width + 1))
            return crop_axis(crop_axis(inputs, h_axis, top, self.height), w_axis, left, self.width)
        return smart_resize(inputs, self.height, self.width, self.data_format)

    def compute_output_shape(self, input_shape):
        shape = list(input_shape)
        h_axis, w_axis = spatial_axes(len(shape), self.data_format)
        shape[h_axis], shape[w_axis] = self.height, self.width
        return tuple(shape)

    def get_config(self):
        config = super().get_config()
        config.update({"height": self.height, "width": self.width})
        return config
