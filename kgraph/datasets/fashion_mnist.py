"""Fashion-MNIST (Zalando): 60,000 training and 10,000 test images of 10 kinds of clothing, 28x28 grayscale.

Labels: 0 T-shirt/top, 1 Trouser, 2 Pullover, 3 Dress, 4 Coat, 5 Sandal, 6 Shirt, 7 Sneaker, 8 Bag, 9 Ankle boot.
"""
import gzip
import math
import os
import struct
import zlib

import numpy as np

from kgraph.datasets.dataset_files import TF_KERAS_DATASETS
from kgraph.utils.file_utils import get_file

ORIGIN_FOLDER = TF_KERAS_DATASETS
FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz")
_LABELS_MAGIC, _IMAGES_MAGIC = 2049, 2051  # IDX headers: unsigned bytes in 1 and 3 dimensions


def load_data():
    """Loads the Fashion-MNIST dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``x_*`` are uint8 images of shape ``(60000, 28, 28)`` and ``(10000, 28, 28)``; ``y_*`` uint8 labels 0-9.
    The four IDX files are cached in ``~/.keras/datasets/fashion-mnist``.
    """
    dirname = os.path.join("datasets", "fashion-mnist")
    paths = [get_file(fname, origin=ORIGIN_FOLDER + fname, cache_subdir=dirname) for fname in FILES]
    y_train = _read_idx(paths[0], _LABELS_MAGIC)
    x_train = _read_idx(paths[1], _IMAGES_MAGIC, len(y_train))
    y_test = _read_idx(paths[2], _LABELS_MAGIC)
    x_test = _read_idx(paths[3], _IMAGES_MAGIC, len(y_test))
    return (x_train, y_train), (x_test, y_test)


def _read_idx(path, magic, count=None):
    """The uint8 array of a gzipped IDX file: labels ``(n,)`` or images ``(n, rows, cols)``."""
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"Cannot load '{path}': it is not a gzipped IDX file ({type(err).__name__}: {err}).") \
            from None
    header = 8 if magic == _LABELS_MAGIC else 16
    fields = struct.unpack(">" + "I" * (header // 4), data[:header]) if len(data) >= header else ()
    if not fields or fields[0] != magic:
        raise ValueError(f"Cannot load '{path}': it does not start with the IDX header of "
                         f"{'labels' if magic == _LABELS_MAGIC else 'images'} (magic number {magic}).")
    shape = fields[1:]
    if (count is not None and shape[0] != count) or len(data) - header != math.prod(shape):
        raise ValueError(f"Cannot load '{path}': its header announces {shape} items"
                         f"{f' for {count} labels' if count is not None else ''} but it holds "
                         f"{len(data) - header} bytes of them.")
    return np.frombuffer(data, np.uint8, offset=header).reshape(shape).copy()
