"""Weight constraints (``keras.constraints``): projections an optimizer applies to a variable after each update.

A layer passes ``kernel_constraint=...`` (or another ``*_constraint``) to
``add_weight``, which stores it as ``variable.constraint``; after every
``Optimizer.apply`` the variable is replaced by ``constraint(variable)``, as in
Keras. The math and configs are Keras 3's.
"""
from kgraph import backend, ops


def _norms(w, axis):
    # Keras's per-unit L2 norms, kept broadcastable against w.
    axis = tuple(axis) if isinstance(axis, list) else axis
    return ops.sqrt(ops.sum(ops.square(w), axis=axis, keepdims=True))


class Constraint:
    """Base class: ``__call__(w)`` returns the projected weight (unchanged by default)."""

    def __call__(self, w):
        return w

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class MaxNorm(Constraint):
    """Rescales each unit's weights (norm over ``axis``) to a norm of at most ``max_value``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = ops.clip(norms, 0, self.max_value)
        return ops.multiply(ops.cast(w, norms.dtype), ops.divide(desired, ops.add(backend.epsilon(), norms)))

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Sets negative weights to zero."""

    def __call__(self, w):
        return ops.maximum(w, 0)


class UnitNorm(Constraint):
    """Rescales each unit's weights (norm over ``axis``) to unit norm."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        return ops.divide(ops.cast(w, norms.dtype), ops.add(backend.epsilon(), norms))

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves each unit's norm (over ``axis``) towards ``[min_value, max_value]``: ``(1 - rate) * norm +
    rate * clip(norm, min_value, max_value)``."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        norms = _norms(w, self.axis)
        desired = ops.add(ops.multiply(self.rate, ops.clip(norms, self.min_value, self.max_value)),
                          ops.multiply(1 - self.rate, norms))
        return ops.multiply(ops.cast(w, norms.dtype), ops.divide(desired, ops.add(backend.epsilon(), norms)))

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate, "axis": self.axis}


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_CLASSES = (Constraint, MaxNorm, MinMaxNorm, NonNeg, UnitNorm)
# Keras looks a name up among the class names and their snake_case forms.
_NAMES = {**{cls.__name__: cls for cls in _CLASSES},
          "constraint": Constraint, "max_norm": MaxNorm, "min_max_norm": MinMaxNorm, "non_neg": NonNeg,
          "unit_norm": UnitNorm}


def serialize(constraint):
    """``{"module", "class_name", "config"}`` for a constraint; None for None."""
    if constraint is None:
        return None
    if not isinstance(constraint, Constraint):
        raise ValueError(f"Expected a Constraint instance (or None), received {constraint!r}.")
    return {"module": "kgraph.constraints", "class_name": type(constraint).__name__,
            "config": constraint.get_config()}


def deserialize(config, custom_objects=None):
    """Rebuild a constraint from ``serialize``'s output (Keras's configs too) or a name.

    custom_objects: ``{class_name: class}`` for user-defined constraints.
    """
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Expected a constraint name or a dict with 'class_name' and 'config', received {config!r}.")
    cls = (custom_objects or {}).get(config["class_name"]) or _NAMES.get(config["class_name"])
    if cls is None:
        raise ValueError(f"Unknown constraint {config['class_name']!r}. Expected one of {sorted(_NAMES)}.")
    return cls.from_config(dict(config.get("config") or {}))


def get(identifier):
    """Resolve ``identifier``: None, a name (``"max_norm"``, ``"NonNeg"``...), a config dict, a class (instantiated)
    or any callable (returned as is)."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    obj = _NAMES.get(identifier) if isinstance(identifier, str) else identifier
    if isinstance(obj, type):
        obj = obj()
    if not callable(obj):
        raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
    return obj


__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "max_norm", "min_max_norm", "non_neg",
           "unit_norm", "get", "serialize", "deserialize"]
