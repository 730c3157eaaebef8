"""Reproducible runs: seeding every random draw, and a fresh naming session."""
from kgraph import random
from kgraph.utils import naming


def set_random_seed(seed):
    """Seed weight initialization, shuffling and dropout so that runs repeat exactly."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer. Received: seed={seed!r}")
    random.set_seed(seed)


def clear_session():
    """Reset auto-generated layer names (the next Dense is ``dense`` again)."""
    naming.reset()
