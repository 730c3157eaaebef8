"""``keras.utils`` dataset functions: ``split_dataset``, ``timeseries_dataset_from_array`` and the
``*_dataset_from_directory`` functions, which build ``tf.data`` pipelines in Keras and so need TensorFlow."""
import numbers

import numpy as np

from kgraph.trainers.py_dataset import PyDataset


def _split_sizes(left_size, right_size, total):
    """Keras's rules for ``left_size`` / ``right_size``: fractions in (0, 1) or counts in (0, total)."""
    if left_size is None and right_size is None:
        raise ValueError("At least one of the `left_size` or `right_size` must be specified. "
                         "Received: left_size=None and right_size=None")
    sizes = {}
    for side, size in (("left", left_size), ("right", right_size)):
        if size is not None and type(size) not in (int, float):
            raise TypeError(f"Invalid `{side}_size` Type. Expected: int or float or None, "
                            f"Received: type({side}_size)={type(size)}.")
        if type(size) is int and not 0 < size < total or type(size) is float and not 0 < size < 1:
            raise ValueError(f"`{side}_size` should be either a positive integer smaller than {total}, or a float "
                             f"within the range `[0, 1]`. Received: {side}_size={size}")
        sizes[side] = round(size * total) if type(size) is float else size
    if type(left_size) is float and type(right_size) is float and left_size + right_size > 1:
        raise ValueError("The sum of `left_size` and `right_size` is greater than 1. It must be less than or "
                         "equal to 1.")
    left = total - sizes["right"] if sizes["left"] is None else sizes["left"]
    right = total - left if sizes["right"] is None else sizes["right"]
    if left + right > total:
        raise ValueError(f"The sum of `left_size` and `right_size` should be smaller than the {total}. "
                         f"Received: left_size + right_size = {left + right} and total_length = {total}")
    for side, size in (("left", left), ("right", right)):
        if size == 0:
            raise ValueError(f"With `dataset` of length={total}, `left_size`={left} and `right_size`={right}. "
                             f"Resulting {side} side dataset split will be empty. Adjust any of the "
                             "aforementioned parameters")
    return int(left), int(right)


def _is_torch_dataset(dataset):
    try:
        import torch.utils.data
    except ImportError:
        return False
    return isinstance(dataset, torch.utils.data.Dataset)


def split_dataset(dataset, left_size=None, right_size=None, shuffle=False, seed=None, preferred_backend=None):
    """Split a dataset into a left part and a right part (e.g. train / test).

    dataset: an array, a list / tuple / dict of arrays of the same length, or a ``torch.utils.data.Dataset``.
    left_size, right_size: a fraction in (0, 1) or a sample count; the missing one is the complement.
    shuffle, seed: draw the samples of both parts in a random order (reproducible with ``seed``); otherwise the
        left part is the first ``left_size`` samples and the right part the next ``right_size``.

    Arrays come back as arrays in the structure given (Keras returns ``tf.data`` datasets there, which need
    TensorFlow); a torch dataset comes back as two ``torch.utils.data.Subset``, as with Keras's torch backend.
    """
    if preferred_backend not in (None, "numpy", "torch"):
        raise ValueError(f"kgraph splits NumPy arrays and torch datasets; a {preferred_backend!r} dataset needs "
                         f"that framework. Received: preferred_backend={preferred_backend!r}")
    if isinstance(dataset, dict):
        parts = list(dataset.values())
    elif isinstance(dataset, (list, tuple)):
        parts = list(dataset)
    elif _is_torch_dataset(dataset):
        parts = None
    elif isinstance(dataset, np.ndarray) or hasattr(dataset, "__array__"):
        parts = [dataset]
    else:
        raise TypeError("The `dataset` argument must be an array, a list, tuple or dict of arrays, or a "
                        f"`torch.utils.data.Dataset`. Received: dataset={dataset!r} of type {type(dataset)}")
    if parts is not None:
        parts = [np.asarray(p) for p in parts]
        lengths = {len(p) for p in parts}
        if len(lengths) != 1:
            raise ValueError(f"The arrays of `dataset` must have the same length. Received lengths {sorted(lengths)}")
        total = lengths.pop()
    else:
        total = len(dataset)
    left, right = _split_sizes(left_size, right_size, total)
    order = np.random.default_rng(seed).permutation(total) if shuffle else np.arange(total)
    left_idx, right_idx = order[:left], order[left:left + right]
    if parts is None:
        from torch.utils.data import Subset
        return Subset(dataset, left_idx.tolist()), Subset(dataset, right_idx.tolist())
    return _take(dataset, left_idx), _take(dataset, right_idx)


def _take(dataset, indices):
    if isinstance(dataset, dict):
        return {key: np.asarray(value)[indices] for key, value in dataset.items()}
    if isinstance(dataset, (list, tuple)):
        return type(dataset)(np.asarray(value)[indices] for value in dataset)
    return np.asarray(dataset)[indices]


class TimeseriesDataset(PyDataset):
    """Batches of sliding windows over a sequence: what ``timeseries_dataset_from_array`` returns.

    Item ``i`` is a batch ``(windows, targets)`` (``windows`` alone without targets); ``windows`` has shape
    ``(batch, sequence_length) + data.shape[1:]``. Without ``batch_size`` the items are single windows.
    """

    def __init__(self, data, targets, starts, sequence_length, sampling_rate, batch_size):
        super().__init__()
        self.data, self.targets, self.starts = data, targets, starts
        self.offsets = np.arange(sequence_length) * sampling_rate
        self.batch_size = batch_size

    def __len__(self):
        if self.batch_size is None:
            return len(self.starts)
        return -(-len(self.starts) // self.batch_size)

    def __getitem__(self, index):
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range for {len(self)} items")
        index %= len(self)
        if self.batch_size is None:
            starts = self.starts[index]
        else:
            starts = self.starts[index * self.batch_size:(index + 1) * self.batch_size]
        windows = self.data[np.add.outer(starts, self.offsets)]
        if self.targets is None:
            return windows
        return windows, self.targets[starts]

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _check_timeseries_args(length, sequence_stride, sampling_rate, start_index, end_index):
    if start_index and not 0 <= start_index < length:
        raise ValueError(f"`start_index` must be 0 or greater and lower than the length of the data. Received: "
                         f"start_index={start_index}, for data of length {length}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"`end_index` must be higher than `start_index`. Received: start_index={start_index}, "
                             f"and end_index={end_index}")
        if not 0 < end_index < length:
            raise ValueError(f"`end_index` must be higher than 0 and lower than the length of the data. Received: "
                             f"end_index={end_index}, for data of length {length}")
    for name, value in (("sampling_rate", sampling_rate), ("sequence_stride", sequence_stride)):
        if not isinstance(value, numbers.Integral) or not 0 < value < length:
            raise ValueError(f"`{name}` must be a positive integer lower than the length of the data. Received: "
                             f"{name}={value!r}, for data of length {length}")


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None,
                                  format="tf"):
    """Sliding windows over ``data`` (Keras's windows, targets and batching) as a ``PyDataset`` of NumPy batches.

    Window ``k`` starts at ``start_index + s_k`` with ``s_k`` in ``range(0, n, sequence_stride)`` and takes the
    ``sequence_length`` steps ``sampling_rate`` apart; ``n = end_index - start_index - (sequence_length - 1) *
    sampling_rate`` (at most ``len(targets)``). Its target is ``targets[start_index + s_k]``. ``shuffle`` orders
    the windows by ``np.random.RandomState(seed)``'s shuffle of the starts, as Keras does first (Keras's
    ``tf.data`` pipeline then also shuffles within a buffer; kgraph keeps the first order).
    """
    if format not in ("tf", "grain"):
        raise ValueError(f'`format` should be either "tf" or "grain". Received: format={format}')
    data = np.asarray(data)
    _check_timeseries_args(len(data), sequence_stride, sampling_rate, start_index, end_index)
    if not isinstance(sequence_length, numbers.Integral) or sequence_length < 1:
        raise ValueError(f"`sequence_length` must be a positive integer. Received: sequence_length={sequence_length!r}")
    if batch_size is not None and (not isinstance(batch_size, numbers.Integral) or batch_size < 1):
        raise ValueError(f"`batch_size` must be a positive integer or None. Received: batch_size={batch_size!r}")
    start_index = start_index or 0
    end_index = end_index or len(data)
    count = end_index - start_index - (sequence_length - 1) * sampling_rate
    if targets is not None:
        targets = np.asarray(targets)[start_index:end_index]
        count = min(count, len(targets))
    starts = np.arange(0, max(count, 0), sequence_stride)
    if shuffle:
        np.random.RandomState(np.random.randint(1e6) if seed is None else seed).shuffle(starts)
    return TimeseriesDataset(data[start_index:end_index], targets, starts, sequence_length, sampling_rate, batch_size)


_TF_ONLY = ("{name} builds a `tf.data.Dataset` and needs TensorFlow, which kgraph does not use (Keras without "
            "TensorFlow raises an ImportError here too). Load the files with NumPy or PIL (kgraph.utils.load_img) "
            "and pass arrays or a kgraph.utils.PyDataset to fit.")


def image_dataset_from_directory(directory, *args, **kwargs):
    """Needs TensorFlow (a ``tf.data`` pipeline): raises an ImportError saying so, as Keras does without it."""
    raise ImportError(_TF_ONLY.format(name="image_dataset_from_directory"))


def text_dataset_from_directory(directory, *args, **kwargs):
    """Needs TensorFlow (a ``tf.data`` pipeline): raises an ImportError saying so, as Keras does without it."""
    raise ImportError(_TF_ONLY.format(name="text_dataset_from_directory"))


def audio_dataset_from_directory(directory, *args, **kwargs):
    """Needs TensorFlow (a ``tf.data`` pipeline and TensorFlow's WAV decoder): raises an ImportError saying so."""
    raise ImportError(_TF_ONLY.format(name="audio_dataset_from_directory"))


class FeatureSpace:
    """Keras's structured-data preprocessing: it adapts and runs on ``tf.data`` pipelines and needs TensorFlow
    (Keras without TensorFlow raises an ImportError as soon as it adapts). Refused here when created."""

    def __init__(self, *args, **kwargs):
        raise ImportError("FeatureSpace preprocesses through `tf.data` and TensorFlow's preprocessing layers and "
                          "needs TensorFlow, which kgraph does not use. Preprocess the features with kgraph's "
                          "layers (Normalization, StringLookup, IntegerLookup, CategoryEncoding, Discretization, "
                          "Hashing) inside the model instead.")
