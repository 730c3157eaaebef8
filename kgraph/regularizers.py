"""Weight regularizers: penalties on a weight, computed with ``kgraph.ops`` so they are differentiable."""
import math

import numpy as np

from kgraph import ops


def _validate_factor(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not math.isfinite(value) \
            or value < 0:
        raise ValueError(f"Invalid value for argument {name}: expected a non-negative float. Received: {name}={value!r}")
    return float(value)


class Regularizer:
    """Base class: ``__call__(x)`` returns a 0-d penalty array for weight ``x``."""

    def __call__(self, x):
        return np.zeros((), dtype=np.dtype(x.dtype))

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config().")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """``l1 * sum(abs(x)) + l2 * sum(square(x))``."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _validate_factor(0.0 if l1 is None else l1, "l1")
        self.l2 = _validate_factor(0.0 if l2 is None else l2, "l2")

    def __call__(self, x):
        penalty = None
        if self.l1:
            penalty = ops.multiply(ops.sum(ops.abs(x)), self.l1)
        if self.l2:
            term = ops.multiply(ops.sum(ops.square(x)), self.l2)
            penalty = term if penalty is None else ops.add(penalty, term)
        return super().__call__(x) if penalty is None else penalty

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """``l1 * sum(abs(x))``."""

    def __init__(self, l1=0.01):
        self.l1 = _validate_factor(l1, "l1")

    def __call__(self, x):
        return ops.multiply(ops.sum(ops.abs(x)), self.l1)

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * sum(square(x))``."""

    def __init__(self, l2=0.01):
        self.l2 = _validate_factor(l2, "l2")

    def __call__(self, x):
        return ops.multiply(ops.sum(ops.square(x)), self.l2)

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Pushes the rows (``mode="rows"``) or columns (``mode="columns"``) of a 2-D weight towards orthogonality:
    ``factor * 0.5 * sum(|dot products of distinct L2-normalized rows|) / number of pairs``."""

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _validate_factor(factor, "factor")
        if mode not in ("rows", "columns"):
            raise ValueError(f'Invalid value for argument `mode`. Expected one of {{"rows", "columns"}}. '
                             f"Received: mode={mode}")
        self.mode = mode

    def __call__(self, x):
        if len(x.shape) != 2:
            raise ValueError(f"Inputs to OrthogonalRegularizer must have rank 2. Received: inputs.shape={x.shape}")
        if self.mode == "rows":
            unit = ops.normalize(x, axis=1)
            product, size = ops.matmul(unit, ops.transpose(unit)), x.shape[0]
        else:
            unit = ops.normalize(x, axis=0)
            product, size = ops.matmul(ops.transpose(unit), unit), x.shape[1]
        if size < 2:
            raise ValueError(f"OrthogonalRegularizer needs at least two {self.mode} to compare. "
                             f"Received: inputs.shape={x.shape}")
        off_diagonal = ops.multiply(product, 1.0 - np.eye(size, dtype=np.dtype(x.dtype)))
        pairs = size * (size - 1.0) / 2.0
        return ops.divide(ops.multiply(ops.sum(ops.abs(off_diagonal)), self.factor * 0.5), pairs)

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}


l1 = L1
l2 = L2
l1_l2 = L1L2
orthogonal_regularizer = OrthogonalRegularizer

_CLASSES = {cls.__name__: cls for cls in (Regularizer, L1, L2, L1L2, OrthogonalRegularizer)}
_NAMES = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2, "L1": L1, "L2": L2, "L1L2": L1L2,
          "orthogonal_regularizer": OrthogonalRegularizer, "OrthogonalRegularizer": OrthogonalRegularizer}


def serialize(regularizer):
    """Return ``{"class_name": ..., "config": ...}`` for a regularizer."""
    if not isinstance(regularizer, Regularizer):
        raise ValueError(f"Expected a Regularizer instance, received {regularizer!r}.")
    cls = type(regularizer)
    if _CLASSES.get(cls.__name__) is cls:
        return {"module": "kgraph.regularizers", "class_name": cls.__name__, "config": regularizer.get_config()}
    # A user's class: its module and registered name, as Keras writes them, so that loading finds that class
    # (among custom objects or registered ones) rather than a built-in of the same name.
    from kgraph.saving.registration import get_registered_name
    return {"module": cls.__module__, "class_name": cls.__name__, "config": regularizer.get_config(),
            "registered_name": get_registered_name(cls)}


def deserialize(config, custom_objects=None):
    """Rebuild a regularizer from ``serialize``'s output or a name.

    custom_objects: ``{class_name: class}`` for user-defined regularizers.
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(
            f"Expected a regularizer name or a dict with 'class_name' and 'config', received {config!r}."
        )
    cls = custom_objects.get(config["class_name"])
    module = config.get("module")
    builtin = isinstance(module, str) and module.startswith(("keras.", "kgraph.")) and config.get("registered_name") is None
    if cls is None and not builtin:
        # A user's class: given in custom_objects, in an open custom_object_scope or registered.
        from kgraph.saving.registration import get_registered_object
        for key in (config.get("registered_name"), config["class_name"]):
            found = get_registered_object(key, custom_objects) if key else None
            if isinstance(found, type) and issubclass(found, Regularizer):
                cls = found
                break
    if cls is None and not builtin:
        from kgraph.saving.serialization_lib import imported_class
        cls = imported_class(config["class_name"], module or "")
    cls = cls or _CLASSES.get(config["class_name"])
    if cls is None or cls is Regularizer:
        raise ValueError(f"Unknown regularizer {config['class_name']!r}. Expected one of {sorted(_NAMES)}.")
    return cls.from_config(dict(config.get("config", {})))


def get(identifier):
    """Resolve ``identifier``: a name (``"l1"``, ``"l2"``, ``"l1_l2"``) gives a default
    instance, a dict is deserialized, a ``Regularizer`` or other callable is returned
    as is, ``None`` gives ``None``."""
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier not in _NAMES:
            raise ValueError(f"Unknown regularizer {identifier!r}. Valid names are: {sorted(_NAMES)}.")
        return _NAMES[identifier]()
    if isinstance(identifier, type) and issubclass(identifier, Regularizer):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(
        f"Could not interpret regularizer identifier {identifier!r}: expected a name, dict or callable."
    )


__all__ = ["Regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer", "l1", "l2", "l1_l2", "orthogonal_regularizer",
           "get", "serialize", "deserialize"]
