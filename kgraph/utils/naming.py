"""Unique auto-names for layers and models (``dense``, ``dense_1``, ...)."""
import re

_counts = {}


def to_snake_case(name):
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def uniquify(prefix):
    """Return ``prefix`` the first time, then ``prefix_1``, ``prefix_2``, ..."""
    n = _counts.get(prefix, 0)
    _counts[prefix] = n + 1
    return prefix if n == 0 else f"{prefix}_{n}"


def reset():
    """Forget every name handed out so far (``kgraph.utils.clear_session``)."""
    _counts.clear()
