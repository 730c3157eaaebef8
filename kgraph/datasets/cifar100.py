"""CIFAR-100: 50,000 training and 10,000 test color images, 32x32, in 100 fine classes grouped in 20 coarse."""
import os

import numpy as np

from kgraph import config
from kgraph.datasets.cifar import load_batch
from kgraph.utils.file_utils import get_file

ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
FILE_HASH = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"


def load_data(label_mode="fine"):
    """Loads the CIFAR-100 dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``label_mode``: ``"fine"`` (labels 0-99) or ``"coarse"`` (the 20 superclasses). ``x_*`` are uint8 images of
    shape ``(50000, 32, 32, 3)`` and ``(10000, 32, 32, 3)`` (channels last); ``y_*`` integer labels of shape
    ``(50000, 1)`` and ``(10000, 1)``, int64 as Keras gives them.
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'`label_mode` must be one of `"fine"`, `"coarse"`. Received: label_mode={label_mode}.')
    path = get_file(fname="cifar-100-python-target", origin=ORIGIN, extract=True, file_hash=FILE_HASH)
    path = os.path.join(path, "cifar-100-python")
    x_train, y_train = load_batch(os.path.join(path, "train"), label_key=f"{label_mode}_labels")
    x_test, y_test = load_batch(os.path.join(path, "test"), label_key=f"{label_mode}_labels")
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if config.image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)
