"""Utilities: reproducible randomness and a fresh naming session."""
from kgraph import naming, random
from kgraph.plotting import model_to_dot, plot_model  # noqa: F401
from kgraph.py_dataset import PyDataset  # noqa: F401


def set_random_seed(seed):
    """Seed weight initialization, shuffling and dropout so that runs repeat exactly."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer. Received: seed={seed!r}")
    random.set_seed(seed)


def clear_session():
    """Reset auto-generated layer names (the next Dense is ``dense`` again)."""
    naming.reset()
