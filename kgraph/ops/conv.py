"""Convolution ops on channels-last arrays, named as in ``keras.ops``.

``conv`` is one fused primitive (forward + VJP): one strided copy gathers the
kernel windows into a matrix (im2col) and one matrix product applies the
kernel; the VJP takes the kernel gradient with one product and scatters the
input gradient back with one vectorized add per kernel tap (col2im). Inputs
whose window matrix would be very large are processed in blocks of images,
each block's windows rebuilt in a reused scratch buffer for the VJP.

3x3 stride-1 convolutions with at least 16 input channels and filters run
as Winograd F(4x4, 3x3) instead (``kgraph.ops.kernels.winograd``): a quarter of the
multiplications, the same values up to float rounding.
"""
import numpy as np

from kgraph.backend.autodiff import primitive
from kgraph.ops.kernels import winograd
from kgraph.ops.kernels.windows import (
    check_data_format,
    col2im_add,
    conv_output_length,
    conv_pads,
    im2col,
    normalize_tuple,
    pad,
    scratch,
    transpose_crop,
    unpad,
)
from kgraph.ops.operations import op
from kgraph.ops.shape import reshape

__all__ = ["conv", "conv_transpose", "depthwise_conv", "separable_conv"]

# Largest window matrix built at once. Few large matrix products beat many small
# ones: each multi-threaded BLAS call synchronizes its threads.
_BLOCK_BYTES = 1 << 25


def _image_blocks(n, bytes_per_image, budget=None):
    """``(start, stop)`` image ranges of about ``budget`` bytes (``_BLOCK_BYTES`` by default) each."""
    budget = _BLOCK_BYTES if budget is None else budget
    count = min(n, max(1, -(-n * bytes_per_image // budget)))
    edges = [i * n // count for i in range(count + 1)]
    return list(zip(edges[:-1], edges[1:]))


class _Kernel:
    """A ``(*window, in // groups, filters)`` kernel as the matrices a grouped product needs."""

    def __init__(self, kernel, groups):
        self.shape, self.groups = kernel.shape, groups
        self.taps = int(np.prod(kernel.shape[:-2]))
        self.cin, self.filters = kernel.shape[-2], kernel.shape[-1]
        self.fg = self.filters // groups
        if groups == 1:
            self.matrix = kernel.reshape(self.taps * self.cin, self.filters)
        else:
            # (groups, taps * cin, fg): group g owns input channels g*cin.. and filters g*fg..
            self.matrix = kernel.reshape(self.taps, self.cin, groups, self.fg).transpose(2, 0, 1, 3).reshape(
                groups, self.taps * self.cin, self.fg)

    def _grouped(self, cols):
        m = cols.shape[0]
        return cols.reshape(m, self.taps, self.groups, self.cin).transpose(2, 0, 1, 3).reshape(
            self.groups, m, self.taps * self.cin)

    def apply(self, cols, out):
        """``out (m, filters) = windows (m, taps * channels)`` times the kernel."""
        if self.groups == 1:
            np.matmul(cols, self.matrix, out=out)
        else:
            out.reshape(-1, self.groups, self.fg)[...] = np.matmul(self._grouped(cols), self.matrix).transpose(1, 0, 2)

    def weight_grad(self, cols, g):
        """Kernel-matrix gradient of one block."""
        if self.groups == 1:
            return cols.T @ g
        gg = g.reshape(-1, self.groups, self.fg).transpose(1, 0, 2)
        return np.matmul(self._grouped(cols).transpose(0, 2, 1), gg)

    def window_grad(self, g, out):
        """``out (m, taps * channels)``: the cotangent of each window of one block."""
        if self.groups == 1:
            np.matmul(g, self.matrix.T, out=out)
        else:
            gg = g.reshape(-1, self.groups, self.fg).transpose(1, 0, 2)
            per_group = np.matmul(gg, self.matrix.transpose(0, 2, 1)).reshape(self.groups, -1, self.taps, self.cin)
            out.reshape(-1, self.taps, self.groups, self.cin)[...] = per_group.transpose(1, 2, 0, 3)

    def unmatrix(self, grad):
        """A kernel-matrix gradient in the kernel's own shape."""
        if self.groups == 1:
            return grad.reshape(self.shape)
        return grad.reshape(self.groups, self.taps, self.cin, self.fg).transpose(1, 2, 0, 3).reshape(self.shape)


def shared_vjp(backward, g, has_bias):
    """The ``(d_x, d_kernel, d_bias)`` thunks of a convolution-like op.

    ``backward(g, grads, with_x)`` fills ``grads`` with "kernel", "bias" and,
    when ``with_x``, "x" in one pass. The tape asks for d_x first (when it
    needs it): one pass then serves all three.
    """
    grads = {}

    def d_x():
        backward(g, grads, True)
        return grads.pop("x")

    def d_kernel():
        if "kernel" not in grads:
            backward(g, grads, False)
        return grads["kernel"]

    def d_bias():
        if "kernel" not in grads:
            backward(g, grads, False)
        return grads["bias"]

    return d_x, d_kernel, d_bias if has_bias else None


def empty_batch(x, kernel, bias, out_shape, dtype):
    """``(output, vjp)`` of a convolution-like op on a batch of no images: an empty output, zero gradients."""
    def backward(g, grads, with_x):
        grads["kernel"] = np.zeros(kernel.shape, dtype=dtype)
        grads["bias"] = np.zeros(np.shape(bias), dtype=dtype) if bias is not None else None
        if with_x:
            grads["x"] = np.zeros(x.shape, dtype=dtype)

    return np.zeros(out_shape, dtype=dtype), lambda g: shared_vjp(backward, g, bias is not None)


@primitive(num_inputs=3)
def _conv(x, kernel, bias, strides, pads, dilation, groups, relu):
    x = np.asarray(x)
    r = x.ndim - 2
    kernel_size = tuple(kernel.shape[:r])
    spatial = x.shape[1:1 + r]
    out_spatial = tuple(conv_output_length(n, k, s, d, p)
                        for n, k, s, d, p in zip(spatial, kernel_size, strides, dilation, pads))
    if any(o < 1 for o in out_spatial):
        raise ValueError(f"The convolution output would be empty: input spatial shape {spatial} is smaller than "
                         f"the dilated kernel {kernel_size} (dilation {dilation}, padding {pads}).")
    xp = pad(x, pads)
    n, channels = x.shape[0], x.shape[-1]
    per_image = int(np.prod(out_spatial))
    mat = _Kernel(kernel, groups)
    dtype = np.result_type(x.dtype, kernel.dtype)
    if n == 0:
        return empty_batch(x, kernel, bias, (0,) + out_spatial + (mat.filters,), dtype)
    window_cells = per_image * mat.taps * channels
    wino = winograd.applicable(kernel_size, strides, dilation, groups, channels, mat.filters, out_spatial, dtype)
    if wino:
        tile = winograd.choose_tile(out_spatial)
        blocks = _image_blocks(n, winograd.bytes_per_image(out_spatial, channels, dtype, tile))
    else:
        blocks = _image_blocks(n, window_cells * dtype.itemsize)
    out = np.empty((n * per_image, mat.filters), dtype=dtype)

    # One block: its window matrix (or Winograd tiles) is kept for the VJP. Several: each block's is rebuilt
    # there (window matrices in a reused scratch buffer), so memory stays bounded by one block.
    kept = []
    tiles = {}

    def windows_of(i0, i1):
        if kept:
            return kept[0]
        if len(blocks) == 1:
            kept.append(im2col(xp, kernel_size, strides, dilation, out_spatial))
            return kept[0]
        buf = scratch("cols", (i1 - i0) * window_cells, xp.dtype)
        return im2col(xp[i0:i1], kernel_size, strides, dilation, out_spatial, buf)

    def forward_block(block):
        i0, i1 = block
        rows = out[i0 * per_image:i1 * per_image]
        if wino:
            conv = winograd.WinogradConv2D(xp[i0:i1], kernel, dtype, tile)
            conv.forward(rows.reshape((i1 - i0,) + out_spatial + (mat.filters,)))
            if len(blocks) == 1:
                tiles[block] = conv
        else:
            mat.apply(windows_of(i0, i1), rows)
        if bias is not None:
            rows += bias
        if relu:
            np.maximum(rows, 0, out=rows)

    for block in blocks:
        forward_block(block)

    def backward(g, grads, with_x):
        g2 = g.reshape(out.shape)
        dxp = np.zeros(xp.shape, dtype=dtype) if with_x else None

        def backward_block(block):
            i0, i1 = block
            rows = slice(i0 * per_image, i1 * per_image)
            gb = g2[rows]
            if relu:
                # The relu's gradient mask, in this thread's reused buffers rather than fresh pages.
                size = gb.size
                mask = scratch("mask", size, bool).reshape(gb.shape)
                np.greater(out[rows], 0, out=mask)
                gb = np.multiply(gb, mask, out=scratch("grad", size, dtype).reshape(gb.shape))
            # The bias gradient as a matrix-vector product: a column sum in BLAS rather than a strided reduction.
            bias_grad = np.ones(gb.shape[0], dtype=dtype) @ gb if bias is not None else None
            if wino:
                conv = tiles.get(block) or winograd.WinogradConv2D(xp[i0:i1], kernel, dtype, tile)
                d_kernel, d_block = conv.gradients(gb.reshape((i1 - i0,) + out_spatial + (mat.filters,)), with_x)
                if with_x:
                    dxp[i0:i1] = d_block
                return d_kernel.reshape(mat.matrix.shape), bias_grad
            cols = windows_of(i0, i1)
            partial = (mat.weight_grad(cols, gb), bias_grad)
            if with_x:
                dcols = scratch("dcols", cols.size, dtype).reshape(cols.shape)
                mat.window_grad(gb, dcols)
                col2im_add(dxp[i0:i1], dcols.reshape((i1 - i0,) + out_spatial + kernel_size + (channels,)),
                           strides, dilation)
            return partial

        partials = [backward_block(block) for block in blocks]
        grads["kernel"] = mat.unmatrix(sum(p[0] for p in partials))
        grads["bias"] = sum(p[1] for p in partials) if bias is not None else None
        if with_x:
            grads["x"] = unpad(dxp, pads, spatial)

    return out.reshape((n,) + out_spatial + (mat.filters,)), lambda g: shared_vjp(backward, g, bias is not None)


@primitive(num_inputs=3)
def _conv_transpose(x, kernel, bias, strides, crops, dilation):
    x = np.asarray(x)
    r = x.ndim - 2
    kernel_size, filters, cin = tuple(kernel.shape[:r]), kernel.shape[r], kernel.shape[r + 1]
    spatial = x.shape[1:1 + r]
    n = x.shape[0]
    full = tuple((i - 1) * s + (k - 1) * d + 1 for i, k, s, d in zip(spatial, kernel_size, strides, dilation))
    out_spatial = tuple(f - c + e for f, (c, e) in zip(full, crops))
    if any(o < 1 for o in out_spatial):
        raise ValueError(f"The transposed convolution output would be empty for input spatial shape {spatial}.")
    buf_spatial = tuple(max(f, c + o) for f, (c, _), o in zip(full, crops, out_spatial))
    w = kernel.reshape(-1, cin)
    x2 = x.reshape(-1, cin)
    cols = (x2 @ w.T).reshape((n,) + spatial + kernel_size + (filters,))
    buf = col2im_add(np.zeros((n,) + buf_spatial + (filters,), dtype=cols.dtype), cols, strides, dilation)
    window = (slice(None),) + tuple(slice(c, c + o) for (c, _), o in zip(crops, out_spatial)) + (slice(None),)
    out = buf if buf.shape[1:1 + r] == out_spatial else np.ascontiguousarray(buf[window])
    if bias is not None:
        out += bias

    def vjp(g):
        gbuf = g
        if g.shape[1:1 + r] != buf_spatial:
            gbuf = np.zeros((n,) + buf_spatial + (filters,), dtype=g.dtype)
            gbuf[window] = g
        gcols = im2col(gbuf, kernel_size, strides, dilation, spatial)

        def d_bias():
            return g.sum(axis=tuple(range(g.ndim - 1)))

        return (lambda: (gcols @ w).reshape(x.shape), lambda: (gcols.T @ x2).reshape(kernel.shape),
                None if bias is None else d_bias)

    return out, vjp


def _check_ranks(inputs, kernel, op):
    x_shape, k_shape = np.shape(inputs), np.shape(kernel)
    if len(k_shape) < 3 or len(x_shape) != len(k_shape):
        raise ValueError(f"{op} expects inputs of shape (batch, *spatial, channels) and a kernel of shape "
                         f"(*kernel_size, in, out) with as many spatial axes. "
                         f"Received: inputs.shape={x_shape}, kernel.shape={k_shape}")
    return len(k_shape) - 2


def conv_args(inputs, kernel, strides, padding, data_format, dilation_rate, op):
    """Checked ``(strides, pads, dilation, groups)`` of a convolution of ``inputs`` with ``kernel``."""
    check_data_format(data_format)
    r = _check_ranks(inputs, kernel, op)
    x_shape, k_shape = np.shape(inputs), np.shape(kernel)
    channels, cin_g, filters = x_shape[-1], k_shape[-2], k_shape[-1]
    if channels % cin_g or filters % (channels // cin_g):
        raise ValueError(f"{op} expects the input channels to be a multiple of kernel.shape[-2] and the filters "
                         f"a multiple of the number of groups. Received: inputs.shape={x_shape}, "
                         f"kernel.shape={k_shape}")
    strides = normalize_tuple(strides, r, "strides")
    dilation = normalize_tuple(dilation_rate, r, "dilation_rate")
    pads = conv_pads(x_shape[1:-1], k_shape[:r], strides, padding, dilation)
    return strides, pads, dilation, channels // cin_g


@op
def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1, bias=None, relu=False):
    """N-D convolution (cross-correlation) of channels-last ``inputs`` with ``kernel``.

    Args:
        inputs: ``(batch, *spatial, channels)``.
        kernel: ``(*kernel_size, channels // groups, filters)``; the number of
            groups is ``channels // kernel.shape[-2]``.
        strides, dilation_rate: ints or one per spatial axis.
        padding: "valid", "same" (TensorFlow's rule: the odd padded cell goes
            at the end) or "causal" (all padding before, 1D).
        bias: optional ``(filters,)`` offsets added in the same op.
        relu: apply ``max(., 0)`` in the same op (saving a pass and a buffer).
    """
    strides, pads, dilation, groups = conv_args(inputs, kernel, strides, padding, data_format, dilation_rate, "conv")
    return _conv(inputs, kernel, bias, strides=strides, pads=pads, dilation=dilation, groups=groups,
                 relu=bool(relu))


@op
def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1, bias=None,
                   relu=False):
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
    return conv(inputs, grouped, strides, padding, data_format, dilation_rate, bias=bias, relu=relu)


@op
def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1, bias=None, relu=False):
    """A depthwise convolution followed by a 1x1 convolution with ``pointwise_kernel``."""
    depthwise = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(depthwise, pointwise_kernel, 1, "valid", data_format, 1, bias=bias, relu=relu)


@op
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
    check_data_format(data_format)
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
