"""UpSampling3D, ZeroPadding3D and Cropping3D of volumes ``(batch, d1, d2, d3, channels)``."""
from kgraph import ops
from kgraph.layers.reshaping.spatial import _Cropping, _Spatial, _ZeroPadding
from kgraph.ops.kernels.windows import normalize_tuple


class UpSampling3D(_Spatial):
    """Repeats the cells of each spatial axis ``size`` times (nearest-neighbour upsampling)."""

    rank = 3

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.size = normalize_tuple(size, 3, "size")

    def call(self, inputs):
        out = inputs
        for axis, repeats in enumerate(self.size, start=1):
            out = ops.repeat(out, repeats, axis=axis)
        return out

    def compute_output_shape(self, input_shape):
        spatial = tuple(None if n is None else n * s for n, s in zip(input_shape[1:4], self.size))
        return (input_shape[0],) + spatial + (input_shape[4],)

    def get_config(self):
        config = super().get_config()
        config["size"] = self.size
        return config


class ZeroPadding3D(_ZeroPadding):
    """Pads the spatial axes: an int, ``(d1, d2, d3)`` or three ``(before, after)`` pairs."""

    rank = 3

    def __init__(self, padding=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(padding, data_format=data_format, **kwargs)


class Cropping3D(_Cropping):
    """Crops the spatial axes: an int, ``(d1, d2, d3)`` or three ``(start, end)`` pairs."""

    rank = 3

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(cropping, data_format=data_format, **kwargs)
