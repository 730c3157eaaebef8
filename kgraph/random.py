"""The single random generator behind weight init, shuffling and dropout."""
import random as _py_random

import numpy as np

_generator = np.random.default_rng()


def generator():
    """Return kgraph's global ``numpy.random.Generator``."""
    return _generator


def set_seed(seed):
    """Reseed kgraph's generator (and Python's and NumPy's legacy ones)."""
    global _generator
    _generator = np.random.default_rng(seed)
    _py_random.seed(seed)
    np.random.seed(seed % (2**32))
