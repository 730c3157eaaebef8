"""IMDB movie reviews: 25,000 training and 25,000 test reviews labeled by sentiment, as lists of word indices.

Words are indexed by how often they occur in the training set (1 is the most frequent); 0 stands for padding.
"""
import numpy as np

from kgraph.datasets import word_sequences
from kgraph.datasets.dataset_files import TF_KERAS_DATASETS, load_arrays, load_word_index
from kgraph.utils.file_utils import get_file

ORIGIN = f"{TF_KERAS_DATASETS}imdb.npz"
FILE_HASH = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_ORIGIN = f"{TF_KERAS_DATASETS}imdb_word_index.json"
WORD_INDEX_HASH = "bfafd718b763782e994055a2d397834f"


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, oov_char=2,
              index_from=3, **kwargs):
    """Loads the IMDB dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``x_*`` are object arrays of reviews, each a list of word indices; ``y_*`` the labels (1 positive, 0
    negative). Each split is shuffled with ``seed``; every review starts with ``start_char`` (unless None) and
    its word indices are shifted by ``index_from``. Reviews of ``maxlen`` words or more are dropped. Words
    outside ``skip_top <= index < num_words`` (all of them counted after the shift; without ``num_words`` the
    largest index present is the bound) become ``oov_char``, or are removed when it is None.
    """
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments for imdb.load_data: {sorted(kwargs)}")
    word_sequences.check_arguments(num_words=num_words, skip_top=skip_top, maxlen=maxlen, start_char=start_char,
                                   oov_char=oov_char, index_from=index_from)
    path = get_file(fname=path, origin=ORIGIN, file_hash=FILE_HASH)
    x_train, labels_train, x_test, labels_test = load_arrays(path, ("x_train", "y_train", "x_test", "y_test"),
                                                             object_arrays=True)
    rng = np.random.RandomState(seed)
    x_train, labels_train = word_sequences.shuffled(rng, x_train, labels_train)
    x_test, labels_test = word_sequences.shuffled(rng, x_test, labels_test)
    x_train = word_sequences.offset_words(x_train, start_char, index_from)
    x_test = word_sequences.offset_words(x_test, start_char, index_from)
    if maxlen:
        x_train, labels_train = word_sequences.drop_long_sequences(maxlen, x_train, labels_train)
        x_test, labels_test = word_sequences.drop_long_sequences(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                             "Increase maxlen.")
    xs = word_sequences.limit_vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([labels_train, labels_test])
    idx = len(x_train)
    return (np.array(xs[:idx], dtype="object"), labels[:idx]), (np.array(xs[idx:], dtype="object"), labels[idx:])


def get_word_index(path="imdb_word_index.json"):
    """The ``{word: index}`` dict of the IMDB dataset (indices before ``load_data``'s ``index_from`` shift)."""
    path = get_file(fname=path, origin=WORD_INDEX_ORIGIN, file_hash=WORD_INDEX_HASH)
    return load_word_index(path)
