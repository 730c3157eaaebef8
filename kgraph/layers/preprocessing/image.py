"""Image preprocessing layers: Resizing and CenterCrop, written with ops so they train and export as ops."""
from kgraph import ops
from kgraph.layers.layer import Layer
from kgraph.ops import image as image_ops

INTERPOLATIONS = ("bilinear", "nearest")


def standardize_data_format(data_format):
    """``None`` means channels_last; anything else must be one of Keras's two names."""
    data_format = "channels_last" if data_format is None else str(data_format).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of {'channels_first', 'channels_last'}. "
                         f"Received: data_format={data_format}")
    return data_format


def spatial_axes(rank, data_format):
    """The (height, width) axes of a rank-3 (one image) or rank-4 (batch) input."""
    if rank not in (3, 4):
        raise ValueError("Invalid images rank: expected rank 3 (single image) or rank 4 (batch of images). "
                         f"Received input with rank {rank}")
    return (rank - 3, rank - 2) if data_format == "channels_last" else (rank - 2, rank - 1)


def crop_axis(x, axis, start, size):
    """``x`` sliced to ``[start, start + size)`` along ``axis``."""
    if start == 0 and size == x.shape[axis]:
        return x
    key = [slice(None)] * len(x.shape)
    key[axis] = slice(start, start + size)
    return ops.getitem(x, tuple(key))


def resize(x, height, width, interpolation, data_format, crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
           fill_value=0.0):
    """Resize images to ``(height, width)``, first cropping or padding them to that aspect ratio if asked."""
    h_axis, w_axis = spatial_axes(len(x.shape), data_format)
    in_h, in_w = x.shape[h_axis], x.shape[w_axis]
    if in_h is None or in_w is None:
        raise ValueError(f"Resizing needs static image sizes. Received: inputs.shape={tuple(x.shape)}")
    if crop_to_aspect_ratio:
        crop_h = max(min(in_h, int(in_w * height / width)), 1)
        crop_w = max(min(in_w, int(in_h * width / height)), 1)
        x = crop_axis(x, h_axis, int((in_h - crop_h) / 2), crop_h)
        x = crop_axis(x, w_axis, int((in_w - crop_w) / 2), crop_w)
    elif pad_to_aspect_ratio:
        pad_h = (max(in_h, int(in_w * height / width)) - in_h) // 2
        pad_w = (max(in_w, int(in_h * width / height)) - in_w) // 2
        if pad_h or pad_w:
            widths = [(0, 0)] * len(x.shape)
            widths[h_axis], widths[w_axis] = (pad_h, pad_h), (pad_w, pad_w)
            x = ops.pad(x, widths, constant_values=fill_value)
    return image_ops.resize(x, (height, width), interpolation, data_format=data_format)


def smart_resize(x, height, width, data_format):
    """Keras's ``smart_resize``: the largest centred window of the target aspect ratio, resized bilinearly."""
    return resize(x, height, width, "bilinear", data_format, crop_to_aspect_ratio=True)


def image_output_shape(input_shape, height, width, data_format):
    """``input_shape`` with its height and width replaced."""
    shape = list(input_shape)
    h_axis, w_axis = spatial_axes(len(shape), data_format)
    shape[h_axis], shape[w_axis] = height, width
    return tuple(shape)


class Resizing(Layer):
    """Resizes images to ``(height, width)`` (bilinear or nearest; optionally cropped or padded to aspect)."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, antialias=False, data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"Invalid value for argument `interpolation`. Expected one of {INTERPOLATIONS}. "
                             f"Received: interpolation={interpolation}")
        if fill_mode != "constant":
            raise ValueError("Invalid value for argument `fill_mode`. Only `'constant'` is supported. "
                             f"Received: fill_mode={fill_mode}")
        if pad_to_aspect_ratio and crop_to_aspect_ratio:
            raise ValueError("Only one of `pad_to_aspect_ratio` & `crop_to_aspect_ratio` can be `True`.")
        if antialias:
            raise ValueError("`antialias=True` is not supported by kgraph's Resizing. Received: antialias=True")
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.pad_to_aspect_ratio = bool(pad_to_aspect_ratio)
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.antialias = bool(antialias)
        self.data_format = standardize_data_format(data_format)

    def call(self, inputs):
        x = ops.cast(inputs, self.compute_dtype)
        return resize(x, self.height, self.width, self.interpolation, self.data_format, self.crop_to_aspect_ratio,
                      self.pad_to_aspect_ratio, self.fill_value)

    def compute_output_shape(self, input_shape):
        return image_output_shape(input_shape, self.height, self.width, self.data_format)

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "height": self.height, "width": self.width,
                       "interpolation": self.interpolation, "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                       "pad_to_aspect_ratio": self.pad_to_aspect_ratio, "fill_mode": self.fill_mode,
                       "fill_value": self.fill_value, "antialias": self.antialias})
        return config


class CenterCrop(Layer):
    """Crops the central ``(height, width)`` window; a smaller image is resized to fill it (Keras's rule)."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height, self.width = int(height), int(width)
        self.data_format = standardize_data_format(data_format)

    def call(self, inputs):
        x = ops.cast(inputs, self.compute_dtype)
        h_axis, w_axis = spatial_axes(len(x.shape), self.data_format)
        h_diff, w_diff = x.shape[h_axis] - self.height, x.shape[w_axis] - self.width
        if h_diff >= 0 and w_diff >= 0:
            return crop_axis(crop_axis(x, h_axis, h_diff // 2, self.height), w_axis, w_diff // 2, self.width)
        return smart_resize(x, self.height, self.width, self.data_format)

    def compute_output_shape(self, input_shape):
        return image_output_shape(input_shape, self.height, self.width, self.data_format)

    def get_config(self):
        config = super().get_config()
        config.update({"data_format": self.data_format, "height": self.height, "width": self.width})
        return config
