"""Per-sample losses of particular tasks: overlap of segmentation masks (Dice, Tversky), metric learning
(Circle), sequence labelling (CTC) and classification under noisy labels (generalized cross entropy).

Like ``kgraph.losses.functions``, everything that touches ``y_pred`` goes through ``kgraph.ops``.
"""
import numpy as np

from kgraph import backend, ops
from kgraph.backend.tape_array import TapeArray
from kgraph.losses.functions import _float_tensor, _inputs


def with_loss_mask(values, mask):
    """``values`` carrying ``mask`` (as ``_keras_mask``): ``Loss.__call__`` then reduces over the kept entries."""
    mask = np.asarray(mask, dtype=bool)
    try:
        values._keras_mask = mask
    except AttributeError:  # a plain ndarray holds no attributes; a view of it does
        values = values.view(TapeArray)
        values._keras_mask = mask
    return values


def dice(y_true, y_pred, axis=None):
    """``1 - 2 * sum(y_true * y_pred) / (sum(y_true) + sum(y_pred) + eps)``, the sums over ``axis``.

    axis: the axes reduced per value; ``None`` (the default) gives one value for the whole batch.
    """
    y_true, y_pred = _inputs(y_true, y_pred)
    intersection = ops.sum(ops.multiply(y_true, y_pred), axis=axis)
    total = ops.add(ops.add(ops.sum(y_true, axis=axis), ops.sum(y_pred, axis=axis)), backend.epsilon())
    return ops.subtract(1.0, ops.divide(ops.multiply(intersection, 2.0), total))


def tversky(y_true, y_pred, alpha=0.5, beta=0.5, axis=None):
    """``1 - TP / (TP + alpha * sum(y_true * (1 - y_pred)) + beta * sum((1 - y_true) * y_pred) + eps)``.

    ``TP = sum(y_true * y_pred)``; ``alpha`` weighs the missed positives, ``beta`` the false alarms (both 0.5
    give the Dice loss). axis: as for ``dice``.
    """
    y_true, y_pred = _inputs(y_true, y_pred)
    intersection = ops.sum(ops.multiply(y_true, y_pred), axis=axis)
    missed = ops.sum(ops.multiply(ops.subtract(1.0, y_pred), y_true), axis=axis)
    false_alarms = ops.sum(ops.multiply(y_pred, ops.subtract(1.0, y_true)), axis=axis)
    denominator = ops.add(ops.add(intersection, ops.multiply(missed, alpha)), ops.multiply(false_alarms, beta))
    return ops.subtract(1.0, ops.divide(intersection, ops.add(denominator, backend.epsilon())))


def _pair_masks(labels, ref_labels, remove_diagonal):
    """Boolean ``(queries, references)`` masks of the pairs of the same label and of different labels."""
    labels = np.reshape(labels, (-1, 1))
    ref_labels = np.reshape(ref_labels, (-1, 1))
    positive = labels == ref_labels.T
    negative = ~positive
    if remove_diagonal:
        positive &= ~np.eye(labels.size, ref_labels.size, dtype=bool)
    return positive, negative


def _masked_logsumexp(values, mask):
    # A row without a pair gets a very negative finite value (not -inf), whose softplus is 0 and whose
    # gradient is finite.
    floor = float(np.finfo(np.dtype(values.dtype)).min) / 4
    return ops.logsumexp(ops.where(mask, values, floor), axis=1)


def circle(y_true, y_pred, ref_labels=None, ref_embeddings=None, remove_diagonal=True, gamma=80, margin=0.4):
    """Circle loss of each embedding in ``y_pred`` (``(batch, dim)``, L2-normalised) with integer labels ``y_true``.

    Pairs are formed with ``ref_embeddings``/``ref_labels`` (by default the batch itself); the cosine distance
    of a pair of the same label is pulled below ``margin`` and one of different labels pushed above
    ``1 - margin``, each weighted by how far it is from its optimum and scaled by ``gamma``.
    remove_diagonal: leave out the pairs of an embedding with itself.
    Embeddings without a pair of each kind get a loss of 0 and are left out of the mean reductions.
    """
    y_pred = _float_tensor(y_pred)
    labels = np.asarray(ops.convert_to_numpy(y_true)).astype(np.int32)
    references = y_pred if ref_embeddings is None else ops.cast(ref_embeddings, np.dtype(y_pred.dtype).name)
    ref_labels = labels if ref_labels is None else np.asarray(ops.convert_to_numpy(ref_labels)).astype(np.int32)
    distances = ops.maximum(ops.subtract(1.0, ops.matmul(y_pred, ops.transpose(references))), 0.0)
    positive, negative = _pair_masks(labels, ref_labels, remove_diagonal)
    dtype = np.dtype(y_pred.dtype)
    pos_weights = ops.maximum(ops.multiply(ops.add(distances, margin), positive.astype(dtype)), 0.0)
    neg_weights = ops.maximum(ops.multiply(ops.subtract(1.0 + margin, distances), negative.astype(dtype)), 0.0)
    pos_terms = ops.multiply(ops.multiply(pos_weights, ops.subtract(margin, distances)), -float(gamma))
    neg_terms = ops.multiply(ops.multiply(neg_weights, ops.subtract(1.0 - margin, distances)), float(gamma))
    loss = ops.softplus(ops.add(_masked_logsumexp(pos_terms, positive), _masked_logsumexp(neg_terms, negative)))
    return with_loss_mask(loss, ops.convert_to_numpy(loss) > 0)


def ctc(y_true, y_pred):
    """Per-sequence CTC loss of integer labels ``y_true`` ``(batch, max_length)`` (0 pads, and is the blank class)
    under logits ``y_pred`` ``(batch, steps, classes)``, every step of ``y_pred`` counting."""
    if len(np.shape(y_true)) != 2:
        raise ValueError("Targets `y_true` are expected to be a tensor of shape `(batch_size, max_length)` in "
                         f"integer format. Received: y_true.shape={tuple(np.shape(y_true))}")
    y_pred = _float_tensor(y_pred)
    if len(y_pred.shape) != 3:
        raise ValueError("Logits `y_pred` are expected to be a tensor of shape `(batch_size, max_length, "
                         f"num_classes)`. Received: y_pred.shape={tuple(y_pred.shape)}")
    labels = np.asarray(ops.convert_to_numpy(y_true)).astype(np.int32)
    batch, steps = y_pred.shape[0], y_pred.shape[1]
    label_length = np.sum(labels != 0, axis=-1).astype(np.int32)
    return ops.ctc_loss(labels, y_pred, label_length, np.full((batch,), steps, dtype=np.int32),
                        mask_index=0)


def categorical_generalized_cross_entropy(y_true, y_pred, q):
    """Per-sample ``(1 - p ** q) / q``, ``p`` the probability ``y_pred`` gives the class ``y_true`` (integer ids).

    q: in ``(0, 1)``; near 0 this approaches the crossentropy, near 1 the mean absolute error.
    """
    y_pred = _float_tensor(y_pred)
    labels = np.asarray(ops.convert_to_numpy(y_true)).astype(np.int64)
    one_hot = ops.one_hot(labels, y_pred.shape[-1], dtype=np.dtype(y_pred.dtype).name)
    probability = ops.sum(ops.multiply(y_pred, one_hot), axis=-1)
    return ops.divide(ops.subtract(1.0, ops.power(probability, q)), q)
