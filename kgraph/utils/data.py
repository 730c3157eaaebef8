"""Keras's data helpers: one-hot labels, normalized rows, padded sequences."""
import numpy as np


def to_categorical(x, num_classes=None):
    """Class indices as one-hot rows (the classes axis is appended); ``num_classes`` defaults to max + 1."""
    x = np.asarray(x, dtype="int64")
    if x.ndim > 1 and x.shape[-1] == 1:
        x = x[..., 0]
    num_classes = int(x.max()) + 1 if num_classes is None else int(num_classes)
    if x.size and (x.min() < 0 or x.max() >= num_classes):
        raise ValueError(f"Class indices must be in [0, {num_classes}). Received values from {x.min()} to {x.max()}")
    # NumPy's default float, as Keras returns for array input (float64): a float32 label matrix would change the
    # loss dtype of a model compiled on it.
    return np.eye(num_classes)[x]


def normalize(x, axis=-1, order=2):
    """``x`` divided by its ``order``-norm along ``axis`` (rows of zeros stay zero)."""
    x = np.asarray(x)
    norm = np.linalg.norm(x, ord=order, axis=axis, keepdims=True)
    return x / np.where(norm == 0, 1, norm)


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre", value=0.0):
    """Lists of sequences as one ``(count, maxlen)`` array, padded and truncated at the start or end."""
    if padding not in ("pre", "post") or truncating not in ("pre", "post"):
        raise ValueError(f"`padding` and `truncating` must be 'pre' or 'post'. Received: padding={padding!r}, "
                         f"truncating={truncating!r}")
    sequences = [list(s) for s in sequences]
    maxlen = max((len(s) for s in sequences), default=0) if maxlen is None else int(maxlen)
    out = np.full((len(sequences), maxlen), value, dtype=dtype)
    for i, s in enumerate(sequences):
        s = s[-maxlen:] if truncating == "pre" else s[:maxlen]
        if s:
            if padding == "post":
                out[i, :len(s)] = s
            else:
                out[i, maxlen - len(s):] = s
    return out
