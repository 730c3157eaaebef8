"""Sliding-window patches: ``unfold`` (im2col), its adjoint ``fold``, ``image.extract_patches`` and ``_3d``.

All are slices, stacks and pads of other ops, so they are differentiable and export by tracing.
"""
import numpy as np

from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import getitem as _getitem
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import pad as _pad
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import stack as _stack

__all__ = ["extract_patches", "extract_patches_3d", "fold", "unfold"]


def _pair(value):
    return (int(value), int(value)) if isinstance(value, int) else tuple(int(v) for v in value)


def _count(size, kernel, dilation, stride):
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _windows(x, kernel, dilation, stride, axes):
    """The ``kernel`` window taps of ``x`` over its spatial ``axes``: one strided slice per tap, and the counts."""
    counts = [_count(_shape(x)[a], k, d, s) for a, k, d, s in zip(axes, kernel, dilation, stride)]
    taps = []
    for tap in np.ndindex(*kernel):
        key = [slice(None)] * len(_shape(x))
        for a, i, d, s, n in zip(axes, tap, dilation, stride, counts):
            key[a] = slice(i * d, i * d + s * (n - 1) + 1, s)
        taps.append(_getitem(x, tuple(key)))
    return taps, counts


@op
def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's im2col of ``(batch, channels, height, width)``: ``(batch, channels * taps, windows)``."""
    kernel, dilation, stride = _pair(kernel_size), _pair(dilation), _pair(stride)
    ph, pw = _pair(padding)
    x = _pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    taps, (oh, ow) = _windows(x, kernel, dilation, stride, (2, 3))
    channels = _shape(x)[1]
    return _reshape(_stack(taps, axis=2), (-1, channels * len(taps), oh * ow))


@op
def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's col2im, the adjoint of ``unfold``: windows summed back into ``(batch, channels, *output_size)``."""
    (kh, kw), (dh, dw), (sh, sw) = _pair(kernel_size), _pair(dilation), _pair(stride)
    (ph, pw), (height, width) = _pair(padding), _pair(output_size)
    hp, wp = height + 2 * ph, width + 2 * pw
    oh, ow = _count(hp, kh, dh, sh), _count(wp, kw, dw, sw)
    channels = _shape(x)[1] // (kh * kw)
    cols = _reshape(x, (-1, channels, kh * kw, oh, ow))
    # One tap's values on its strided grid: interleave stride - 1 zeros after each row and column.
    spread = _pad(_reshape(cols, (-1, channels, kh * kw, oh, 1, ow, 1)),
                    [(0, 0)] * 4 + [(0, sh - 1), (0, 0), (0, sw - 1)])
    spread = _reshape(spread, (-1, channels, kh * kw, oh * sh, ow * sw))
    rows, columns = sh * (oh - 1) + 1, sw * (ow - 1) + 1
    out = None
    for i in range(kh):
        for j in range(kw):
            tap = spread[:, :, i * kw + j, :rows, :columns]
            placed = _pad(tap, ((0, 0), (0, 0), (i * dh, hp - i * dh - rows), (j * dw, wp - j * dw - columns)))
            out = placed if out is None else out + placed
    return out[:, :, ph:ph + height, pw:pw + width]


def _patches(images, size, strides, dilation_rate, padding, data_format, spatial):
    """Patches over ``spatial`` (2 or 3) axes of channels-last or channels-first data, flattened into channels."""
    kernel = _tuple(size, spatial)
    stride = kernel if strides is None else _tuple(strides, spatial)
    dilation = _tuple(dilation_rate, spatial)
    if padding not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same'. Received: padding={padding!r}")
    data_format = "channels_last" if data_format is None else data_format
    single = len(_shape(images)) == spatial + 1
    x = _expand_dims(images, 0) if single else images
    if data_format == "channels_first":
        x = _moveaxis(x, 1, -1)
    if padding == "same":
        widths = [(0, 0)]
        for size_, k, d, s in zip(_shape(x)[1:1 + spatial], kernel, dilation, stride):
            total = max((-(-size_ // s) - 1) * s + (k - 1) * d + 1 - size_, 0)
            widths.append((total // 2, total - total // 2))
        x = _pad(x, widths + [(0, 0)])
    taps, counts = _windows(x, kernel, dilation, stride, tuple(range(1, 1 + spatial)))
    patches = _reshape(_stack(taps, axis=-2), [-1] + counts + [len(taps) * _shape(x)[-1]])
    if data_format == "channels_first":
        patches = _moveaxis(patches, -1, 1)
    return patches[0] if single else patches


def _tuple(value, n):
    return (int(value),) * n if isinstance(value, int) else tuple(int(v) for v in value)


@op
def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """Patches of ``size`` every ``strides`` (default: ``size``), flattened into the channel axis."""
    return _patches(images, size, strides, dilation_rate, padding, data_format, 2)


@op
def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """Volume patches of ``size`` every ``strides`` (default: ``size``), flattened into the channel axis."""
    return _patches(volumes, size, strides, dilation_rate, padding, data_format, 3)
