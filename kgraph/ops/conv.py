"""Convolution and pooling ops on channels-last arrays, named as in ``keras.ops``.

Each op is one fused primitive: the forward pass gathers the kernel windows with
a strided view and does one matrix product (im2col); the backward pass scatters
window cotangents back with one vectorized add per kernel tap (col2im). No
Python loop ever runs over pixels or batch elements.
"""
import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from kgraph.autodiff import primitive
from kgraph.ops.shape import reshape

__all__ = ["average_pool", "conv", "conv_transpose", "depthwise_conv", "max_pool", "separable_conv"]


def normalize_tuple(value, rank, name):
    """``value`` (an int or a sequence of ``rank`` ints) as a tuple of ``rank`` positive ints."""
    items = (value,) * rank if isinstance(value, (int, np.integer)) else tuple(value)
    if len(items) != rank or not all(isinstance(v, (int, np.integer)) and v > 0 for v in items):
        raise ValueError(f"The `{name}` argument must be an int or a tuple of {rank} positive ints. "
                         f"Received: {name}={value}")
    return tuple(int(v) for v in items)


def _check_data_format(data_format):
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
    """Output length of a convolution window sliding over ``size`` cells padded by ``pads``."""
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


def _windows(xp, kernel_size, strides, dilation, out_spatial):
    """Read-only view ``(N, *out_spatial, *kernel_size, C)`` of every kernel window of ``xp``."""
    r = len(kernel_size)
    st = xp.strides
    shape = (xp.shape[0],) + tuple(out_spatial) + tuple(kernel_size) + (xp.shape[-1],)
    strides = ((st[0],) + tuple(st[1 + i] * strides[i] for i in range(r))
               + tuple(st[1 + i] * dilation[i] for i in range(r)) + (st[-1],))
    return as_strided(xp, shape=shape, strides=strides, writeable=False)


def _tap_slices(kernel_size, strides, dilation, out_spatial):
    """For each kernel tap, the tap index and the slice of the padded input it reads."""
    for taps in itertools.product(*(range(k) for k in kernel_size)):
        region = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                       for t, d, o, s in zip(taps, dilation, out_spatial, strides))
        yield taps, (slice(None),) + region + (slice(None),)


def _scatter_windows(cols, padded_shape, strides, dilation):
    """Sum window values ``(N, *out, *kernel, C)`` back into an array of ``padded_shape`` (col2im)."""
    r = (cols.ndim - 2) // 2
    out_spatial, kernel_size = cols.shape[1:1 + r], cols.shape[1 + r:1 + 2 * r]
    dense = all(k <= s for k, s in zip(kernel_size, strides)) and all(d == 1 for d in dilation)
    buf = np.zeros(padded_shape, dtype=cols.dtype)
    lead = (slice(None),) * (1 + r)
    for taps, region in _tap_slices(kernel_size, strides, dilation, out_spatial):
        if dense:
            # Windows do not overlap: each tap writes its own cells.
            buf[region] = cols[lead + taps]
        else:
            buf[region] += cols[lead + taps]
    return buf


def _pad(x, pads, value=0):
    if not any(b or a for b, a in pads):
        return x
    return np.pad(x, ((0, 0),) + tuple(pads) + ((0, 0),), constant_values=value)


def _unpad(xp, pads, spatial):
    if not any(b or a for b, a in pads):
        return xp
    return xp[(slice(None),) + tuple(slice(b, b + n) for (b, _), n in zip(pads, spatial)) + (slice(None),)]


@primitive(num_inputs=3)
def _conv(x, kernel, bias, strides, pads, dilation, groups):
    x = np.asarray(x)
    r = x.ndim - 2
    kernel_size, cin_g, filters = kernel.shape[:r], kernel.shape[r], kernel.shape[r + 1]
    spatial = x.shape[1:1 + r]
    out_spatial = tuple(conv_output_length(n, k, s, d, p)
                        for n, k, s, d, p in zip(spatial, kernel_size, strides, dilation, pads))
    if any(o < 1 for o in out_spatial):
        raise ValueError(f"The convolution output would be empty: input spatial shape {spatial} is smaller than "
                         f"the dilated kernel {kernel_size} (dilation {dilation}, padding {pads}).")
    xp = _pad(x, pads)
    n = x.shape[0]
    m = n * int(np.prod(out_spatial))
    kk = int(np.prod(kernel_size))
    cols = _windows(xp, kernel_size, strides, dilation, out_spatial).reshape(m, kk * x.shape[-1])
    if groups == 1:
        w = kernel.reshape(kk * cin_g, filters)
        out = cols @ w
    else:
        fg = filters // groups
        cols_g = cols.reshape(m, kk, groups, cin_g).transpose(2, 0, 1, 3).reshape(groups, m, kk * cin_g)
        w_g = kernel.reshape(kk, cin_g, groups, fg).transpose(2, 0, 1, 3).reshape(groups, kk * cin_g, fg)
        out = np.matmul(cols_g, w_g).transpose(1, 0, 2).reshape(m, filters)
    if bias is not None:
        out += bias
    out = out.reshape((n,) + out_spatial + (filters,))

    def vjp(g):
        g2 = g.reshape(m, filters)

        def d_bias():
            return g2.sum(axis=0)

        if groups == 1:
            def d_kernel():
                return (cols.T @ g2).reshape(kernel.shape)

            def d_x():
                dcols = (g2 @ w.T).reshape((n,) + out_spatial + tuple(kernel_size) + (x.shape[-1],))
                return _unpad(_scatter_windows(dcols, xp.shape, strides, dilation), pads, spatial)
        else:
            gg = g2.reshape(m, groups, fg).transpose(1, 0, 2)

            def d_kernel():
                dw = np.matmul(cols_g.transpose(0, 2, 1), gg)
                return dw.reshape(groups, kk, cin_g, fg).transpose(1, 2, 0, 3).reshape(kernel.shape)

            def d_x():
                dcols = np.matmul(gg, w_g.transpose(0, 2, 1)).reshape(groups, m, kk, cin_g)
                dcols = dcols.transpose(1, 2, 0, 3).reshape((n,) + out_spatial + tuple(kernel_size) + (x.shape[-1],))
                return _unpad(_scatter_windows(dcols, xp.shape, strides, dilation), pads, spatial)

        return d_x, d_kernel, None if bias is None else d_bias

    return out, vjp


@primitive(num_inputs=3)
def _conv_transpose(x, kernel, bias, strides, crops, dilation):
    x = np.asarray(x)
    r = x.ndim - 2
    kernel_size, filters, cin = kernel.shape[:r], kernel.shape[r], kernel.shape[r + 1]
    spatial = x.shape[1:1 + r]
    n = x.shape[0]
    full = tuple((i - 1) * s + (k - 1) * d + 1 for i, k, s, d in zip(spatial, kernel_size, strides, dilation))
    out_spatial = tuple(f - c + e for f, (c, e) in zip(full, crops))
    if any(o < 1 for o in out_spatial):
        raise ValueError(f"The transposed convolution output would be empty for input spatial shape {spatial}.")
    buf_spatial = tuple(max(f, c + o) for f, (c, _), o in zip(full, crops, out_spatial))
    kk = int(np.prod(kernel_size))
    w = kernel.reshape(kk * filters, cin)
    x2 = x.reshape(-1, cin)
    cols = (x2 @ w.T).reshape((n,) + spatial + tuple(kernel_size) + (filters,))
    buf = _scatter_windows(cols, (n,) + buf_spatial + (filters,), strides, dilation)
    window = (slice(None),) + tuple(slice(c, c + o) for (c, _), o in zip(crops, out_spatial)) + (slice(None),)
    out = buf if buf.shape[1:1 + r] == out_spatial else np.ascontiguousarray(buf[window])
    if bias is not None:
        out += bias

    def vjp(g):
        gbuf = g
        if g.shape[1:1 + r] != buf_spatial:
            gbuf = np.zeros((n,) + buf_spatial + (filters,), dtype=g.dtype)
            gbuf[window] = g
        gcols = _windows(gbuf, kernel_size, strides, dilation, spatial).reshape(x2.shape[0], kk * filters)

        def d_bias():
            return g.sum(axis=tuple(range(g.ndim - 1)))

        return (lambda: (gcols @ w).reshape(x.shape), lambda: (gcols.T @ x2).reshape(kernel.shape),
                None if bias is None else d_bias)

    return out, vjp


@primitive(num_inputs=1)
def _max_pool(x, pool_size, strides, pads):
    x = np.asarray(x)
    spatial = x.shape[1:-1]
    ones = (1,) * len(pool_size)
    out_spatial = tuple(conv_output_length(n, k, s, 1, p) for n, k, s, p in zip(spatial, pool_size, strides, pads))
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _pad(x, pads, lowest)
    regions = [region for _, region in _tap_slices(pool_size, strides, ones, out_spatial)]
    out = xp[regions[0]].copy()
    for region in regions[1:]:
        np.maximum(out, xp[region], out=out)

    def vjp(g):
        dense = all(k <= s for k, s in zip(pool_size, strides))
        dxp = np.zeros(xp.shape, dtype=g.dtype)
        remaining = np.ones(out.shape, dtype=bool)
        hit = np.empty(out.shape, dtype=bool)
        for region in regions:
            # Route each window's gradient to its first maximum only, like TensorFlow and PyTorch.
            np.equal(xp[region], out, out=hit)
            hit &= remaining
            remaining ^= hit
            if dense:
                np.multiply(g, hit, out=dxp[region])
            else:
                dxp[region] += g * hit
        return _unpad(dxp, pads, spatial)

    return out, vjp


@primitive(num_inputs=1)
def _average_pool(x, pool_size, strides, pads):
    x = np.asarray(x)
    spatial = x.shape[1:-1]
    ones = (1,) * len(pool_size)
    out_spatial = tuple(conv_output_length(n, k, s, 1, p) for n, k, s, p in zip(spatial, pool_size, strides, pads))
    xp = _pad(x, pads)
    regions = [region for _, region in _tap_slices(pool_size, strides, ones, out_spatial)]
    out = xp[regions[0]].copy()
    for region in regions[1:]:
        out += xp[region]
    if any(b or a for b, a in pads):
        # Padded cells are not averaged in: divide by the count of real cells of each window.
        cells = _pad(np.ones((1,) + spatial + (1,), dtype=out.dtype), pads)
        count = cells[regions[0]].copy()
        for region in regions[1:]:
            count += cells[region]
    else:
        count = np.asarray(np.prod(pool_size), dtype=out.dtype)
    out /= count

    def vjp(g):
        dense = all(k <= s for k, s in zip(pool_size, strides))
        share = g / count
        dxp = np.zeros(xp.shape, dtype=g.dtype)
        for region in regions:
            if dense:
                dxp[region] = share
            else:
                dxp[region] += share
        return _unpad(dxp, pads, spatial)

    return out, vjp


def _check_ranks(inputs, kernel, op):
    x_shape, k_shape = np.shape(inputs), np.shape(kernel)
    if len(k_shape) < 3 or len(x_shape) != len(k_shape):
        raise ValueError(f"{op} expects inputs of shape (batch, *spatial, channels) and a kernel of shape "
                         f"(*kernel_size, in, out) with as many spatial axes. "
                         f"Received: inputs.shape={x_shape}, kernel.shape={k_shape}")
    return len(k_shape) - 2


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1, bias=None):
    """N-D convolution (cross-correlation) of channels-last ``inputs`` with ``kernel``.

    Args:
        inputs: ``(batch, *spatial, channels)``.
        kernel: ``(*kernel_size, channels // groups, filters)``; the number of
            groups is ``channels // kernel.shape[-2]``.
        strides, dilation_rate: ints or one per spatial axis.
        padding: "valid", "same" (TensorFlow's rule: the odd padded cell goes
            at the end) or "causal" (all padding before, 1D).
        bias: optional ``(filters,)`` offsets added in the same op.
    """
    _check_data_format(data_format)
    r = _check_ranks(inputs, kernel, "conv")
    x_shape, k_shape = np.shape(inputs), np.shape(kernel)
    channels, cin_g, filters = x_shape[-1], k_shape[-2], k_shape[-1]
    if channels % cin_g or filters % (channels // cin_g):
        raise ValueError(f"conv expects the input channels to be a multiple of kernel.shape[-2] and the filters "
                         f"a multiple of the number of groups. Received: inputs.shape={x_shape}, "
                         f"kernel.shape={k_shape}")
    strides = normalize_tuple(strides, r, "strides")
    dilation = normalize_tuple(dilation_rate, r, "dilation_rate")
    pads = conv_pads(x_shape[1:-1], k_shape[:r], strides, padding, dilation)
    return _conv(inputs, kernel, bias, strides=strides, pads=pads, dilation=dilation, groups=channels // cin_g)


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1, bias=None):
    """Convolve each input channel separately with ``kernel (*kernel_size, channels, depth_multiplier)``.

    Output channel ``c * depth_multiplier + m`` is channel ``c`` convolved
    with ``kernel[..., c, m]``.
    """
    r = _check_ranks(inputs, kernel, "depthwise_conv")
    k_shape = np.shape(kernel)
    if np.shape(inputs)[-1] != k_shape[-2]:
        raise ValueError(f"depthwise_conv expects kernel.shape[-2] to equal the input channels. "
                         f"Received: inputs.shape={np.shape(inputs)}, kernel.shape={k_shape}")
    grouped = reshape(kernel, k_shape[:r] + (1, k_shape[-2] * k_shape[-1]))
    return conv(inputs, grouped, strides, padding, data_format, dilation_rate, bias=bias)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1, bias=None):
    """A depthwise convolution followed by a 1x1 convolution with ``pointwise_kernel``."""
    depthwise = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(depthwise, pointwise_kernel, 1, "valid", data_format, 1, bias=bias)


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None,
                   dilation_rate=1, bias=None):
    """Transposed convolution (the gradient of ``conv``) with Keras's output geometry.

    Args:
        inputs: ``(batch, *spatial, in_channels)``.
        kernel: ``(*kernel_size, filters, in_channels)``, Keras's layout.
        padding: "valid" (output ``(n-1)*stride + max(kernel, stride)``) or
            "same" (output ``n*stride``).
        output_padding: None, an int or one per axis: cells added at the end.
    """
    _check_data_format(data_format)
    r = _check_ranks(inputs, kernel, "conv_transpose")
    x_shape, k_shape = np.shape(inputs), np.shape(kernel)
    if x_shape[-1] != k_shape[-1]:
        raise ValueError(f"conv_transpose expects kernel.shape[-1] to equal the input channels. "
                         f"Received: inputs.shape={x_shape}, kernel.shape={k_shape}")
    strides = normalize_tuple(strides, r, "strides")
    dilation = normalize_tuple(dilation_rate, r, "dilation_rate")
    if output_padding is None or isinstance(output_padding, (int, np.integer)):
        output_padding = (output_padding,) * r
    crops = tuple(transpose_crop(k, s, d, str(padding).lower(), p)
                  for k, s, d, p in zip(k_shape[:r], strides, dilation, output_padding))
    return _conv_transpose(inputs, kernel, bias, strides=strides, crops=crops, dilation=dilation)


def _pool_args(inputs, pool_size, strides, padding, data_format, op):
    _check_data_format(data_format)
    x_shape = np.shape(inputs)
    r = len(x_shape) - 2
    if r < 1:
        raise ValueError(f"{op} expects inputs of shape (batch, *spatial, channels). Received: inputs.shape={x_shape}")
    pool_size = normalize_tuple(pool_size, r, "pool_size")
    strides = pool_size if strides is None else normalize_tuple(strides, r, "strides")
    if str(padding).lower() not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. Received: padding={padding!r}")
    pads = conv_pads(x_shape[1:-1], pool_size, strides, padding, (1,) * r)
    if any(conv_output_length(n, k, s, 1, p) < 1 for n, k, s, p in zip(x_shape[1:-1], pool_size, strides, pads)):
        raise ValueError(f"{op}: the pooling window {pool_size} is larger than the input spatial shape "
                         f"{x_shape[1:-1]}.")
    return pool_size, strides, pads


def max_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Maximum over sliding windows; "same" padding never wins the maximum. Strides default to pool_size."""
    pool_size, strides, pads = _pool_args(inputs, pool_size, strides, padding, data_format, "max_pool")
    return _max_pool(inputs, pool_size=pool_size, strides=strides, pads=pads)


def average_pool(inputs, pool_size, strides=None, padding="valid", data_format=None):
    """Mean over sliding windows; with "same" padding, over the real (unpadded) cells only."""
    pool_size, strides, pads = _pool_args(inputs, pool_size, strides, padding, data_format, "average_pool")
    return _average_pool(inputs, pool_size=pool_size, strides=strides, pads=pads)
