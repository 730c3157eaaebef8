"""The logs of a step: the metrics a model or layer holds, Keras's Python form of the logs, and the batch hooks
that read them."""
import numpy as np

from kgraph import metrics as metrics_module
from kgraph.trainers.replay import ReplayedStep

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


_HOOKS = {"train": (("on_train_batch_begin", "on_batch_begin"), ("on_train_batch_end", "on_batch_end")),
          "test": (("on_test_batch_begin",), ("on_test_batch_end",))}


def batch_hooks(callbacks, step, mode):
    """``(on_batch_begin, on_batch_end, quiet)`` for the steps of ``mode`` ("train" or "test"): the callback
    list's hooks, or one doing nothing where no callback implements it; ``quiet`` where ``step`` is replayed and
    no callback reads a batch's logs, so that the metrics' results are read once, after the last batch."""
    begin, end = _HOOKS[mode]
    reads_logs = callbacks.implements(*end)
    return (getattr(callbacks, begin[0]) if callbacks.implements(*begin) else _no_hook,
            getattr(callbacks, end[0]) if reads_logs else _no_hook, isinstance(step, ReplayedStep) and not reads_logs)


def _no_hook(*args):
    """A batch hook that no callback implements."""
