"""Image filters and warps of ``keras.ops.image``: gaussian_blur, sobel_edges, elastic_transform, scale_and_translate.

The filters are products with constant banded matrices, one per spatial axis
(zero padding for the blur, edge replication for Sobel, as Keras's NumPy
backend), so they are differentiable and export as MatMul. The elastic warp
gathers pixels at displaced positions drawn with NumPy; scale_and_translate
builds its resampling matrices from ``scale`` and ``translation`` with ops, so
those may be tensors too.
"""
import math

import numpy as np

from kgraph import random as _random
from kgraph.ops import math as _math
from kgraph.ops import numpy_index as _numpy_index
from kgraph.ops import reductions as _reductions
from kgraph.ops.image import _FILL_MODES, _axes, _fold_index
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op

# ``kgraph.ops.shape`` names the op, not the module: the module's ops are imported by name.
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import squeeze as _squeeze
from kgraph.ops.shape import stack as _stack
from kgraph.ops.shape import take as _take

__all__ = ["elastic_transform", "gaussian_blur", "scale_and_translate", "sobel_edges"]

_INTERPOLATION_ORDERS = {"nearest": 0, "bilinear": 1}
_LINEAR, _CUBIC = ("linear", "bilinear", "trilinear"), ("cubic", "bicubic", "tricubic")
_METHODS = _LINEAR + _CUBIC + ("lanczos3", "lanczos5")


def _compute_dtype(dtype):
    """The float dtype a filter computes in: the input's if it is float32 or wider, float32 otherwise."""
    return dtype if dtype.kind == "f" and dtype.itemsize >= 4 else np.dtype("float32")


def _spatial_sizes(images, axes, name):
    shape = _shape(images)
    sizes = [shape[a] for a in axes]
    if None in sizes:
        raise ValueError(f"{name} needs images of known height and width. Received: images.shape={shape}")
    return sizes


def _along(x, axis, matrix):
    """``x`` with each line along ``axis`` multiplied by ``matrix`` (``out[i] = sum_j matrix[i, j] in[j]``)."""
    return _moveaxis(_math.matmul(_moveaxis(x, axis, -1), matrix.T), -1, axis)


def _pair(name, value):
    """A number or a pair of numbers as two float64s."""
    values = np.ravel(np.asarray(value, dtype=np.float64))
    if values.size == 1:
        values = np.repeat(values, 2)
    if values.size != 2:
        raise ValueError(f"`{name}` must be a number or a pair of numbers. Received: {name}={value}")
    return values


def _gaussian_band(n, size, sigma):
    """``(n, n)`` matrix of a normalized ``size``-tap Gaussian, centred as a "same" convolution with zero padding
    (an even size has one more tap after the centre than before)."""
    taps = np.exp(-0.5 * np.square((np.arange(size) - (size - 1) / 2) / sigma))
    taps /= taps.sum()
    rows = np.arange(n)[:, None]
    cols = rows + np.arange(size)[None, :] - (size - 1) // 2
    band = np.zeros((n, n))
    valid = (cols >= 0) & (cols < n)
    np.add.at(band, (np.broadcast_to(rows, cols.shape)[valid], cols[valid]), np.broadcast_to(taps, cols.shape)[valid])
    return band


def _blur_sizes(kernel_size, sigma):
    sizes, sigmas = _pair("kernel_size", kernel_size), _pair("sigma", sigma)
    if np.any(sizes < 1) or np.any(sizes != np.round(sizes)):
        raise ValueError(f"`kernel_size` must hold positive integers. Received: kernel_size={kernel_size}")
    if not np.all(sigmas > 0):
        raise ValueError(f"`sigma` must be positive. Received: sigma={sigma}")
    return sizes.astype(np.int64), sigmas


@op
def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    """Blur images with a normalized Gaussian kernel, zero-padded to keep their size.

    Args:
        kernel_size, sigma: numbers or pairs. As in every Keras backend, a pair is read as ``(x, y)``: its first
            entry filters along the width, its second along the height.
    """
    h_axis, w_axis, _ = _axes(images, data_format)
    sizes, sigmas = _blur_sizes(kernel_size, sigma)
    height, width = _spatial_sizes(images, (h_axis, w_axis), "gaussian_blur")
    dtype = dtype_of(images)
    compute = _compute_dtype(dtype)
    x = images if compute == dtype else _math.cast(images, compute)
    x = _along(x, h_axis, _gaussian_band(height, sizes[1], sigmas[1]).astype(compute))
    x = _along(x, w_axis, _gaussian_band(width, sizes[0], sigmas[0]).astype(compute))
    return x if compute == dtype else _math.cast(x, dtype)


def _edge_band(n, taps):
    """``(n, n)`` matrix of a 3-tap correlation whose outside neighbours repeat the edge pixel."""
    band = np.zeros((n, n))
    rows = np.arange(n)
    for offset, tap in zip((-1, 0, 1), taps):
        np.add.at(band, (rows, np.clip(rows + offset, 0, n - 1)), tap)
    return band


@op
def sobel_edges(images, data_format=None):
    """Sobel gradients of a batch of images: ``(..., 2)`` holding ``[dy, dx]`` for every pixel and channel.

    Each is a central difference along its axis smoothed by ``[1, 2, 1]`` along the other; beyond the border
    the edge pixels repeat (SciPy's "reflect", as Keras's NumPy backend).
    """
    if len(_shape(images)) != 4:
        raise ValueError(f"Invalid images rank: expected rank 4 (batch of images). Received: images.shape="
                         f"{_shape(images)}")
    h_axis, w_axis, _ = _axes(images, data_format)
    height, width = _spatial_sizes(images, (h_axis, w_axis), "sobel_edges")
    dtype = dtype_of(images)
    compute = _compute_dtype(dtype)
    x = images if compute == dtype else _math.cast(images, compute)
    diff_h, smooth_h = (_edge_band(height, taps).astype(compute) for taps in ((-1, 0, 1), (1, 2, 1)))
    diff_w, smooth_w = (_edge_band(width, taps).astype(compute) for taps in ((-1, 0, 1), (1, 2, 1)))
    dy = _along(_along(x, h_axis, diff_h), w_axis, smooth_w)
    dx = _along(_along(x, h_axis, smooth_h), w_axis, diff_w)
    out = _stack([dy, dx], axis=-1)
    return out if compute == dtype else _math.cast(out, dtype)


def _check_warp_arguments(interpolation, fill_mode):
    if interpolation not in _INTERPOLATION_ORDERS:
        raise ValueError(f"Invalid value for argument `interpolation`. Expected one of "
                         f"{tuple(_INTERPOLATION_ORDERS)}. Received: interpolation={interpolation}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"Invalid value for argument `fill_mode`. Expected one of {_FILL_MODES}. "
                         f"Received: fill_mode={fill_mode}")


def _sample(x, rows, cols, order, fill_mode, fill_value):
    """NHWC ``x`` read at the positions ``(rows, cols)`` (NumPy arrays of shape (batch, height, width)) by nearest
    (order 0, halves to even) or bilinear (order 1) interpolation; outside, ``fill_mode`` as SciPy's."""
    batch, height, width, channels = _shape(x)
    pixels = _reshape(x, (-1, channels))
    offsets = (np.arange(batch) * (height * width))[:, None, None]
    if order == 0:
        corners = [(np.round(rows), np.round(cols), np.ones_like(rows))]
    else:
        r0, c0 = np.floor(rows), np.floor(cols)
        fr, fc = rows - r0, cols - c0
        corners = [(r0, c0, (1 - fr) * (1 - fc)), (r0, c0 + 1, (1 - fr) * fc), (r0 + 1, c0, fr * (1 - fc)),
                   (r0 + 1, c0 + 1, fr * fc)]
    dtype = dtype_of(x)
    out, fill_weight = None, np.zeros_like(rows)
    for r, c, weight in corners:
        r, c = r.astype(np.int64), c.astype(np.int64)
        inside = (r >= 0) & (r < height) & (c >= 0) & (c < width)
        r = np.clip(np.asarray(_fold_index(r, height, fill_mode)), 0, height - 1)
        c = np.clip(np.asarray(_fold_index(c, width, fill_mode)), 0, width - 1)
        if fill_mode == "constant":
            fill_weight = fill_weight + weight * ~inside
            weight = weight * inside
        term = _math.multiply(_take(pixels, offsets + r * width + c, axis=0), weight[..., None].astype(dtype))
        out = term if out is None else _math.add(out, term)
    if fill_mode == "constant" and fill_value != 0:
        out = _math.add(out, (fill_value * fill_weight[..., None]).astype(dtype))
    return out


def _elastic_warp(images, noise, alpha, sigma, interpolation, fill_mode, fill_value, data_format):
    """``images`` displaced by ``alpha`` times the fields ``noise * sigma`` (``noise[0]`` along the width,
    ``noise[1]`` along the height, each of shape (batch, height, width)) blurred by a Gaussian of ``sigma``."""
    h_axis, w_axis, c_axis = _axes(images, data_format)
    rank = len(_shape(images))
    height, width = _spatial_sizes(images, (h_axis, w_axis), "elastic_transform")
    size = int(6 * sigma) | 1
    field = np.asarray(noise, dtype=np.float64) * sigma
    field = _gaussian_band(height, size, sigma) @ field @ _gaussian_band(width, size, sigma).T
    cols = np.arange(width)[None, None, :] + alpha * field[0]
    rows = np.arange(height)[None, :, None] + alpha * field[1]
    dtype = dtype_of(images)
    compute = _compute_dtype(dtype)
    x = images if compute == dtype else _math.cast(images, compute)
    if rank == 3:
        x = _expand_dims(x, 0)
    if c_axis in (0, 1):
        x = _moveaxis(x, 1, -1)
    out = _sample(x, rows, cols, _INTERPOLATION_ORDERS[interpolation], fill_mode, fill_value)
    if c_axis in (0, 1):
        out = _moveaxis(out, -1, 1)
    if rank == 3:
        out = _squeeze(out, 0)
    if dtype.kind in "iub":
        out = _math.round(out)
    return out if compute == dtype else _math.cast(out, dtype)


@op
def elastic_transform(images, alpha=20.0, sigma=5.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                      seed=None, data_format=None):
    """Displace every pixel by random smooth fields: two standard normal fields per image scaled by ``sigma``,
    blurred by a Gaussian of standard deviation ``sigma`` (``int(6 * sigma) | 1`` taps, zero padding), scaled by
    ``alpha``; the images are read there by ``interpolation``, with ``fill_mode`` outside.

    Args:
        seed: None (kgraph's global generator), an int (the same fields at every call with the same shape) or a
            ``kgraph.random.SeedGenerator`` (fresh fields at every call, repeatable from its seed).
    """
    _check_warp_arguments(interpolation, fill_mode)
    h_axis, w_axis, _ = _axes(images, data_format)
    alpha, sigma = _finite_number("alpha", alpha), _finite_number("sigma", sigma)
    if sigma <= 0:
        raise ValueError(f"`sigma` must be positive. Received: sigma={sigma}")
    shape = _shape(images)
    height, width = _spatial_sizes(images, (h_axis, w_axis), "elastic_transform")
    batch = shape[0] if len(shape) == 4 else 1
    noise = _random.normal((2, batch, height, width), dtype="float64", seed=seed)
    return _elastic_warp(images, noise, alpha, sigma, interpolation, fill_mode, fill_value, data_format)


def _finite_number(name, value):
    """``value`` (a real number or a 0-d array of one) as a Python float."""
    array = np.asarray(value) if isinstance(value, (int, float, np.ndarray, np.number)) else None
    if array is None or array.ndim != 0 or array.dtype.kind not in "iuf" or not np.isfinite(array):
        raise ValueError(f"`{name}` must be a finite number. Received: {name}={value}")
    return float(array)


def _triangle(x):
    return _math.maximum(1.0 - x, 0.0)


def _keys_cubic(x):
    near = (1.5 * x - 2.5) * x * x + 1.0
    far = ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0
    return _math.where(_math.greater_equal(x, 2.0), 0.0, _math.where(_math.greater_equal(x, 1.0), far, near))


def _lanczos(radius):
    def kernel(x):
        y = radius * _math.sin(math.pi * x) * _math.sin(math.pi * x / radius)
        # Below 1e-3 the kernel is 1 to float precision; the guarded division keeps the gradient finite at 0.
        small = _math.less_equal(x, 1e-3)
        out = _math.where(small, 1.0, y / _math.where(small, 1.0, math.pi ** 2 * x * x))
        return _math.where(_math.greater(x, radius), 0.0, out)
    return kernel


def _kernel(method):
    if method in _LINEAR:
        return _triangle
    if method in _CUBIC:
        return _keys_cubic
    return _lanczos(3.0 if method == "lanczos3" else 5.0)


def _resampling_matrix(in_size, out_size, scale, translation, kernel, antialias, dtype):
    """``(in_size, out_size)`` weights: output pixel ``j`` (centre ``j + 0.5``) reads the input around
    ``(j + 0.5 - translation) / scale - 0.5``, by ``kernel`` stretched by ``1 / scale`` when antialiasing a
    downscale; the weights of each output are normalized, and zero where it falls outside the input."""
    inv_scale = _math.divide(1.0, scale)
    centres = np.arange(out_size, dtype=dtype) + 0.5
    sample = _math.subtract(_math.multiply(centres, inv_scale), _math.multiply(translation, inv_scale)) - 0.5
    distance = _math.abs(_math.subtract(_expand_dims(sample, 0), np.arange(in_size, dtype=dtype)[:, None]))
    if antialias:
        distance = distance / _math.maximum(inv_scale, 1.0)
    weights = kernel(distance)
    total = _reductions.sum(weights, axis=0, keepdims=True)
    usable = _math.greater(_math.abs(total), 1000.0 * float(np.finfo(np.float32).eps))
    weights = _math.where(usable, weights / _math.where(usable, total, 1.0), 0.0)
    inside = _math.logical_and(_math.greater_equal(sample, -0.5), _math.less_equal(sample, in_size - 0.5))
    return _math.where(_expand_dims(inside, 0), weights, 0.0)


def _vector(value, name, length):
    # Python sequences follow Keras's conversion (floats become floatx); arrays and tensors keep their dtype.
    vector = floating(_math.convert_to_tensor(value) if isinstance(value, (list, tuple)) else value)
    shape = _shape(vector)
    if len(shape) != 1 or shape[0] not in (None, length):
        raise ValueError(f"`{name}` must hold one value per spatial dimension ({length}). "
                         f"Received: {name}.shape={shape}")
    return vector


@op
def scale_and_translate(images, output_shape, scale, translation, spatial_dims, method, antialias=True):
    """Resample ``images`` to ``output_shape`` along ``spatial_dims``: input position ``p`` (pixel centres at
    ``i + 0.5``) lands at ``p * scale + translation``; outputs that map outside the input are zero.

    ``method`` picks the kernel: linear (``linear``, ``bilinear``, ``trilinear``), Keys cubic (``cubic``,
    ``bicubic``, ``tricubic``), ``lanczos3`` or ``lanczos5``; ``antialias`` widens it when downscaling. The sizes
    of ``output_shape`` along the other axes are not read (those axes keep their size). Integer images are
    rounded and clipped to their own range. ``scale`` and ``translation`` may be tensors (the result is
    differentiable in them too).
    """
    if method not in _METHODS:
        raise ValueError(f"Invalid value for argument `method`. Expected one of {_METHODS}. Received: method={method}")
    shape = _shape(images)
    rank = len(shape)
    if len(output_shape) != rank:
        raise ValueError(f"`output_shape` must have one size per axis of images ({rank}). "
                         f"Received: output_shape={output_shape}, images.shape={shape}")
    dims = [int(d) for d in spatial_dims]
    if any(not -rank <= d < rank for d in dims) or len({d % rank for d in dims}) != len(dims):
        raise ValueError(f"`spatial_dims` must name distinct axes of images (rank {rank}). "
                         f"Received: spatial_dims={spatial_dims}")
    dims = [d % rank for d in dims]
    if not dims:
        return images
    scale, translation = _vector(scale, "scale", len(dims)), _vector(translation, "translation", len(dims))
    weight_dtype = np.result_type(dtype_of(scale), dtype_of(translation))
    dtype = dtype_of(images)
    integer = dtype.kind in "iub"
    out = _math.cast(images, "float32") if integer else images
    out_dtype = dtype_of(out)
    kernel = _kernel(method)
    for i, d in enumerate(dims):
        if shape[d] is None or output_shape[d] is None:
            raise ValueError(f"scale_and_translate needs known input and output sizes along axis {d}. "
                             f"Received: images.shape={shape}, output_shape={output_shape}")
        matrix = _resampling_matrix(shape[d], int(output_shape[d]), scale[i], translation[i], kernel, antialias,
                                    weight_dtype)
        out = _moveaxis(_numpy_index.tensordot(out, _math.cast(matrix, out_dtype), axes=([d], [0])), -1, d)
    if integer:
        low, high = _math.cast(_reductions.min(images), "float32"), _math.cast(_reductions.max(images), "float32")
        out = _math.cast(_math.minimum(_math.maximum(_math.round(out), low), high), dtype)
    return out
