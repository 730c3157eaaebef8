"""Block rearrangements (depth_to_space, space_to_depth) and adaptive pooling of ``keras.ops.nn``."""
import numpy as np

from kgraph.ops import math as _math
from kgraph.ops import reductions as _reductions
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op
from kgraph.ops.shape import concatenate as _concatenate
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import take as _take
from kgraph.ops.shape import transpose as _transpose

__all__ = ["adaptive_average_pool", "adaptive_max_pool", "depth_to_space", "space_to_depth"]


def _blocks(x, block_size, data_format):
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("data_format must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={data_format!r}")
    return x if data_format == "channels_last" else _transpose(x, (0, 2, 3, 1))


@op
def depth_to_space(x, block_size, data_format="channels_last"):
    """Move channel blocks into ``block_size x block_size`` spatial tiles (4-D input)."""
    x = _blocks(x, block_size, data_format)
    _, h, w, c = _shape(x)
    b = block_size
    y = _reshape(x, (-1, h, w, b, b, c // (b * b)))
    y = _reshape(_transpose(y, (0, 1, 3, 2, 4, 5)), (-1, h * b, w * b, c // (b * b)))
    return y if data_format == "channels_last" else _transpose(y, (0, 3, 1, 2))


@op
def space_to_depth(x, block_size, data_format="channels_last"):
    """Move ``block_size x block_size`` spatial tiles into channels (4-D input)."""
    x = _blocks(x, block_size, data_format)
    _, h, w, c = _shape(x)
    b = block_size
    y = _reshape(x, (-1, h // b, b, w // b, b, c))
    y = _reshape(_transpose(y, (0, 1, 3, 2, 4, 5)), (-1, h // b, w // b, c * b * b))
    return y if data_format == "channels_last" else _transpose(y, (0, 3, 1, 2))


def _adaptive_windows(size, out):
    """PyTorch's adaptive windows: output ``i`` pools ``[floor(i * size / out), ceil((i + 1) * size / out))``."""
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def _adaptive_pool(inputs, output_size, data_format, average):
    rank = len(_shape(inputs))
    if rank not in (3, 4, 5):
        raise ValueError(f"Adaptive pooling expects a rank 3, 4 or 5 input (batch, spatial..., channels). "
                         f"Received: inputs.shape={_shape(inputs)}")
    data_format = "channels_last" if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("data_format must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={data_format!r}")
    sizes = (output_size,) * (rank - 2) if isinstance(output_size, int) else tuple(output_size)
    axes = range(1, rank - 1) if data_format == "channels_last" else range(2, rank)
    x = floating(inputs) if average else inputs
    for axis, out in zip(axes, sizes):
        windows = _adaptive_windows(_shape(x)[axis], out)
        if average:
            weights = np.zeros((out, _shape(x)[axis]), dtype=dtype_of(x))
            for i, (start, stop) in enumerate(windows):
                weights[i, start:stop] = 1 / (stop - start)
            x = _moveaxis(_math.matmul(_moveaxis(x, axis, -1), weights.T), -1, axis)
        else:
            x = _concatenate([_reductions.max(_take(x, list(range(start, stop)), axis=axis), axis=axis, keepdims=True)
                                for start, stop in windows], axis=axis)
    return x


@op
def adaptive_average_pool(inputs, output_size, data_format=None):
    """Average pooling to ``output_size`` (per spatial axis) with PyTorch's adaptive windows."""
    return _adaptive_pool(inputs, output_size, data_format, average=True)


@op
def adaptive_max_pool(inputs, output_size, data_format=None):
    """Max pooling to ``output_size`` (per spatial axis) with PyTorch's adaptive windows."""
    return _adaptive_pool(inputs, output_size, data_format, average=False)
