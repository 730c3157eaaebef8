"""The seeded shuffle and train/test split of Keras's regression datasets."""
import numbers

import numpy as np


def check_test_split(test_split, upper_inclusive=False):
    """``test_split`` must be a fraction: ``0 <= test_split < 1`` (``<= 1`` where ``upper_inclusive``)."""
    valid = isinstance(test_split, numbers.Real) and not isinstance(test_split, bool) and \
        (0 <= test_split <= 1 if upper_inclusive else 0 <= test_split < 1)
    if not valid:
        bound = "1 inclusive" if upper_inclusive else "exclusive of 1"
        raise ValueError(f"Invalid `test_split` argument: {test_split}. It must be between 0 and 1 ({bound}).")


def shuffled_split(x, y, test_split, seed):
    """Shuffle ``x`` and ``y`` together with ``RandomState(seed)``, then keep the first ``1 - test_split`` for
    training, as Keras does (so a seed gives Keras's split)."""
    if len(x) != len(y):
        raise ValueError(f"A dataset's inputs and targets must have as many rows. Received: x.shape={x.shape}, "
                         f"y.shape={y.shape}")
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    cut = int(len(x) * (1 - test_split))
    return (np.array(x[:cut]), np.array(y[:cut])), (np.array(x[cut:]), np.array(y[cut:]))
