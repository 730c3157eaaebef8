"""Adaptive pooling in 1D, 2D and 3D: windows chosen so that the output has ``output_size`` cells per spatial axis.

Output cell ``i`` of an axis of ``n`` input cells pools input cells
``floor(i * n / o)`` to ``ceil((i + 1) * n / o) - 1`` (the windows of
Keras 3 and PyTorch: they overlap when ``n`` is not a multiple of ``o``).
The windows of an axis are one ``take`` of an index matrix and a reduction
over its window axis; the axes are pooled one after the other (an axis whose
size is already the output size is left as it is), which for a maximum or a
mean over box windows gives the same values as pooling the boxes.
"""
import numpy as np

from kgraph import ops
from kgraph.layers.arguments import check_data_format
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops.kernels.windows import normalize_tuple


def adaptive_windows(size, output):
    """``(index, lengths)``: the input cells of each of ``output`` windows over ``size`` cells.

    ``index`` is ``(output, widest window)``; a shorter window repeats its
    last cell, which changes neither its maximum nor (with zero weight) its mean.
    """
    cells = np.arange(output)
    starts = cells * size // output
    ends = -(-(cells + 1) * size // output)
    lengths = ends - starts
    index = np.minimum(starts[:, None] + np.arange(lengths.max()), ends[:, None] - 1)
    return index, lengths


class BaseAdaptivePooling(Layer):
    """Adaptive pooling over ``rank`` spatial axes of channels-last data to ``output_size`` cells."""

    rank = None

    def __init__(self, output_size, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.output_size = normalize_tuple(output_size, self.rank, "output_size")
        self.data_format = check_data_format(self, data_format)
        self.input_spec = InputSpec(ndim=self.rank + 2)

    def uniform_windows(self, spatial):
        """The window size per axis if every axis of ``spatial`` is a multiple of ``output_size``, else None."""
        if all(n is not None and n % o == 0 for n, o in zip(spatial, self.output_size)):
            return tuple(n // o for n, o in zip(spatial, self.output_size))
        return None

    def call(self, inputs):
        shape = np.shape(inputs)
        window = self.uniform_windows(shape[1:-1])
        if window is not None:
            return self.pool_function(inputs, window, window)
        out = inputs
        for axis, (n, o) in enumerate(zip(shape[1:-1], self.output_size), start=1):
            if n == o:
                continue
            index, lengths = adaptive_windows(n, o)
            out = self.reduce_windows(ops.take(out, index, axis=axis), axis + 1, lengths)
        return out

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.output_size + (input_shape[-1],)

    def get_config(self):
        config = super().get_config()
        config.update({"output_size": self.output_size, "data_format": self.data_format})
        return config


class _AdaptiveAverage(BaseAdaptivePooling):
    """The mean of each window."""

    @staticmethod
    def pool_function(inputs, pool_size, strides):
        """Average pooling over uniform windows."""
        return ops.average_pool(inputs, pool_size, strides)

    @staticmethod
    def window_weights(width, lengths):
        """``(windows, width)`` weights: ``1 / length`` on each window's cells, 0 on its repeated padding."""
        return (np.arange(width) < lengths[:, None]) / lengths[:, None]

    def reduce_windows(self, gathered, axis, lengths):
        """The mean over ``axis`` of the windows gathered there (their cells on ``axis``, one per ``axis - 1``)."""
        shape = np.shape(gathered)
        weights = self.window_weights(shape[axis], lengths).reshape(shape[axis - 1:axis + 1]
                                                                    + (1,) * (len(shape) - axis - 1))
        return ops.sum(ops.multiply(gathered, weights.astype(gathered.dtype)), axis=axis)


class _AdaptiveMax(BaseAdaptivePooling):
    """The maximum of each window."""

    @staticmethod
    def pool_function(inputs, pool_size, strides):
        """Max pooling over uniform windows."""
        return ops.max_pool(inputs, pool_size, strides)

    def reduce_windows(self, gathered, axis, lengths):
        """The maximum over ``axis`` of the windows gathered there."""
        return ops.max(gathered, axis=axis)


class AdaptiveAveragePooling1D(_AdaptiveAverage):
    """Mean over adaptive windows of ``(batch, steps, channels)`` to ``output_size`` steps."""

    rank = 1


class AdaptiveAveragePooling2D(_AdaptiveAverage):
    """Mean over adaptive windows of ``(batch, rows, cols, channels)`` to ``output_size`` rows and columns."""

    rank = 2


class AdaptiveAveragePooling3D(_AdaptiveAverage):
    """Mean over adaptive windows of ``(batch, d1, d2, d3, channels)`` to ``output_size`` cells."""

    rank = 3


class AdaptiveMaxPooling1D(_AdaptiveMax):
    """Maximum over adaptive windows of ``(batch, steps, channels)`` to ``output_size`` steps."""

    rank = 1


class AdaptiveMaxPooling2D(_AdaptiveMax):
    """Maximum over adaptive windows of ``(batch, rows, cols, channels)`` to ``output_size`` rows and columns."""

    rank = 2


class AdaptiveMaxPooling3D(_AdaptiveMax):
    """Maximum over adaptive windows of ``(batch, d1, d2, d3, channels)`` to ``output_size`` cells."""

    rank = 3
