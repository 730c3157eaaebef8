"""California housing prices (StatLib, 1990 U.S. census): 20,640 block groups of 8 features, targets in $."""
from kgraph.datasets.dataset_files import TF_KERAS_DATASETS, load_arrays
from kgraph.datasets.splits import check_test_split, shuffled_split
from kgraph.utils.file_utils import get_file

ORIGIN = f"{TF_KERAS_DATASETS}california_housing.npz"
FILE_HASH = "1a2e3a52e0398de6463aebe6f4a8da34fb21fbb6b934cf88c3425e766f2a1a6f"
SMALL_VERSION_SAMPLES = 600


def load_data(version="large", path="california_housing.npz", test_split=0.2, seed=113):
    """Loads the California Housing dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``version``: ``"large"`` (all 20,640 samples) or ``"small"`` (the first 600, a stand-in for
    boston_housing). ``x_*`` have shape ``(num_samples, 8)`` (MedInc, HouseAge, AveRooms, AveBedrms, Population,
    AveOccup, Latitude, Longitude), ``y_*`` ``(num_samples,)``. Samples are shuffled with ``seed`` and the last
    ``test_split`` of them are the test set, as Keras splits them.
    """
    if version not in ("small", "large"):
        raise ValueError(f"Argument `version` must be one of 'small', 'large'. Received: version={version}")
    check_test_split(test_split)
    path = get_file(path, origin=ORIGIN, file_hash=FILE_HASH)
    x, y = load_arrays(path, ("x", "y"))
    if version == "small":
        x, y = x[:SMALL_VERSION_SAMPLES], y[:SMALL_VERSION_SAMPLES]
    return shuffled_split(x, y, test_split, seed)
