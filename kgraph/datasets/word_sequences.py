"""The preprocessing imdb and reuters share: word indices offset, long sequences dropped, the vocabulary cut.

Each step computes what Keras 3's ``load_data`` computes, in the same order, so a seed and the same arguments
give the same sequences.
"""
import numbers

import numpy as np


def check_arguments(**arguments):
    """``num_words`` and ``maxlen`` are numbers or None, ``skip_top`` a number; ``start_char``, ``oov_char`` and
    ``index_from`` integers or None."""
    for name, value in arguments.items():
        kind = numbers.Real if name in ("num_words", "skip_top", "maxlen") else numbers.Integral
        allow_none = name != "skip_top"
        if (value is None and allow_none) or (isinstance(value, kind) and not isinstance(value, bool)):
            continue
        expected = "an integer" if kind is numbers.Integral else "a number"
        raise ValueError(f"`{name}` must be {expected}{' or None' if allow_none else ''}. Received: "
                         f"{name}={value!r}")


def shuffled(rng, sequences, labels):
    """``sequences`` and ``labels`` in the order of one ``rng.shuffle`` of their indices."""
    if len(sequences) != len(labels):
        raise ValueError(f"A dataset file must hold as many labels as sequences. Received {len(sequences)} "
                         f"sequences and {len(labels)} labels.")
    indices = np.arange(len(sequences))
    rng.shuffle(indices)
    return sequences[indices], labels[indices]


def offset_words(sequences, start_char, index_from):
    """Each sequence as a list: ``[start_char]`` first (unless None), every word index plus ``index_from``."""
    start, index_from = ([] if start_char is None else [start_char]), index_from or 0
    return [start + [w + index_from for w in x] for x in sequences]


def drop_long_sequences(maxlen, sequences, labels):
    """Only the sequences shorter than ``maxlen`` and their labels (Keras's ``remove_long_seq``)."""
    kept = [(x, y) for x, y in zip(sequences, labels) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def limit_vocabulary(sequences, num_words, skip_top, oov_char):
    """Words outside ``skip_top <= w < num_words`` become ``oov_char``, or are removed when it is None.

    Without ``num_words`` the bound is the largest index present, which (as in Keras) is itself outside it.
    """
    if not num_words:
        num_words = max((max(x) for x in sequences if x), default=0)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in sequences]
    return [[w for w in x if skip_top <= w < num_words] for x in sequences]
