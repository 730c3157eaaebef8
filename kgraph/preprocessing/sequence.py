"""``keras.preprocessing.sequence``."""
from kgraph.utils.data import pad_sequences

__all__ = ["pad_sequences"]
