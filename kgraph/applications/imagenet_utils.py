"""``keras.applications.imagenet_utils``: ImageNet preprocessing and decoding, and the rules every builder shares.

``preprocess_input`` / ``decode_predictions`` behave as Keras's; the rest (input-shape rules, the classifier
check, the weights argument, the weight download) is what each architecture module builds with.
"""
from __future__ import annotations

import json
import os
import warnings

import numpy as np

from kgraph import activations, ops
from kgraph.backend import floatx, image_data_format, is_keras_tensor
from kgraph.layers import GlobalAveragePooling2D, GlobalMaxPooling2D, Input
from kgraph.utils import get_file, get_source_inputs

CLASS_INDEX = None
CLASS_INDEX_PATH = "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"
CLASS_INDEX_HASH = "c2c37ea517e94d9795004a39431a14cb"
KERAS_APPLICATIONS = "https://storage.googleapis.com/tensorflow/keras-applications/"

_MODES = ("caffe", "tf", "torch")
_CAFFE_MEAN = (103.939, 116.779, 123.68)  # BGR order
_TORCH_MEAN = (0.485, 0.456, 0.406)
_TORCH_STD = (0.229, 0.224, 0.225)


def preprocess_input(x, data_format=None, mode="caffe"):
    """Preprocess a batch (4D) or an image (3D) with values in [0, 255], as an ImageNet model expects.

    ``mode``: ``"caffe"`` (RGB -> BGR, then the ImageNet mean pixel subtracted, no scaling), ``"tf"`` (scaled to
    [-1, 1]) or ``"torch"`` (scaled to [0, 1], then normalized by ImageNet's channel mean and std). A float NumPy
    array is preprocessed in place, as in Keras (pass ``np.copy(x)`` to keep it); other arrays are converted to
    ``floatx``. Symbolic tensors go through ``kgraph.ops``.
    """
    if mode not in _MODES:
        raise ValueError(f"Expected mode to be one of `caffe`, `tf` or `torch`. Received: mode={mode}")
    if data_format is None:
        data_format = image_data_format()
    elif data_format not in {"channels_first", "channels_last"}:
        raise ValueError("Expected data_format to be one of `channels_first` or `channels_last`. "
                         f"Received: data_format={data_format}")
    if isinstance(x, np.ndarray):
        return _preprocess_numpy(x, data_format, mode)
    return _preprocess_tensor(x, data_format, mode)


def _channel_view(x, data_format):
    """``(x, index of channel c)`` so that ``x[index(c)]`` is channel ``c`` of an image or a batch."""
    if data_format == "channels_last":
        return lambda c: (Ellipsis, c)
    return (lambda c: (c,)) if x.ndim == 3 else (lambda c: (slice(None), c))


def _preprocess_numpy(x, data_format, mode):
    if not issubclass(x.dtype.type, np.floating):
        x = x.astype(floatx(), copy=False)
    if mode == "tf":
        x /= 127.5
        x -= 1.0
        return x
    if mode == "torch":
        x /= 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        if data_format == "channels_last":
            x = x[..., ::-1]
        else:
            x = x[::-1, ...] if x.ndim == 3 else x[:, ::-1, ...]
        mean, std = _CAFFE_MEAN, None
    at = _channel_view(x, data_format)
    for c in range(3):
        x[at(c)] -= mean[c]
        if std is not None:
            x[at(c)] /= std[c]
    return x


def _preprocess_tensor(x, data_format, mode):
    ndim = len(x.shape)
    if mode == "tf":
        return x / 127.5 - 1.0
    if mode == "torch":
        x = x / 255.0
        mean, std = _TORCH_MEAN, _TORCH_STD
    else:
        if data_format == "channels_last":
            x = ops.stack([x[..., i] for i in (2, 1, 0)], axis=-1)
        elif ndim == 3:
            x = ops.stack([x[i, ...] for i in (2, 1, 0)], axis=0)
        else:
            x = ops.stack([x[:, i] for i in (2, 1, 0)], axis=1)
        mean, std = _CAFFE_MEAN, None
    if data_format == "channels_last":
        shape = (1,) * (ndim - 1) + (3,)
    else:
        shape = (3, 1, 1) if ndim == 3 else (1, 3) + (1,) * (ndim - 2)
    x = x + ops.reshape(ops.convert_to_tensor(-np.array(mean), dtype=x.dtype), shape)
    if std is not None:
        x = x / ops.reshape(ops.convert_to_tensor(np.array(std), dtype=x.dtype), shape)
    return x


def decode_predictions(preds, top=5):
    """The ``top`` ImageNet classes of each row of ``preds`` (shape ``(samples, 1000)``), best first, as
    ``(class_name, class_description, score)`` tuples; the class index is downloaded once into the cache."""
    global CLASS_INDEX
    preds = np.asarray(preds)
    if preds.ndim != 2 or preds.shape[1] != 1000:
        raise ValueError("`decode_predictions` expects a batch of predictions (i.e. a 2D array of shape "
                         f"(samples, 1000)). Received array with shape: {preds.shape}")
    if CLASS_INDEX is None:
        path = get_file("imagenet_class_index.json", CLASS_INDEX_PATH, cache_subdir="models",
                        file_hash=CLASS_INDEX_HASH)
        with open(path) as f:
            CLASS_INDEX = json.load(f)
    results = []
    for pred in preds:
        best = pred.argsort()[-top:][::-1]
        row = [tuple(CLASS_INDEX[str(i)]) + (pred[i],) for i in best]
        row.sort(key=lambda item: item[2], reverse=True)
        results.append(row)
    return results


def _channels_warning(channels):
    if channels not in {1, 3}:
        warnings.warn("This model usually expects 1 or 3 input channels. However, it was passed an input_shape "
                      f"with {channels} input channels.", stacklevel=3)


def _default_shape(input_shape, default_size, data_format, weights):
    if weights != "imagenet" and input_shape and len(input_shape) == 3:
        if data_format == "channels_first":
            _channels_warning(input_shape[0])
            return (input_shape[0], default_size, default_size)
        _channels_warning(input_shape[-1])
        return (default_size, default_size, input_shape[-1])
    return (3, default_size, default_size) if data_format == "channels_first" else (default_size, default_size, 3)


def obtain_input_shape(input_shape, default_size, min_size, data_format, require_flatten, weights=None):
    """The model's input shape (without the batch axis): ``input_shape`` checked, or the default for the
    architecture; ``require_flatten`` (``include_top``) demands a static shape, ImageNet weights 3 channels."""
    default_shape = _default_shape(input_shape, default_size, data_format, weights)
    if weights == "imagenet" and require_flatten:
        if input_shape is not None and input_shape != default_shape:
            raise ValueError("When setting `include_top=True` and loading `imagenet` weights, `input_shape` should "
                             f"be {default_shape}.  Received: input_shape={input_shape}")
        return default_shape
    if input_shape:
        if len(input_shape) != 3:
            raise ValueError("`input_shape` must be a tuple of three integers.")
        channels, spatial = (input_shape[0], input_shape[1:]) if data_format == "channels_first" \
            else (input_shape[-1], input_shape[:2])
        if channels != 3 and weights == "imagenet":
            raise ValueError(f"The input must have 3 channels; Received `input_shape={input_shape}`")
        if any(size is not None and size < min_size for size in spatial):
            raise ValueError(f"Input size must be at least {min_size}x{min_size}; Received: "
                             f"input_shape={input_shape}")
    elif require_flatten:
        input_shape = default_shape
    else:
        input_shape = (3, None, None) if data_format == "channels_first" else (None, None, 3)
    if require_flatten and None in input_shape:
        raise ValueError("If `include_top` is True, you should specify a static `input_shape`. "
                         f"Received: input_shape={input_shape}")
    return input_shape


def correct_pad(inputs, kernel_size):
    """The ``((top, bottom), (left, right))`` zero padding before a strided 'valid' convolution of ``inputs``."""
    first = 2 if image_data_format() == "channels_first" else 1
    size = inputs.shape[first:first + 2]
    if isinstance(kernel_size, int):
        kernel_size = (kernel_size, kernel_size)
    adjust = (1, 1) if size[0] is None else (1 - size[0] % 2, 1 - size[1] % 2)
    correct = (kernel_size[0] // 2, kernel_size[1] // 2)
    return ((correct[0] - adjust[0], correct[0]), (correct[1] - adjust[1], correct[1]))


def validate_activation(classifier_activation, weights):
    """With pretrained ``weights``, the classifier's activation may only be softmax or none."""
    if weights is None:
        return
    activation = activations.get(classifier_activation)
    if activation not in {activations.get("softmax"), activations.get(None)}:
        raise ValueError("Only `None` and `softmax` activations are allowed for the `classifier_activation` "
                         "argument when using pretrained weights, with `include_top=True`; Received: "
                         f"classifier_activation={classifier_activation}")


def check_weights_argument(weights, include_top, classes):
    """``weights`` is None, ``"imagenet"`` or an existing file; ImageNet's classifier has 1000 classes."""
    if not (weights in {"imagenet", None} or (isinstance(weights, (str, os.PathLike)) and os.path.exists(weights))):
        raise ValueError("The `weights` argument should be either `None` (random initialization), 'imagenet' "
                         "(pre-training on ImageNet), or the path to the weights file to be loaded.  Received: "
                         f"weights={weights}")
    if weights == "imagenet" and include_top and classes != 1000:
        raise ValueError("If using `weights='imagenet'` with `include_top=True`, `classes` should be 1000.  "
                         f"Received classes={classes}")


def image_input(input_tensor, input_shape):
    """The tensor the network starts from: ``input_tensor`` when symbolic, else a new ``Input``."""
    if input_tensor is None:
        return Input(shape=input_shape)
    if not is_keras_tensor(input_tensor):
        return Input(tensor=input_tensor, shape=input_shape)
    return input_tensor


def model_inputs(input_tensor, img_input):
    """The model's inputs: the sources ``input_tensor`` comes from (its predecessors count), else the Input."""
    return img_input if input_tensor is None else get_source_inputs(input_tensor)


def pool(x, pooling, avg_name=None, max_name=None):
    """The feature extractor's optional global pooling (``pooling`` None, ``"avg"`` or ``"max"``)."""
    if pooling == "avg":
        return GlobalAveragePooling2D(name=avg_name)(x)
    if pooling == "max":
        return GlobalMaxPooling2D(name=max_name)(x)
    return x


def load_weights(model, weights, file_name=None, file_hash=None, origin=None):
    """Load ``weights`` into ``model``: Keras's ImageNet file ``file_name`` (downloaded once into
    ``KERAS_HOME/models``, checked against ``file_hash``), or the weights file at the path ``weights``."""
    if weights == "imagenet":
        origin = origin if origin is not None else KERAS_APPLICATIONS + file_name
        path = get_file(file_name, origin, cache_subdir="models", file_hash=file_hash)
    elif weights is not None:
        path = weights
    else:
        return model
    from kgraph.saving import legacy_h5_weights
    if legacy_h5_weights.is_legacy_h5(path):
        legacy_h5_weights.load_legacy_weights(model, path)
    else:
        model.load_weights(path)
    return model
