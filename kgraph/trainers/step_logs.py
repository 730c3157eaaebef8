"""The logs of a step: the metrics a model or layer holds, and Keras's Python form of the logs."""
import numpy as np

from kgraph import metrics as metrics_module

# Attribute types that are never a Metric (exactly these types: a subclass is checked): most of a layer's attributes.
_NOT_METRICS = frozenset([type(None), bool, int, float, str, bytes, dict, set, frozenset, np.ndarray])


def held_metrics(obj, skip=None):
    """The Metrics ``obj`` holds as attributes (alone or in a list), in assignment order."""
    metric = metrics_module.Metric
    found = []
    for value in vars(obj).values():
        kind = type(value)
        if kind in _NOT_METRICS:
            continue  # read for every layer at every step: the plain values are passed over first
        if kind is list or kind is tuple:
            if value and isinstance(value[0], metric):
                found.extend(m for m in value if isinstance(m, metric))
        elif isinstance(value, metric):
            if value is not skip:
                found.append(value)
    return found


def pythonify(logs):
    """As Keras's logs: nested dicts flattened, keys sorted, numbers and 0-d arrays as Python floats."""
    result = {}
    for key, value in sorted((logs or {}).items()):
        if isinstance(value, dict):
            result.update(pythonify(value))
            continue
        if isinstance(value, (int, float, np.number, np.bool_)) or isinstance(value, np.ndarray) and value.ndim == 0:
            value = float(value)
        result[key] = value
    return result
