"""CIFAR-10: 50,000 training and 10,000 test color images, 32x32, in 10 classes.

Labels: 0 airplane, 1 automobile, 2 bird, 3 cat, 4 deer, 5 dog, 6 frog, 7 horse, 8 ship, 9 truck.
"""
import os

import numpy as np

from kgraph import config
from kgraph.datasets.cifar import load_batch
from kgraph.utils.file_utils import get_file

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
FILE_HASH = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
TRAIN_BATCHES = 5


def load_data():
    """Loads the CIFAR-10 dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``x_*`` are uint8 images of shape ``(50000, 32, 32, 3)`` and ``(10000, 32, 32, 3)`` (channels last, as
    ``kgraph.config.image_data_format()`` says); ``y_*`` uint8 labels 0-9 of shape ``(50000, 1)`` and
    ``(10000, 1)``. The archive is downloaded and extracted into ``~/.keras/datasets``.
    """
    path = get_file(fname="cifar-10-batches-py-target", origin=ORIGIN, extract=True, file_hash=FILE_HASH)
    path = os.path.join(path, "cifar-10-batches-py")
    batches = [load_batch(os.path.join(path, f"data_batch_{i}")) for i in range(1, TRAIN_BATCHES + 1)]
    x_train = np.concatenate([data for data, _ in batches]).astype("uint8", copy=False)
    y_train = np.array([label for _, labels in batches for label in labels], dtype="uint8")
    x_test, y_test = load_batch(os.path.join(path, "test_batch"))
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if config.image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test.astype(x_train.dtype), y_test.astype(y_train.dtype))
