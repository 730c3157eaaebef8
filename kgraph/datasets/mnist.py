"""MNIST handwritten digits: 60,000 training and 10,000 test images, 28x28 grayscale."""
from kgraph.datasets.dataset_files import TF_KERAS_DATASETS, load_arrays
from kgraph.utils.file_utils import get_file

ORIGIN = f"{TF_KERAS_DATASETS}mnist.npz"
FILE_HASH = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


def load_data(path="mnist.npz"):
    """Loads the MNIST dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``x_*`` are uint8 images of shape ``(60000, 28, 28)`` and ``(10000, 28, 28)`` with pixels in 0-255; ``y_*``
    uint8 digit labels 0-9. ``path`` is the file's name in the cache (``~/.keras/datasets``).
    """
    path = get_file(fname=path, origin=ORIGIN, file_hash=FILE_HASH)
    x_train, y_train, x_test, y_test = load_arrays(path, ("x_train", "y_train", "x_test", "y_test"))
    return (x_train, y_train), (x_test, y_test)
