"""The eager NumPy engine: numeric settings, Variable, the gradient tape, TapeArray and NumPy dispatch."""
from kgraph.backend.settings import epsilon, floatx, set_epsilon, set_floatx, standardize_dtype

__all__ = ["epsilon", "floatx", "set_epsilon", "set_floatx", "standardize_dtype"]
