"""Image ops of ``keras.ops.image`` on rank-3 (one image) or rank-4 (batch) inputs, written with other ops.

Resizing is a product with constant interpolation matrices (half-pixel
centres, as Keras), so it is differentiable and exports as MatMul/Einsum.
"""
import numpy as np

from kgraph.ops import creation as _creation
from kgraph.ops import math as _math
from kgraph.ops import numpy_index as _numpy_index
from kgraph.ops import reductions as _reductions

# ``kgraph.ops.linalg`` and ``.shape`` name a Keras namespace and an op, not the modules: ops imported by name.
from kgraph.ops.linalg import solve as _solve
from kgraph.ops.numpy_math import dtype_of, floating
from kgraph.ops.operations import op
from kgraph.ops.shape import concatenate as _concatenate
from kgraph.ops.shape import expand_dims as _expand_dims
from kgraph.ops.shape import getitem as _getitem
from kgraph.ops.shape import moveaxis as _moveaxis
from kgraph.ops.shape import pad as _pad
from kgraph.ops.shape import reshape as _reshape
from kgraph.ops.shape import shape as _shape
from kgraph.ops.shape import stack as _stack
from kgraph.ops.shape import take as _take
from kgraph.ops.shape import transpose as _transpose
from kgraph.ops.shape import unstack as _unstack

__all__ = [
    "affine_transform", "crop_images", "hsv_to_rgb", "map_coordinates", "pad_images", "perspective_transform",
    "resize", "rgb_to_grayscale", "rgb_to_hsv", "ssim",
]

_INTERPOLATIONS = ("bilinear", "nearest")


def _format(data_format):
    data_format = "channels_last" if data_format is None else data_format
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of {'channels_first', 'channels_last'}. "
                         f"Received: data_format={data_format}")
    return data_format


def _axes(images, data_format):
    """(height axis, width axis, channel axis) of ``images``."""
    rank = len(_shape(images))
    if rank not in (3, 4):
        raise ValueError("Invalid images rank: expected rank 3 (single image) or rank 4 (batch of images). "
                         f"Received: images.shape={_shape(images)}")
    if _format(data_format) == "channels_last":
        return rank - 3, rank - 2, rank - 1
    return rank - 2, rank - 1, rank - 3


def _interpolation_matrix(in_size, out_size, interpolation):
    """``(out_size, in_size)`` weights mapping source pixels to output pixels (half-pixel centres)."""
    out_idx = np.arange(out_size)
    matrix = np.zeros((out_size, in_size))
    if interpolation == "nearest":
        src = np.minimum(np.floor((out_idx + 0.5) * (in_size / out_size)).astype(np.int64), in_size - 1)
        matrix[out_idx, src] = 1
        return matrix
    src = np.clip((out_idx + 0.5) * (in_size / out_size) - 0.5, 0, in_size - 1)
    low = np.floor(src).astype(np.int64)
    high = np.minimum(low + 1, in_size - 1)
    frac = src - low
    np.add.at(matrix, (out_idx, low), 1 - frac)
    np.add.at(matrix, (out_idx, high), frac)
    return matrix


@op
def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    """Resize images to ``size = (height, width)`` by bilinear or nearest interpolation (half-pixel centres)."""
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"kgraph resizes with one of {_INTERPOLATIONS}. Received: interpolation={interpolation!r}")
    if antialias or crop_to_aspect_ratio or pad_to_aspect_ratio:
        raise ValueError("kgraph's resize has no antialiasing and keeps the aspect ratio it is asked for. Received: "
                         f"antialias={antialias}, crop_to_aspect_ratio={crop_to_aspect_ratio}, "
                         f"pad_to_aspect_ratio={pad_to_aspect_ratio}")
    if len(size) != 2:
        raise ValueError(f"size must be (height, width). Received: size={size}")
    images = floating(images)
    h_axis, w_axis, _ = _axes(images, data_format)
    dtype = dtype_of(images)
    out = images
    for axis, target in ((h_axis, size[0]), (w_axis, size[1])):
        source = _shape(images)[axis]
        if source == target:
            continue
        matrix = _interpolation_matrix(source, target, interpolation).astype(dtype)
        moved = _moveaxis(out, axis, -1)
        out = _moveaxis(_math.matmul(moved, matrix.T), -1, axis)
    return out


@op
def rgb_to_grayscale(images, data_format=None):
    """Luma of RGB images (ITU-R BT.601 weights), keeping a channel axis of size 1."""
    _, _, c_axis = _axes(images, data_format)
    images = floating(images)
    weights = np.array([0.2989, 0.5870, 0.1140], dtype=dtype_of(images))
    return _expand_dims(_numpy_index.tensordot(images, weights, axes=([c_axis], [0])), c_axis)


@op
def rgb_to_hsv(images, data_format=None):
    """RGB images (values in [0, 1]) to hue, saturation and value, each in [0, 1]."""
    _, _, c_axis = _axes(images, data_format)
    images = floating(images)
    r, g, b = _unstack(images, axis=c_axis)
    value = _math.maximum(_math.maximum(r, g), b)
    spread = value - _math.minimum(_math.minimum(r, g), b)
    saturation = _math.where(_math.greater(value, 0), spread / _math.where(_math.greater(value, 0), value, 1), 0)
    safe = _math.where(_math.greater(spread, 0), spread, 1) * 6
    hue = _math.where(_math.equal(r, value), (g - b) / safe,
                   _math.where(_math.equal(g, value), (b - r) / safe + 1 / 3, (r - g) / safe + 2 / 3))
    hue = _math.where(_math.greater(spread, 0), hue, 0)
    hue = _math.where(_math.less(hue, 0), hue + 1, hue)
    return _stack([hue, saturation, value], axis=c_axis)


@op
def hsv_to_rgb(images, data_format=None):
    """Hue, saturation and value images (each in [0, 1]) to RGB."""
    _, _, c_axis = _axes(images, data_format)
    images = floating(images)
    h, s, v = _unstack(images, axis=c_axis)
    dh = h * 6
    dr = _math.clip(_math.abs(dh - 3) - 1, 0.0, 1.0)
    dg = _math.clip(2 - _math.abs(dh - 2), 0.0, 1.0)
    db = _math.clip(2 - _math.abs(dh - 4), 0.0, 1.0)
    grey = 1 - s
    return _stack([v * (grey + s * dr), v * (grey + s * dg), v * (grey + s * db)], axis=c_axis)


def _margins(name, size, first, last, target):
    """``(first, last)`` margins along one axis from two of: first, last, the target size."""
    given = [first is not None, last is not None, target is not None]
    if sum(given) != 2:
        raise ValueError(f"{name} needs exactly two of the margins and the target size along each axis. "
                         f"Received: {first}, {last}, target={target}")
    if first is None:
        first = abs(target - size) - last
    if last is None:
        last = abs(target - size) - first
    if first < 0 or last < 0:
        raise ValueError(f"{name}: the margins must not be negative. Received: {first}, {last} for size {size}")
    return first, last


@op
def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None, right_padding=None,
               target_height=None, target_width=None, data_format=None):
    """Zero-pad images on each side (margins given, or derived from a target size)."""
    h_axis, w_axis, _ = _axes(images, data_format)
    shape = _shape(images)
    widths = [(0, 0)] * len(shape)
    widths[h_axis] = _margins("pad_images", shape[h_axis], top_padding, bottom_padding, target_height)
    widths[w_axis] = _margins("pad_images", shape[w_axis], left_padding, right_padding, target_width)
    return _pad(images, widths)


@op
def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None, right_cropping=None,
                target_height=None, target_width=None, data_format=None):
    """Crop images on each side (margins given, or derived from a target size)."""
    h_axis, w_axis, _ = _axes(images, data_format)
    shape = _shape(images)
    key = [slice(None)] * len(shape)
    for axis, first, last, target in ((h_axis, top_cropping, bottom_cropping, target_height),
                                      (w_axis, left_cropping, right_cropping, target_width)):
        first, last = _margins("crop_images", shape[axis], first, last, target)
        key[axis] = slice(first, shape[axis] - last)
    return _getitem(images, tuple(key))


_FILL_MODES = ("constant", "nearest", "wrap", "mirror", "reflect")


def _fold_index(index, size, fill_mode):
    """Integer positions mapped into ``[0, size)`` by ``fill_mode`` (SciPy's rules); constant keeps them."""
    if fill_mode == "nearest":
        return _math.clip(index, 0, size - 1)
    if fill_mode == "wrap":
        return _math.mod(index, size)
    if fill_mode == "mirror":  # ... 2 1 | 0 1 2 ... n-1 | n-2 ...
        period = max(2 * size - 2, 1)
        folded = _math.mod(index, period)
        return _math.where(_math.greater_equal(folded, size), period - folded, folded)
    if fill_mode == "reflect":  # ... 1 0 | 0 1 ... n-1 | n-1 ...
        folded = _math.mod(index, 2 * size)
        return _math.where(_math.greater_equal(folded, size), 2 * size - 1 - folded, folded)
    return index


@op
def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0.0):
    """``inputs`` sampled at ``coordinates`` (one row per input axis) by nearest (order 0) or linear (order 1)
    interpolation; outside the input, ``fill_mode`` as SciPy's."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1. Received: order={order}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"fill_mode must be one of {_FILL_MODES}. Received: fill_mode={fill_mode!r}")
    shape = _shape(inputs)
    coordinates = floating(coordinates)
    if _shape(coordinates)[0] != len(shape):
        raise ValueError(f"coordinates need one row per input axis ({len(shape)}). "
                         f"Received: coordinates.shape={_shape(coordinates)}")
    flat = _reshape(inputs, (-1,))
    strides = [int(np.prod(shape[d + 1:])) for d in range(len(shape))]
    rows = [coordinates[d] for d in range(len(shape))]
    if order == 0:
        corners = [[(_math.floor(r + 0.5), None)] for r in rows]
    else:
        corners = []
        for r in rows:
            low = _math.floor(r)
            corners.append([(low, 1 - (r - low)), (low + 1, r - low)])
    out = None
    for choice in np.ndindex(*[len(c) for c in corners]):
        index, weight, inside = 0, None, None
        for d, k in enumerate(choice):
            position, w = corners[d][k]
            position = _math.cast(position, "int32")
            valid = _math.logical_and(_math.greater_equal(position, 0), _math.less(position, shape[d]))
            inside = valid if inside is None else _math.logical_and(inside, valid)
            position = _math.clip(_fold_index(position, shape[d], fill_mode), 0, shape[d] - 1)
            index = index + position * strides[d]
            weight = w if weight is None else (w if w is None else weight * w)
        value = _take(flat, index)
        if fill_mode == "constant":
            value = _math.where(inside, value, fill_value)
        term = value if weight is None else value * weight
        out = term if out is None else out + term
    return out


@op
def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """Sample each image at ``((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)``, ``k = c0 x + c1 y + 1``, for the
    8 projective coefficients ``[a0, a1, a2, b0, b1, b2, c0, c1]`` of its ``transform`` row."""
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {_INTERPOLATIONS}. Received: interpolation={interpolation!r}")
    if fill_mode not in _FILL_MODES:
        raise ValueError(f"fill_mode must be one of {_FILL_MODES}. Received: fill_mode={fill_mode!r}")
    single = len(_shape(images)) == 3
    x = _expand_dims(images, 0) if single else images
    transform = floating(transform)
    transform = _expand_dims(transform, 0) if len(_shape(transform)) == 1 else transform
    if _format(data_format) == "channels_first":
        x = _transpose(x, (0, 2, 3, 1))
    x = floating(x)
    _, height, width, channels = _shape(x)
    transform = transform + _creation.zeros_like(x[:, 0, 0, :1])  # one row per image, a single row shared by all
    rows = np.arange(height, dtype=dtype_of(x))[:, None] * np.ones((1, width), dtype=dtype_of(x))
    cols = np.ones((height, 1), dtype=dtype_of(x)) * np.arange(width, dtype=dtype_of(x))[None, :]
    coef = [_reshape(transform[:, i], (-1, 1, 1)) for i in range(8)]
    k = coef[6] * cols + coef[7] * rows + 1
    src_x = (coef[0] * cols + coef[1] * rows + coef[2]) / k
    src_y = (coef[3] * cols + coef[4] * rows + coef[5]) / k
    # Row offsets of each image in the flattened batch: a running count, so an unknown batch size works.
    batch = _reshape(_reductions.cumsum(_creation.ones_like(transform[:, :1]), axis=0) - 1, (-1, 1, 1))
    pixels = _reshape(x, (-1, channels))
    if interpolation == "nearest":
        corners = [(_math.round(src_y), _math.round(src_x), None)]  # half to even, as Keras
    else:
        y0, x0 = _math.floor(src_y), _math.floor(src_x)
        wy, wx = src_y - y0, src_x - x0
        corners = [(y0, x0, (1 - wy) * (1 - wx)), (y0, x0 + 1, (1 - wy) * wx), (y0 + 1, x0, wy * (1 - wx)),
                   (y0 + 1, x0 + 1, wy * wx)]
    out = None
    for y, x_, weight in corners:
        yi, xi = _math.cast(y, "int32"), _math.cast(x_, "int32")
        inside = _math.logical_and(_math.logical_and(_math.greater_equal(yi, 0), _math.less(yi, height)),
                                _math.logical_and(_math.greater_equal(xi, 0), _math.less(xi, width)))
        yi = _math.clip(_fold_index(yi, height, fill_mode), 0, height - 1)
        xi = _math.clip(_fold_index(xi, width, fill_mode), 0, width - 1)
        index = _math.cast(batch, "int32") * (height * width) + yi * width + xi
        value = _take(pixels, index, axis=0)
        if fill_mode == "constant":
            value = _math.where(_expand_dims(inside, -1), value, fill_value)
        term = value if weight is None else value * _expand_dims(weight, -1)
        out = term if out is None else out + term
    if _format(data_format) == "channels_first":
        out = _transpose(out, (0, 3, 1, 2))
    return out[0] if single else out


@op
def perspective_transform(images, start_points, end_points, interpolation="bilinear", fill_value=0,
                          data_format=None):
    """Warp images so that the four ``start_points`` (x, y) land on ``end_points``: the projective transform
    from output to input points, solved from the four pairs, applied by ``affine_transform``."""
    start, end = floating(start_points), floating(end_points)
    if len(_shape(start)) == 2:
        start, end = _expand_dims(start, 0), _expand_dims(end, 0)
    if tuple(_shape(start)[1:]) != (4, 2) or tuple(_shape(end)[1:]) != (4, 2):
        raise ValueError("start_points and end_points must hold 4 points (x, y) per image. "
                         f"Received: start_points.shape={_shape(start)}, end_points.shape={_shape(end)}")
    xo, yo, xi, yi = end[..., 0], end[..., 1], start[..., 0], start[..., 1]
    zeros, ones = _creation.zeros_like(xo), _creation.ones_like(xo)
    # Each pair gives two rows of the 8x8 system for (a0, a1, a2, b0, b1, b2, c0, c1).
    rows_x = _stack([xo, yo, ones, zeros, zeros, zeros, -xi * xo, -xi * yo], axis=-1)
    rows_y = _stack([zeros, zeros, zeros, xo, yo, ones, -yi * xo, -yi * yo], axis=-1)
    system = _concatenate([rows_x, rows_y], axis=1)
    coefficients = _solve(system, _concatenate([xi, yi], axis=1))
    return affine_transform(images, coefficients, interpolation=interpolation, fill_mode="constant",
                            fill_value=fill_value, data_format=data_format)


def _gaussian_valid(x, size, sigma, axes):
    """``x`` filtered by a normalized Gaussian of ``size`` taps along each of ``axes``, "valid" (no padding)."""
    taps = np.exp(-0.5 * np.square(np.arange(size) - (size - 1) / 2) / sigma ** 2)
    taps /= taps.sum()
    for axis in axes:
        n = _shape(x)[axis]
        band = np.zeros((n - size + 1, n), dtype=dtype_of(x))
        for i in range(n - size + 1):
            band[i, i:i + size] = taps
        x = _moveaxis(_math.matmul(_moveaxis(x, axis, -1), band.T), -1, axis)
    return x


@op
def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, data_format=None):
    """Structural similarity of two (batches of) images with a Gaussian window, averaged per image."""
    h_axis, w_axis, c_axis = _axes(image1, data_format)
    x, y = floating(image1), floating(image2)
    c1, c2 = (k1 * max_val) ** 2, (k2 * max_val) ** 2

    def blur(t):
        return _gaussian_valid(t, filter_size, filter_sigma, (h_axis, w_axis))

    mu_x, mu_y = blur(x), blur(y)
    var_x = blur(x * x) - mu_x * mu_x
    var_y = blur(y * y) - mu_y * mu_y
    cov = blur(x * y) - mu_x * mu_y
    luminance = (2 * mu_x * mu_y + c1) / (mu_x * mu_x + mu_y * mu_y + c1)
    contrast = (2 * cov + c2) / (var_x + var_y + c2)
    return _reductions.mean(luminance * contrast, axis=(h_axis, w_axis, c_axis))
