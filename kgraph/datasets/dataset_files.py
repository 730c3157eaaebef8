"""Reading the arrays and word indices of Keras's dataset files, with errors that name the file."""
import json
import zipfile

import numpy as np

from kgraph.datasets.restricted_pickle import load_npz

TF_KERAS_DATASETS = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"


def load_arrays(path, keys, object_arrays=False):
    """The arrays ``keys`` of the ``.npz`` file at ``path``; ``object_arrays`` reads ragged lists of word indices
    (through the restricted unpickler), otherwise pickles are refused."""
    try:
        arrays = load_npz(path) if object_arrays else _load_numeric_npz(path, keys)
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        raise ValueError(f"Cannot load '{path}': it is not a readable .npz file ({type(err).__name__}: {err}).") \
            from None
    missing = [key for key in keys if key not in arrays]
    if missing:
        raise ValueError(f"Cannot load '{path}': it lacks the arrays {missing}; a Keras dataset file of this kind "
                         f"holds {list(keys)}.")
    return [arrays[key] for key in keys]


def _load_numeric_npz(path, keys):
    if not zipfile.is_zipfile(path):
        raise ValueError(f"Cannot load '{path}': it is not an .npz archive of named arrays.")
    try:
        with np.load(path, allow_pickle=False) as loaded:
            return {key: loaded[key] for key in keys if key in loaded.files}
    except ValueError as err:
        raise ValueError(f"Cannot load '{path}': {str(err).rstrip('.')}.") from None


def load_word_index(path):
    """The ``{word: index}`` dict of a word-index JSON file."""
    try:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"Cannot load '{path}': it is not a JSON word index ({err}).") from None
    if not isinstance(index, dict):
        raise ValueError(f"Cannot load '{path}': a word index is a JSON object of words to indices. Received a "
                         f"{type(index).__name__}.")
    return index
