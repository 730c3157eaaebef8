"""Sliding-window geometry and the im2col / col2im gathers shared by the convolution and pooling ops.

Everything is channels-last: ``(batch, *spatial, channels)``. Gathers work
with strided views and one vectorized copy or add per kernel tap, never a
Python loop over pixels or batch elements.
"""
import itertools
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from kgraph.ops.kernels.allocator import recycle_large_blocks

# Below this many channels a generic strided copy moves a few bytes per inner step;
# one slice copy per kernel tap streams whole rows instead (several times faster).
_TAP_COPY_CHANNELS = 8
# A working set that stays in a core's cache while it is read several times.
_CACHE_BYTES = 1 << 20
# Scratch buffers up to this size are kept per thread and reused; larger ones are fresh arrays.
_CACHED_SCRATCH_BYTES = 1 << 25

_local = threading.local()

recycle_large_blocks()


def scratch(slot, size, dtype):
    """A flat array of at least ``size`` elements, owned by this thread and reused across calls.

    Reusing it spares the page faults of a fresh multi-megabyte array on every
    step; its contents are garbage until written.
    """
    dtype = np.dtype(dtype)
    if size * dtype.itemsize > _CACHED_SCRATCH_BYTES:
        return np.empty(size, dtype=dtype)
    buffers = getattr(_local, "buffers", None)
    if buffers is None:
        buffers = _local.buffers = {}
    buf = buffers.get((slot, dtype))
    if buf is None or buf.size < size:
        buf = buffers[(slot, dtype)] = np.empty(size, dtype=dtype)
    return buf[:size]


def normalize_tuple(value, rank, name):
    """``value`` (an int or a sequence of ``rank`` ints) as a tuple of ``rank`` positive ints."""
    items = (value,) * rank if isinstance(value, (int, np.integer)) else tuple(value)
    if len(items) != rank or not all(isinstance(v, (int, np.integer)) and v > 0 for v in items):
        raise ValueError(f"The `{name}` argument must be an int or a tuple of {rank} positive ints. "
                         f"Received: {name}={value}")
    return tuple(int(v) for v in items)


def check_data_format(data_format):
    """Raise unless ``data_format`` is None or "channels_last" (the only layout the ops compute in)."""
    if data_format not in (None, "channels_last"):
        raise ValueError("kgraph convolution and pooling work on channels_last data: `data_format` must be "
                         f"None or 'channels_last'. Received: data_format={data_format!r}")


def same_pads(size, kernel, stride, dilation=1):
    """TensorFlow's "same" padding of one axis: ``(before, after)``, the odd cell at the end."""
    extent = (kernel - 1) * dilation + 1
    total = max((-(-size // stride) - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def conv_pads(spatial_shape, kernel_size, strides, padding, dilation_rate):
    """Explicit ``(before, after)`` pads per spatial axis for "valid", "same" or "causal" padding."""
    padding = str(padding).lower()
    if padding == "valid":
        return tuple((0, 0) for _ in spatial_shape)
    if padding == "same":
        return tuple(same_pads(n, k, s, d) for n, k, s, d in zip(spatial_shape, kernel_size, strides, dilation_rate))
    if padding == "causal":
        return tuple(((k - 1) * d, 0) for k, d in zip(kernel_size, dilation_rate))
    raise ValueError(f"The `padding` argument must be one of 'valid', 'same' (or 'causal' for 1D). "
                     f"Received: padding={padding!r}")


def conv_output_length(size, kernel, stride, dilation, pads):
    """Output length of a window sliding over ``size`` cells padded by ``pads`` (None if unknown)."""
    if size is None:
        return None
    return (size + pads[0] + pads[1] - (kernel - 1) * dilation - 1) // stride + 1


def transpose_crop(kernel, stride, dilation, padding, output_padding):
    """Keras's transposed-convolution geometry of one axis: ``(crop_before, extra)``.

    The output is the full scatter (length ``(n-1)*stride + dilated kernel``)
    with ``crop_before`` cells removed at the start and its length set to
    ``(n-1)*stride + dilated kernel - crop_before + extra`` (a negative
    ``extra`` crops the end, a positive one appends zeros).
    """
    extent = (kernel - 1) * dilation + 1
    if padding == "valid":
        left = extent - 1
        right = extent - 1 + (max(extent, stride) - extent if output_padding is None else output_padding)
    elif padding == "same":
        pad_len = stride + extent - 2 if output_padding is None else extent + extent % 2 - 2 + output_padding
        left = min(pad_len // 2 + pad_len % 2, extent - 1)
        right = pad_len - left
    else:
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. Received: padding={padding!r}")
    return extent - 1 - left, right - (extent - 1)


def pad(x, pads, value=0):
    """``x`` with ``pads`` cells of ``value`` around each spatial axis (``x`` itself if none)."""
    if not any(b or a for b, a in pads):
        return x
    return np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),), constant_values=value)


def unpad(xp, pads, spatial):
    """The ``spatial``-sized interior of a padded array (a view)."""
    if not any(b or a for b, a in pads):
        return xp
    return xp[(slice(None),) + tuple(slice(b, b + n) for (b, _), n in zip(pads, spatial)) + (slice(None),)]


def tap_slices(kernel_size, strides, dilation, out_spatial):
    """For each kernel tap, the tap index and the slice of the padded input it reads."""
    for taps in itertools.product(*(range(k) for k in kernel_size)):
        region = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                       for t, d, o, s in zip(taps, dilation, out_spatial, strides))
        yield taps, (slice(None),) + region + (slice(None),)


def windows(xp, kernel_size, strides, dilation, out_spatial):
    """Read-only view ``(N, *out_spatial, *kernel_size, C)`` of every kernel window of ``xp``."""
    r = len(kernel_size)
    st = xp.strides
    shape = (xp.shape[0],) + tuple(out_spatial) + tuple(kernel_size) + (xp.shape[-1],)
    steps = ((st[0],) + tuple(st[1 + i] * strides[i] for i in range(r))
             + tuple(st[1 + i] * dilation[i] for i in range(r)) + (st[-1],))
    return as_strided(xp, shape=shape, strides=steps, writeable=False)


def im2col(xp, kernel_size, strides, dilation, out_spatial, buf=None):
    """Contiguous ``(N * prod(out_spatial), prod(kernel_size) * C)`` matrix of every window of ``xp``.

    ``buf``: an optional flat scratch array, at least that large, to write into.
    """
    n, channels = xp.shape[0], xp.shape[-1]
    shape = (n,) + tuple(out_spatial) + tuple(kernel_size) + (channels,)
    size = int(np.prod(shape))
    cols = np.empty(shape, dtype=xp.dtype) if buf is None else buf[:size].reshape(shape)
    if channels >= _TAP_COPY_CHANNELS:
        np.copyto(cols, windows(xp, kernel_size, strides, dilation, out_spatial))
    else:
        lead = (slice(None),) * (1 + len(out_spatial))
        for taps, region in tap_slices(kernel_size, strides, dilation, out_spatial):
            cols[lead + taps] = xp[region]
    return cols.reshape(n * int(np.prod(out_spatial)), int(np.prod(kernel_size)) * channels)


def col2im_add(target, cols, strides, dilation):
    """Add window values ``cols (N, *out, *kernel, C)`` into the padded array ``target`` they were read from.

    Runs over chunks of images small enough that a chunk of ``cols``, read
    once per kernel tap, stays in cache.
    """
    r = (cols.ndim - 2) // 2
    out_spatial, kernel_size = cols.shape[1:1 + r], cols.shape[1 + r:1 + 2 * r]
    lead = (slice(None),) * (1 + r)
    taps = list(tap_slices(kernel_size, strides, dilation, out_spatial))
    per_chunk = max(1, _CACHE_BYTES // max(1, cols[:1].nbytes))
    for i0 in range(0, cols.shape[0], per_chunk):
        chunk, into = cols[i0:i0 + per_chunk], target[i0:i0 + per_chunk]
        for tap, region in taps:
            into[region] += chunk[lead + tap]
    return target
