"""Reproducible runs: seeding every random draw, and a fresh naming session."""
import numpy as np
from kgraph import random
from kgraph.utils import naming
from kgraph.utils.plotting import model_to_dot, plot_model
from kgraph.trainers.py_dataset import PyDataset
from kgraph.saving.registration import register_keras_serializable


def set_random_seed(seed):
    """Seed weight initialization, shuffling and dropout so that runs repeat exactly."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer. Received: seed={seed!r}")
    random.set_seed(seed)


def clear_session():
    """Reset auto-generated layer names (the next Dense is ``dense`` again)."""
    naming.reset()
