"""``keras.preprocessing.image``: image arrays and files, and ``smart_resize``."""
import numpy as np

from kgraph.utils.image_utils import array_to_img, img_to_array, load_img, save_img

__all__ = ["array_to_img", "img_to_array", "load_img", "save_img", "smart_resize"]


def _crop_box(height, width, target_height, target_width):
    """The centred box of the target's aspect ratio, as large as the image allows: (top, left, height, width)."""
    crop_height = max(min(height, int(float(width * target_height) / target_width)), 1)
    crop_width = max(min(width, int(float(height * target_width) / target_height)), 1)
    return int(float(height - crop_height) / 2), int(float(width - crop_width) / 2), crop_height, crop_width


def smart_resize(x, size, interpolation="bilinear", data_format="channels_last", **kwargs):
    """Resize images to ``size`` without distorting them: the largest centred crop of the target's aspect
    ratio is taken, then resized (``kgraph.ops.image.resize``) to ``size``.

    x: an image ``(height, width, channels)`` or a batch ``(batch, height, width, channels)`` (channels first
        with ``data_format="channels_first"``). A NumPy array comes back as a NumPy array.
    """
    from kgraph import ops  # deferred: the preprocessing helpers load without the op library
    kwargs.pop("backend_module", None)
    if kwargs:
        raise TypeError(f"smart_resize() got unexpected keyword arguments: {list(kwargs.keys())}")
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("`data_format` must be 'channels_last' or 'channels_first'. "
                         f"Received: data_format={data_format!r}")
    img = ops.convert_to_tensor(x)
    if not 3 <= len(img.shape) <= 4:
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or `(batch_size, "
                         f"height, width, channels)`, but got input with incorrect rank, of shape {img.shape}.")
    axes = (-3, -2) if data_format == "channels_last" else (-2, -1)
    height, width = int(img.shape[axes[0]]), int(img.shape[axes[1]])
    top, left, crop_height, crop_width = _crop_box(height, width, *size)
    index = [slice(None)] * len(img.shape)
    index[axes[0]] = slice(top, top + crop_height)
    index[axes[1]] = slice(left, left + crop_width)
    img = ops.image.resize(img[tuple(index)], size=tuple(size), interpolation=interpolation,
                           data_format=data_format)
    return np.asarray(img) if isinstance(x, np.ndarray) else img
