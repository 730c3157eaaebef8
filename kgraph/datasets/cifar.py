"""Reading one CIFAR batch file: a Python 2 pickle of a dict, through the restricted unpickler."""
import numpy as np

from kgraph.datasets.restricted_pickle import load_pickle

_PIXELS = 3 * 32 * 32


def load_batch(fpath, label_key="labels"):
    """``(data, labels)`` of a CIFAR batch: uint8 images of shape ``(n, 3, 32, 32)`` and a list of ``n`` ints."""
    with open(fpath, "rb") as f:
        batch = load_pickle(f, fpath, encoding="bytes")
    if not isinstance(batch, dict):
        raise ValueError(f"Cannot load '{fpath}': a CIFAR batch is a dict. Received a {type(batch).__name__}.")
    batch = {key.decode("utf8", "replace") if isinstance(key, bytes) else key: value for key, value in batch.items()}
    data, labels = batch.get("data"), batch.get(label_key)
    if not (isinstance(data, np.ndarray) and data.ndim == 2 and data.shape[1] == _PIXELS):
        raise ValueError(f"Cannot load '{fpath}': its 'data' must be an array of {_PIXELS} pixels per image. "
                         f"Received: {_describe(data)}")
    if not (isinstance(labels, list) and len(labels) == len(data) and all(type(v) is int for v in labels)):
        raise ValueError(f"Cannot load '{fpath}': its '{label_key}' must be a list of {len(data)} integer labels. "
                         f"Received: {_describe(labels)}")
    return data.reshape(data.shape[0], 3, 32, 32), labels


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    return f"a {type(value).__name__}" + (f" of {len(value)} items" if isinstance(value, (list, tuple)) else "")
