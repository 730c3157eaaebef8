"""Boston housing prices (StatLib): 506 samples of 13 attributes, targets in k$.

Keras warns that this dataset has an ethical problem (a variable assuming racial self-segregation influences
house prices) and discourages its use outside illustrating such issues; california_housing replaces it.
"""
from kgraph.datasets.dataset_files import TF_KERAS_DATASETS, load_arrays
from kgraph.datasets.splits import check_test_split, shuffled_split
from kgraph.utils.file_utils import get_file

ORIGIN = f"{TF_KERAS_DATASETS}boston_housing.npz"
FILE_HASH = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path="boston_housing.npz", test_split=0.2, seed=113):
    """Loads the Boston Housing dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``x_*`` have shape ``(num_samples, 13)``, ``y_*`` ``(num_samples,)``. The samples are shuffled with ``seed``
    and the last ``test_split`` of them (``0 <= test_split < 1``) are the test set, as Keras splits them.
    """
    check_test_split(test_split)
    path = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    x, y = load_arrays(path, ("x", "y"))
    return shuffled_split(x, y, test_split, seed)
