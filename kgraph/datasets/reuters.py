"""Reuters newswires: 11,228 newswires labeled over 46 topics, as lists of word indices.

Words are indexed by how often they occur (1 is the most frequent); 0 stands for padding.
"""
import numpy as np

from kgraph.datasets import word_sequences
from kgraph.datasets.dataset_files import TF_KERAS_DATASETS, load_arrays, load_word_index
from kgraph.datasets.splits import check_test_split
from kgraph.utils.file_utils import get_file

ORIGIN = f"{TF_KERAS_DATASETS}reuters.npz"
FILE_HASH = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_ORIGIN = f"{TF_KERAS_DATASETS}reuters_word_index.json"
WORD_INDEX_HASH = "4d44cc38712099c9e383dc6e5f11a921"
LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply", "coffee", "sugar",
    "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas", "cpi", "money-fx", "interest", "gnp",
    "meal-feed", "alum", "oilseed", "gold", "tin", "strategic-metal", "livestock", "retail", "ipi", "iron-steel",
    "rubber", "heat", "jobs", "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog",
    "lead",
)


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113, start_char=1,
              oov_char=2, index_from=3):
    """Loads the Reuters newswire dataset: ``(x_train, y_train), (x_test, y_test)``.

    ``x_*`` are object arrays of newswires, each a list of word indices; ``y_*`` topic labels 0-45 (see
    ``get_label_names``). The newswires are shuffled with ``seed``, each starts with ``start_char`` (unless
    None) and its word indices are shifted by ``index_from``; those of ``maxlen`` words or more are dropped;
    words outside ``skip_top <= index < num_words`` become ``oov_char`` (removed when it is None); the last
    ``test_split`` of them are the test set.
    """
    word_sequences.check_arguments(num_words=num_words, skip_top=skip_top, maxlen=maxlen, start_char=start_char,
                                   oov_char=oov_char, index_from=index_from)
    check_test_split(test_split, upper_inclusive=True)
    path = get_file(fname=path, origin=ORIGIN, file_hash=FILE_HASH)
    xs, labels = load_arrays(path, ("x", "y"), object_arrays=True)
    xs, labels = word_sequences.shuffled(np.random.RandomState(seed), xs, labels)
    xs = word_sequences.offset_words(xs, start_char, index_from)
    if maxlen:
        xs, labels = word_sequences.drop_long_sequences(maxlen, xs, labels)
        if not xs:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, no sequence was kept. "
                             "Increase maxlen.")
    xs = word_sequences.limit_vocabulary(xs, num_words, skip_top, oov_char)
    idx = int(len(xs) * (1 - test_split))
    return ((np.array(xs[:idx], dtype="object"), np.array(labels[:idx])),
            (np.array(xs[idx:], dtype="object"), np.array(labels[idx:])))


def get_word_index(path="reuters_word_index.json"):
    """The ``{word: index}`` dict of the Reuters dataset (indices before ``load_data``'s ``index_from`` shift)."""
    path = get_file(path, origin=WORD_INDEX_ORIGIN, file_hash=WORD_INDEX_HASH)
    return load_word_index(path)


def get_label_names():
    """The 46 topic names, by label index."""
    return LABEL_NAMES
