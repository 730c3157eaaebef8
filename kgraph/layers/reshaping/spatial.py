"""Spatial resizing layers: UpSampling, ZeroPadding and Cropping in 1D and 2D (channels last)."""
import numpy as np

from kgraph import ops
from kgraph.layers.arguments import check_data_format
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops.kernels.windows import normalize_tuple


def normalize_pairs(layer, value, rank, name):
    """``value`` as ``rank`` pairs ``(before, after)`` of non-negative ints.

    Accepts an int (the same everywhere), ``rank`` ints (symmetric per axis) or
    ``rank`` pairs; for ``rank == 1`` a single pair is ``(before, after)``.
    """
    def pair(item):
        if isinstance(item, (int, np.integer)):
            return int(item), int(item)
        item = tuple(item)
        if len(item) != 2 or not all(isinstance(v, (int, np.integer)) for v in item):
            raise TypeError
        return int(item[0]), int(item[1])

    try:
        if isinstance(value, (int, np.integer)):
            pairs = ((int(value), int(value)),) * rank
        elif rank == 1:
            pairs = (pair(value),)
        else:
            items = tuple(value)
            if len(items) != rank:
                raise TypeError
            pairs = tuple(pair(v) for v in items)
    except TypeError:
        raise ValueError(f"Layer '{layer.name}': `{name}` must be an int, a tuple of {rank} ints or a tuple of "
                         f"{rank} tuples of 2 ints. Received: {name}={value!r}") from None
    if any(v < 0 for p in pairs for v in p):
        raise ValueError(f"Layer '{layer.name}': `{name}` must be non-negative. Received: {name}={value!r}")
    return pairs


class _Spatial(Layer):
    """A shape-only layer over ``rank`` spatial axes of channels-last data; keeps the input dtype."""

    rank = None
    _preserves_dtype = True

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def get_config(self):
        config = super().get_config()
        if self.rank > 1:
            config["data_format"] = self.data_format
        return config


class UpSampling1D(_Spatial):
    """Repeats each step ``size`` times along the steps axis."""

    rank = 1

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = normalize_tuple(size, 1, "size")

    def call(self, inputs):
        return ops.repeat(inputs, self.size[0], axis=1)

    def compute_output_shape(self, input_shape):
        n = input_shape[1]
        return (input_shape[0], None if n is None else n * self.size[0], input_shape[2])

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size[0]
        return config


class UpSampling2D(_Spatial):
    """Repeats rows and columns ``size`` times (nearest-neighbour upsampling), or resizes the images to ``size``
    times their size with bilinear interpolation (``interpolation="bilinear"``, Keras's ``image.resize``)."""

    rank = 2

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.size = normalize_tuple(size, 2, "size")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"Layer '{self.name}' supports interpolation='nearest' or 'bilinear' (kgraph's image "
                             f"resize has no {interpolation!r}). Received: interpolation={interpolation!r}")
        self.interpolation = interpolation

    def call(self, inputs):
        if self.interpolation == "bilinear":
            height, width = ops.shape(inputs)[1:3]
            return ops.image.resize(inputs, (height * self.size[0], width * self.size[1]), interpolation="bilinear")
        rows = ops.repeat(inputs, self.size[0], axis=1)
        return ops.repeat(rows, self.size[1], axis=2)

    def compute_output_shape(self, input_shape):
        spatial = tuple(None if n is None else n * s for n, s in zip(input_shape[1:3], self.size))
        return (input_shape[0],) + spatial + (input_shape[3],)

    def get_config(self):
        config = super().get_config()
        config.update({"size": self.size, "interpolation": self.interpolation})
        return config


class _ZeroPadding(_Spatial):
    """Adds rows/steps of zeros before and after each spatial axis."""

    def __init__(self, padding, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.padding = normalize_pairs(self, padding, self.rank, "padding")

    def call(self, inputs):
        return ops.pad(inputs, ((0, 0),) + self.padding + ((0, 0),))

    def compute_output_shape(self, input_shape):
        spatial = tuple(None if n is None else n + b + a for n, (b, a) in zip(input_shape[1:-1], self.padding))
        return (input_shape[0],) + spatial + (input_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config["padding"] = self.padding[0] if self.rank == 1 else self.padding
        return config


class ZeroPadding1D(_ZeroPadding):
    """Pads the steps axis: ``padding`` is an int or ``(before, after)``."""

    rank = 1

    def __init__(self, padding=1, **kwargs):
        super().__init__(padding, **kwargs)


class ZeroPadding2D(_ZeroPadding):
    """Pads rows and columns: an int, ``(rows, cols)`` or ``((top, bottom), (left, right))``."""

    rank = 2

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(padding, data_format=data_format, **kwargs)


class _Cropping(_Spatial):
    """Removes cells at the start and end of each spatial axis."""

    def __init__(self, cropping, data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.cropping = normalize_pairs(self, cropping, self.rank, "cropping")

    def _check(self, input_shape):
        for n, (b, a) in zip(input_shape[1:-1], self.cropping):
            if n is not None and b + a >= n:
                raise ValueError(f"Layer '{self.name}': cropping {self.cropping} leaves nothing of an input of "
                                 f"shape {tuple(input_shape)}; expected the cropping to be smaller than each "
                                 "spatial dimension.")

    def call(self, inputs):
        self._check(np.shape(inputs))
        key = (slice(None),) + tuple(slice(b, n - a) for n, (b, a) in zip(np.shape(inputs)[1:-1], self.cropping))
        return ops.getitem(inputs, key)

    def compute_output_shape(self, input_shape):
        self._check(input_shape)
        spatial = tuple(None if n is None else n - b - a for n, (b, a) in zip(input_shape[1:-1], self.cropping))
        return (input_shape[0],) + spatial + (input_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config["cropping"] = self.cropping[0] if self.rank == 1 else self.cropping
        return config


class Cropping1D(_Cropping):
    """Crops the steps axis: ``cropping`` is an int or ``(start, end)``."""

    rank = 1

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(cropping, **kwargs)


class Cropping2D(_Cropping):
    """Crops rows and columns: an int, ``(rows, cols)`` or ``((top, bottom), (left, right))``."""

    rank = 2

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(cropping, data_format=data_format, **kwargs)
