"""Keras 3's image functions of ``keras.utils``: ``array_to_img``, ``img_to_array``, ``save_img``, ``load_img``.

Images are Pillow images (imported on first use; the ``images`` extra installs Pillow). Arrays are rank 3,
``(height, width, channels)`` or, with ``data_format="channels_first"``, ``(channels, height, width)``, with 1
(grayscale), 3 (RGB) or 4 (RGBA) channels.
"""
import io
import os
import warnings

import numpy as np

INSTALL_HINT = 'pip install "kgraph-engine[images]"'
COLOR_MODES = ("grayscale", "rgb", "rgba")
# Pillow's resampling filters by the names Keras takes.
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")
DATA_FORMATS = ("channels_first", "channels_last")


def _pil_image(function):
    """Pillow's ``Image`` module, or an ImportError naming the extra that installs it."""
    try:
        from PIL import Image
    except ImportError as err:
        raise ImportError(f"`{function}` needs Pillow, which is not installed: `{INSTALL_HINT}` "
                          "(or `pip install pillow`).") from err
    return Image


def _data_format(data_format):
    if data_format is None:
        from kgraph.config import image_data_format
        return image_data_format()
    normalized = str(data_format).lower()
    if normalized not in DATA_FORMATS:
        raise ValueError(f"The `data_format` argument must be one of {DATA_FORMATS}. "
                         f"Received: data_format={data_format!r}")
    return normalized


def _dtype(dtype):
    if dtype is None:
        from kgraph.backend.settings import floatx
        return floatx()
    return dtype


def _scaled_to_255(x):
    """Shifts the minimum to 0 and stretches the maximum to 255 (a constant image becomes all zeros)."""
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    shifted = x - np.min(x)
    peak = np.max(shifted)
    if peak != 0:
        shifted = shifted / peak
    return shifted * np.asarray(255, dtype=shifted.dtype)


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A rank-3 array as a Pillow image: mode ``"L"`` (or ``"I"`` above 255), ``"RGB"`` or ``"RGBA"``.

    With ``scale`` (the default) the values are mapped linearly onto 0..255 first; without it they are cast
    to bytes as they are. ``dtype`` (default: ``kgraph.config.floatx()``) is the type the array is read as.
    """
    data_format = _data_format(data_format)
    dtype = _dtype(dtype)
    image = _pil_image("array_to_img")
    x = np.asarray(x, dtype=dtype)
    if x.ndim != 3:
        raise ValueError(f"Expected image array to have rank 3 (single image). Got array with shape: {x.shape}")
    channels = x.shape[0] if data_format == "channels_first" else x.shape[2]
    if channels not in (1, 3, 4):
        raise ValueError(f"Unsupported channel number: {channels} (an image array has 1, 3 or 4 channels; "
                         f"array shape {x.shape} as {data_format})")
    if data_format == "channels_first":
        x = np.transpose(x, (1, 2, 0))
    if scale:
        x = _scaled_to_255(x)
    if channels == 1:
        plane = x[:, :, 0]
        if np.max(plane) > 255:
            return image.fromarray(np.ascontiguousarray(plane.astype(np.int32)))
        return image.fromarray(np.ascontiguousarray(plane.astype(np.uint8)))
    return image.fromarray(np.ascontiguousarray(x.astype(np.uint8)))


def img_to_array(img, data_format=None, dtype=None):
    """A Pillow image (or anything NumPy reads as a 2-D or 3-D array) as a rank-3 array of ``dtype``."""
    data_format = _data_format(data_format)
    x = np.asarray(img, dtype=_dtype(dtype))
    if x.ndim == 2:
        return x.reshape((1,) + x.shape if data_format == "channels_first" else x.shape + (1,))
    if x.ndim == 3:
        return np.transpose(x, (2, 0, 1)) if data_format == "channels_first" else x
    raise ValueError(f"Unsupported image shape: {x.shape} (an image has 2 or 3 dimensions)")


def _file_format(path, file_format):
    """The format to save in: ``file_format``, else the extension of the path (or of a file object's name)."""
    if file_format is None:
        name = path if isinstance(path, (str, bytes, os.PathLike)) else getattr(path, "name", None)
        if not isinstance(name, (str, bytes, os.PathLike)):
            raise ValueError("Saving to a file object needs `file_format` (for example 'png' or 'jpeg').")
        file_format = os.path.splitext(os.fsdecode(name))[1][1:]
        if not file_format:
            raise ValueError(f"Cannot tell the image format of {os.fsdecode(name)!r}: the name has no extension; "
                             "pass `file_format` (for example 'png' or 'jpeg').")
    file_format = str(file_format).lower()
    return "jpeg" if file_format == "jpg" else file_format


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes a rank-3 array as an image file at ``path`` (a path or a writable file object).

    The format comes from ``file_format`` or else from the file name's extension. An RGBA image saved as JPEG,
    which has no alpha channel, is converted to RGB with a warning. ``kwargs`` go to Pillow's ``Image.save``.
    """
    data_format = _data_format(data_format)
    file_format = _file_format(path, file_format)
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.", stacklevel=2)
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def _target_width_height(target_size):
    try:
        height, width = target_size
    except (TypeError, ValueError):
        raise ValueError("`target_size` must be None or a tuple of two integers (height, width). "
                         f"Received: target_size={target_size!r}") from None
    if not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0 for n in (height, width)):
        raise ValueError("`target_size` must hold two positive integers (height, width). "
                         f"Received: target_size={target_size!r}")
    return int(width), int(height)


def _open(image, path):
    if isinstance(path, (str, bytes, os.PathLike)):
        with open(path, "rb") as f:
            return image.open(io.BytesIO(f.read()))
    if hasattr(path, "read"):
        img = image.open(path)
        img.load()
        return img
    raise TypeError(f"path should be path-like or a binary file object (such as io.BytesIO), not {type(path)}")


def _in_color_mode(img, color_mode):
    if color_mode == "grayscale":
        # 8-, 16- and 32-bit grayscale images stay as they are; anything else becomes 8-bit grayscale.
        return img if img.mode in ("L", "I;16", "I") else img.convert("L")
    wanted = color_mode.upper()
    return img if img.mode == wanted else img.convert(wanted)


def _centered_crop(size, target):
    """The largest centered box of ``size`` (width, height) with the aspect ratio of ``target``."""
    width, height = size
    target_width, target_height = target
    crop_height = max(1, min(height, (width * target_height) // target_width))
    crop_width = max(1, min(width, (height * target_width) // target_height))
    left = (width - crop_width) // 2
    top = (height - crop_height) // 2
    return left, top, left + crop_width, top + crop_height


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """Reads an image file (a path or a binary file object) as a Pillow image.

    ``color_mode``: ``"grayscale"``, ``"rgb"`` or ``"rgba"``. ``target_size``: ``None`` or ``(height, width)``;
    a different size is resampled with ``interpolation`` (``"nearest"``, ``"bilinear"``, ``"bicubic"``,
    ``"hamming"``, ``"box"`` or ``"lanczos"``), after cropping the centre to the target's aspect ratio when
    ``keep_aspect_ratio`` is true.
    """
    if color_mode not in COLOR_MODES:
        raise ValueError(f'color_mode must be "grayscale", "rgb", or "rgba". Received: color_mode={color_mode!r}')
    width_height = None
    if target_size is not None:
        width_height = _target_width_height(target_size)
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"Invalid interpolation method {interpolation!r} specified. Supported methods are "
                             f"{', '.join(INTERPOLATIONS)}")
    image = _pil_image("load_img")
    img = _in_color_mode(_open(image, path), color_mode)
    if width_height is None or img.size == width_height:
        return img
    resample = getattr(image.Resampling, interpolation.upper())
    box = _centered_crop(img.size, width_height) if keep_aspect_ratio else None
    return img.resize(width_height, resample, box=box)
