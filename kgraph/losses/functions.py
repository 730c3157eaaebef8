"""Per-sample loss functions (one value per sample, not yet reduced).

Every computation that touches ``y_pred`` goes through ``kgraph.ops`` (or, for
the sparse crossentropy of probabilities, one primitive with its own VJP), so a
loss evaluated under a ``GradientTape`` is differentiable with respect to it.
"""
import warnings

import numpy as np

from kgraph import backend, ops
from kgraph.backend.autodiff import no_cotangent, primitive
from kgraph.backend.variable import Variable
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.losses.loss import squeeze_or_expand_to_same_rank
from kgraph.ops.kernels import compiled

_least, _most = np.minimum.reduce, np.maximum.reduce


def _float_tensor(x):
    """Return ``x`` as a floating array (Variables pass through untouched)."""
    if not isinstance(x, (np.ndarray, Variable)):
        x = ops.convert_to_tensor(x)
    if np.dtype(x.dtype).kind == "f":
        return x
    return ops.cast(x, backend.floatx())


def _cast_like(x, reference):
    """Cast ``x`` to the dtype of ``reference`` (no-op when already there)."""
    if not isinstance(x, (np.ndarray, Variable)):
        x = np.asarray(x)
    dtype = np.dtype(reference.dtype)
    return x if np.dtype(x.dtype) == dtype else ops.cast(x, dtype.name)


def _inputs(y_true, y_pred):
    y_pred = _float_tensor(y_pred)
    return _cast_like(y_true, y_pred), y_pred


def _l2_normalize(x, axis):
    # x / max(||x||, eps): the same floor Keras puts on the norm.
    eps = backend.epsilon()
    squared_norm = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return ops.divide(x, ops.sqrt(ops.maximum(squared_norm, eps * eps)))


def mean_squared_error(y_true, y_pred):
    """Per-sample ``mean(square(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    return ops.mean(ops.square(ops.subtract(y_true, y_pred)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    """Per-sample ``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    return ops.mean(ops.abs(ops.subtract(y_true, y_pred)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    """Per-sample Huber loss: quadratic for ``|error| <= delta``, linear beyond."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    delta = float(delta)
    error = ops.subtract(y_pred, y_true)
    abs_error = ops.abs(error)
    quadratic = ops.multiply(ops.square(error), 0.5)
    linear = ops.subtract(ops.multiply(abs_error, delta), 0.5 * delta * delta)
    small = ops.less_equal(abs_error, delta)
    return ops.mean(ops.where(small, quadratic, linear), axis=-1)


def kl_divergence(y_true, y_pred):
    """Per-sample ``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to ``[eps, 1]``."""
    y_true, y_pred = _inputs(y_true, y_pred)
    eps = backend.epsilon()
    y_true = ops.clip(y_true, eps, 1.0)
    y_pred = ops.clip(y_pred, eps, 1.0)
    return ops.sum(ops.multiply(y_true, ops.log(ops.divide(y_true, y_pred))), axis=-1)


def cosine_similarity(y_true, y_pred, axis=-1):
    """Per-sample negative cosine similarity (-1 means identical directions)."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    similarity = ops.sum(
        ops.multiply(_l2_normalize(y_true, axis), _l2_normalize(y_pred, axis)), axis=axis
    )
    return ops.negative(similarity)


def _binary_crossentropy_elementwise(target, output, from_logits):
    if from_logits:
        # max(x, 0) - x * z + log1p(exp(-|x|)), with both branches chosen by
        # one condition so the gradient at x == 0 is exactly sigmoid(0) - z.
        positive = ops.greater_equal(output, 0.0)  # an op: a replayed training step computes it again
        relu_logits = ops.where(positive, output, 0.0)
        neg_abs_logits = ops.where(positive, ops.negative(output), output)
        return ops.add(
            ops.subtract(relu_logits, ops.multiply(output, target)),
            ops.log1p(ops.exp(neg_abs_logits)),
        )
    eps = backend.epsilon()
    output = ops.clip(output, eps, 1.0 - eps)
    positive_term = ops.multiply(target, ops.log(output))
    negative_term = ops.multiply(ops.subtract(1.0, target), ops.log(ops.subtract(1.0, output)))
    return ops.negative(ops.add(positive_term, negative_term))


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample binary crossentropy, averaged over ``axis``.

    label_smoothing: squeezes targets towards 0.5: ``z * (1 - s) + 0.5 * s``.
    """
    y_true, y_pred = _inputs(y_true, y_pred)
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    elementwise = _binary_crossentropy_elementwise(y_true, y_pred, from_logits)
    return ops.mean(elementwise, axis=axis)


def _log_probabilities(y_pred, from_logits, axis):
    if from_logits:
        return ops.log_softmax(y_pred, axis=axis)
    eps = backend.epsilon()
    # Renormalise first so that rows not summing to one still give a proper
    # distribution, then clip away log(0).
    output = ops.divide(y_pred, ops.sum(y_pred, axis=axis, keepdims=True))
    return ops.log(ops.clip(output, eps, 1.0 - eps))


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample crossentropy between one-hot ``y_true`` and ``y_pred``.

    label_smoothing: targets become ``t * (1 - s) + s / num_classes``.
    """
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"Expected `axis` to be an int, received axis={axis!r}.")
    y_true, y_pred = _inputs(y_true, y_pred)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(
            "categorical_crossentropy expects y_true and y_pred of the same shape, "
            f"received y_true.shape={tuple(y_true.shape)} and y_pred.shape={tuple(y_pred.shape)}."
        )
    if label_smoothing:
        num_classes = y_true.shape[axis]
        y_true = ops.add(
            ops.multiply(y_true, 1.0 - label_smoothing), label_smoothing / num_classes
        )
    log_prob = _log_probabilities(y_pred, from_logits, axis)
    return ops.negative(ops.sum(ops.multiply(y_true, log_prob), axis=axis))


@primitive(num_inputs=2)
def _picked_crossentropy(y_pred, labels, axis, eps):
    """``-log(clip(y_pred / sum(y_pred), eps, 1 - eps))`` at each label, as one recorded op.

    The float operations of the chain of ops ``_log_probabilities`` records (sum, divide, clip, log, then
    gather and negate), on the picked entries only, and the product of their VJPs: the same values and
    gradients with one tape record instead of seven and no (batch, classes) temporaries but the gradient.
    """
    if y_pred.ndim == 2 and axis in (-1, 1):
        return _picked_rows(y_pred, labels, eps)
    total = np.add.reduce(y_pred, axis, None, None, True)  # np.sum's reduction, without its Python wrapper
    index = np.expand_dims(labels, axis)
    picked = np.take_along_axis(y_pred, index, axis)
    ratio = picked / total
    # np.clip's values (a NaN stays NaN) without its Python wrappers: called at every training step.
    clipped = np.minimum(np.maximum(ratio, eps), 1.0 - eps)
    loss = np.negative(np.log(clipped))

    def vjp(g):
        d_ratio = np.negative(np.expand_dims(g, axis)) / clipped
        # The clip passes the gradient inside [eps, 1 - eps], bounds included (as ops.clip).
        d_ratio = np.where((ratio < eps) | (np.maximum(ratio, eps) > 1.0 - eps), 0, d_ratio)
        # ratio = y_pred / total: d y_pred = d_ratio / total at the label, d total = -d_ratio * ratio / total.
        d_total = -d_ratio * ratio / total
        d_pred = np.empty(y_pred.shape, dtype=d_total.dtype)
        d_pred[...] = d_total  # broadcast along the classes
        np.put_along_axis(d_pred, index, np.take_along_axis(d_pred, index, axis) + d_ratio / total, axis)
        return d_pred, None

    return np.squeeze(loss, axis), vjp


def _picked_rows(y_pred, labels, eps):
    """``_picked_crossentropy`` of a (batch, classes) ``y_pred``, the common case: each row's sum and picked
    entry as vectors, indexed plainly (NumPy's ``*_along_axis`` build index arrays in Python), the same float
    operations on the same entries in the same order, so the same values; the picking, clipping and gradient
    as compiled loops where numba is loaded (``kernels.fused.picked_ratios``, ``picked_gradient``)."""
    total = np.add.reduce(y_pred, 1)
    fused = _picked_kernels(y_pred, labels, eps)
    constants = None if fused is None else compiled.constants(y_pred.dtype, eps, 1.0 - eps, 0)
    if constants is not None:
        ratio, clipped = np.empty_like(total), np.empty_like(total)
        if fused.picked_ratios(y_pred, labels, total, constants[0], constants[1], ratio, clipped):
            loss = np.log(clipped)
            np.negative(loss, out=loss)

            def compiled_vjp(g):
                if type(g) is not np.ndarray or g.dtype != y_pred.dtype or g.shape != total.shape:
                    rows = np.arange(y_pred.shape[0])
                    return _picked_rows_vjp(y_pred, labels, eps, rows, total, ratio, clipped)(g)
                d_pred = np.empty(y_pred.shape, y_pred.dtype)
                fused.picked_gradient(g, clipped, ratio, total, labels, *constants, d_pred)
                return d_pred, None

            return loss, compiled_vjp
    rows = np.arange(y_pred.shape[0])
    ratio = y_pred[rows, labels] / total
    clipped = np.minimum(np.maximum(ratio, eps), 1.0 - eps)
    loss = np.log(clipped)
    np.negative(loss, out=loss)
    return loss, _picked_rows_vjp(y_pred, labels, eps, rows, total, ratio, clipped)


def _picked_kernels(y_pred, labels, eps):
    """The compiled kernels where ``_picked_rows`` may take them (numba loaded, a C-ordered float32 or float64
    ``y_pred``, integer labels, the clip's bounds in order), else None."""
    fused = compiled.loaded()
    if (fused is None or type(y_pred) is not np.ndarray or type(labels) is not np.ndarray or labels.ndim != 1
            or labels.dtype.kind not in "iu" or not 0 < eps < 0.5 or not compiled.usable(y_pred)):
        return None
    return fused


def _picked_rows_vjp(y_pred, labels, eps, rows, total, ratio, clipped):
    def vjp(g):
        d_ratio = np.negative(g) / clipped
        # The clip passes the gradient inside [eps, 1 - eps], bounds included (as ops.clip; max(ratio, eps) >
        # 1 - eps is ratio > 1 - eps for eps below one half, a NaN passing either way).
        outside = (ratio < eps) | (ratio > 1.0 - eps) if eps < 0.5 else (ratio < eps) | (
            np.maximum(ratio, eps) > 1.0 - eps)
        d_ratio = np.where(outside, 0, d_ratio)
        d_total = -d_ratio * ratio / total
        d_pred = np.empty(y_pred.shape, dtype=d_total.dtype)
        d_pred[...] = d_total[:, None]  # broadcast along the classes
        d_pred[rows, labels] += d_ratio / total
        return d_pred, None

    return vjp


@primitive(num_inputs=1)
def _sparse_labels(y_true, expected, axis, ignore_class):
    """The class ids of ``y_true`` as integers of shape ``expected`` (a unit class axis dropped, ``ignore_class``
    entries 0), checked against the class count ``expected[axis]``, and which entries are valid (None without
    ``ignore_class``). One op, so that a replayed training step checks each batch's labels too."""
    labels = np.asarray(y_true)
    if labels.ndim == len(expected) and labels.shape[axis] == 1:
        labels = np.squeeze(labels, axis=axis)
    if labels.dtype.kind == "f":
        labels = labels.astype(np.int64)
    shape = list(expected)
    num_classes = shape.pop(axis)
    if labels.shape != tuple(shape):
        raise ValueError(
            "sparse_categorical_crossentropy expects y_true of shape "
            f"{tuple(shape)} (y_pred.shape={tuple(expected)} without the class axis), "
            f"received y_true.shape={np.shape(y_true)}."
        )
    valid = None
    if ignore_class is not None:
        valid = labels != ignore_class
        labels = np.where(valid, labels, 0)
    # The ufuncs' reductions directly: ndarray.min and max add about 8 us of Python wrappers at every step.
    if labels.size and (_least(labels, None) < 0 or _most(labels, None) >= num_classes):
        raise ValueError(
            f"Expected labels in [0, {num_classes}) for y_pred with {num_classes} classes, "
            f"received labels from {labels.min()} to {labels.max()}."
        )
    return (labels if valid is None else (labels, valid)), no_cotangent


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    """Per-sample crossentropy between integer labels and ``y_pred``.

    y_true: class ids of shape ``y_pred.shape`` without ``axis`` (or with a
        unit ``axis``), int or float.
    ignore_class: a label value whose entries get a loss of 0.
    """
    y_pred = _float_tensor(y_pred)
    labels = _sparse_labels(y_true, tuple(y_pred.shape), axis, ignore_class)
    valid = None
    if ignore_class is not None:
        labels, valid = labels
    if not from_logits and not isinstance(y_pred, KerasTensor):
        loss = _picked_crossentropy(y_pred, labels, axis=axis, eps=backend.epsilon())
    else:
        log_prob = _log_probabilities(y_pred, from_logits, axis)
        picked = ops.take_along_axis(log_prob, ops.expand_dims(labels, axis), axis=axis)
        loss = ops.negative(ops.squeeze(picked, axis))
    if valid is not None:
        loss = ops.where(valid, loss, 0.0)
    return loss


def mean_absolute_percentage_error(y_true, y_pred):
    """Per-sample ``100 * mean(abs((y_true - y_pred) / max(abs(y_true), eps)), axis=-1)``."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    scale = ops.maximum(ops.abs(y_true), backend.epsilon())
    return ops.multiply(ops.mean(ops.abs(ops.divide(ops.subtract(y_true, y_pred), scale)), axis=-1), 100.0)


def mean_squared_logarithmic_error(y_true, y_pred):
    """Per-sample mean of ``square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1))`` over the last axis."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    eps = backend.epsilon()
    log_pred = ops.log1p(ops.maximum(y_pred, eps))
    log_true = ops.log1p(ops.maximum(y_true, eps))
    return ops.mean(ops.square(ops.subtract(log_pred, log_true)), axis=-1)


def log_cosh(y_true, y_pred):
    """Per-sample ``mean(log(cosh(y_pred - y_true)), axis=-1)``, as ``x + softplus(-2x) - log(2)`` (no overflow)."""
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    error = ops.subtract(y_pred, y_true)
    log_cosh_error = ops.subtract(ops.add(error, ops.softplus(ops.multiply(error, -2.0))), float(np.log(2.0)))
    return ops.mean(log_cosh_error, axis=-1)


def poisson(y_true, y_pred):
    """Per-sample ``mean(y_pred - y_true * log(y_pred + eps), axis=-1)``."""
    y_true, y_pred = _inputs(y_true, y_pred)
    log_pred = ops.log(ops.add(y_pred, backend.epsilon()))
    return ops.mean(ops.subtract(y_pred, ops.multiply(y_true, log_pred)), axis=-1)


def _hinge_labels(y_true):
    """Labels as -1/1: when every label is 0 or 1 they are mapped to ``2 * y_true - 1``, else kept."""
    binary = ops.all(ops.logical_or(ops.equal(y_true, 0.0), ops.equal(y_true, 1.0)))
    return ops.where(binary, ops.subtract(ops.multiply(y_true, 2.0), 1.0), y_true)


def _hinge_margins(y_true, y_pred):
    y_true, y_pred = _inputs(y_true, y_pred)
    return ops.maximum(ops.subtract(1.0, ops.multiply(_hinge_labels(y_true), y_pred)), 0.0)


def hinge(y_true, y_pred):
    """Per-sample ``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; labels -1/1 (0/1 labels are mapped)."""
    return ops.mean(_hinge_margins(y_true, y_pred), axis=-1)


def squared_hinge(y_true, y_pred):
    """Per-sample ``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)``; labels -1/1 (0/1 are mapped)."""
    return ops.mean(ops.square(_hinge_margins(y_true, y_pred)), axis=-1)


def categorical_hinge(y_true, y_pred):
    """Per-sample ``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` for one-hot labels."""
    y_true, y_pred = _inputs(y_true, y_pred)
    positive = ops.sum(ops.multiply(y_true, y_pred), axis=-1)
    negative = ops.max(ops.multiply(ops.subtract(1.0, y_true), y_pred), axis=-1)
    return ops.maximum(ops.add(ops.subtract(negative, positive), 1.0), 0.0)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False, label_smoothing=0.0, axis=-1):
    """Per-sample mean over ``axis`` of the binary crossentropy scaled by ``(1 - p_t) ** gamma``.

    ``p_t`` is the probability given to the true class; with ``apply_class_balancing`` each term is also
    weighted ``alpha`` (class 1) or ``1 - alpha`` (class 0). ``label_smoothing`` squeezes targets towards 0.5.
    """
    y_true, y_pred = squeeze_or_expand_to_same_rank(*_inputs(y_true, y_pred))
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:
        y_pred = ops.sigmoid(y_pred)
    crossentropy = _binary_crossentropy_elementwise(y_true, y_pred, from_logits=False)
    false_class = ops.subtract(1.0, y_true)
    p_t = ops.add(ops.multiply(y_true, y_pred), ops.multiply(false_class, ops.subtract(1.0, y_pred)))
    focal = ops.multiply(ops.power(ops.subtract(1.0, p_t), gamma), crossentropy)
    if apply_class_balancing:
        focal = ops.multiply(ops.add(ops.multiply(y_true, alpha), ops.multiply(false_class, 1.0 - alpha)), focal)
    return ops.mean(focal, axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """Per-sample crossentropy of one-hot labels with each class term scaled by ``alpha * (1 - p) ** gamma``.

    Probabilities are renormalised to sum to one along ``axis`` and clipped to ``[eps, 1 - eps]``;
    ``label_smoothing`` makes targets ``t * (1 - s) + s / num_classes``.
    """
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis!r} of type {type(axis)}")
    y_true, y_pred = _inputs(y_true, y_pred)
    if y_pred.shape[-1] == 1:
        warnings.warn("In loss categorical_focal_crossentropy, expected y_pred.shape to be (batch_size, num_classes) "
                      f"with num_classes > 1. Received: y_pred.shape={tuple(y_pred.shape)}. Consider using "
                      "'binary_crossentropy' if you only have 2 classes.", SyntaxWarning, stacklevel=2)
    if label_smoothing:
        y_true = ops.add(ops.multiply(y_true, 1.0 - label_smoothing), label_smoothing / y_true.shape[-1])
    if from_logits:
        y_pred = ops.softmax(y_pred, axis=axis)
    eps = backend.epsilon()
    output = ops.clip(ops.divide(y_pred, ops.sum(y_pred, axis=axis, keepdims=True)), eps, 1.0 - eps)
    crossentropy = ops.negative(ops.multiply(y_true, ops.log(output)))
    factor = ops.multiply(ops.power(ops.subtract(1.0, output), gamma), alpha)
    return ops.sum(ops.multiply(factor, crossentropy), axis=axis)
