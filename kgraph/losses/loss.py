"""The ``Loss`` base class and the weighting/reduction shared by all losses."""
import re

import numpy as np

from kgraph import ops
from kgraph.backend.autodiff import no_cotangent, primitive

REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


def standardize_reduction(reduction):
    """Return ``reduction`` if Keras knows it, else raise ``ValueError``."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"Invalid reduction {reduction!r}. Expected one of {list(REDUCTIONS)}.")
    return reduction


def squeeze_or_expand_to_same_rank(x1, x2, expand_rank_1=True):
    """Align two arrays whose ranks differ by a trailing unit axis, as Keras does.

    expand_rank_1: when the lower-rank array is 1-D, expand it rather than
        squeezing the other one.
    """
    r1, r2 = len(x1.shape), len(x2.shape)
    if r1 == r2 + 1 and x1.shape[-1] == 1:
        if r2 == 1 and expand_rank_1:
            x2 = ops.expand_dims(x2, -1)
        else:
            x1 = ops.squeeze(x1, -1)
    elif r2 == r1 + 1 and x2.shape[-1] == 1:
        if r1 == 1 and expand_rank_1:
            x1 = ops.expand_dims(x1, -1)
        else:
            x2 = ops.squeeze(x2, -1)
    return x1, x2


@primitive(num_inputs=1)
def _mask_to_weight(mask, dtype, reduction):
    """``mask`` as weights of ``dtype``: 1 for a kept entry (scaled by total/kept under the mean reductions, so
    that the mean runs over the kept entries only), 0 for a masked one. An op without a gradient, so that a
    replayed training step weighs each batch by its own mask."""
    float_mask = np.asarray(mask, dtype=dtype)
    if reduction in ("sum_over_batch_size", "mean"):
        valid = float_mask.sum()
        float_mask = float_mask * (float_mask.size / valid if valid else 0.0)
    return float_mask, no_cotangent


def reduce_weighted_values(values, sample_weight=None, mask=None, reduction="sum_over_batch_size"):
    """Weight per-sample ``values`` and reduce them (to a 0-d array unless ``"none"``).

    sample_weight: broadcastable to ``values`` after aligning a trailing unit
        axis, e.g. shape ``(batch,)`` or ``(batch, 1)``.
    mask: boolean array over ``values``; masked entries count as weight 0 and
        the mean reductions average over the unmasked entries only.
    """
    reduction = standardize_reduction(reduction)
    dtype = np.dtype(values.dtype)
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)  # (off the tape: no gradient flows into the weights)
        if sample_weight.dtype != dtype:
            sample_weight = ops.cast(sample_weight, dtype)  # an op: a replayed training step casts each batch's
    if mask is not None:
        float_mask = _mask_to_weight(mask, dtype, reduction)
        if sample_weight is None:
            sample_weight = float_mask
        else:
            float_mask, sample_weight = squeeze_or_expand_to_same_rank(float_mask, sample_weight)
            sample_weight = ops.multiply(np.asarray(sample_weight), float_mask)  # (the weights off the tape)
    if sample_weight is not None:
        values, sample_weight = squeeze_or_expand_to_same_rank(values, sample_weight)
        sample_weight = np.asarray(sample_weight)
        if 0 < sample_weight.ndim < len(values.shape):
            # Per-sample weights of shape (batch,) apply to every remaining
            # axis of (batch, d1, ...) losses instead of failing to broadcast.
            extra = len(values.shape) - sample_weight.ndim
            sample_weight = ops.reshape(sample_weight, sample_weight.shape + (1,) * extra)
        values = ops.multiply(values, sample_weight)
    if reduction in ("none", None) or len(values.shape) == 0 or tuple(values.shape) == (0,):
        return values
    if reduction == "sum":
        return ops.sum(values)
    if reduction == "mean_with_sample_weight" and sample_weight is not None:
        return ops.multiply(ops.sum(values), _inverse_total(sample_weight, dtype))
    return ops.mean(values)


@primitive(num_inputs=1)
def _inverse_total(sample_weight, dtype):
    """``1 / sum(sample_weight)`` (0 for a sum of 0), rounded to ``dtype`` as a Python float beside an array of it
    would be; an op, so that a replayed training step sums each batch's weights (no gradient)."""
    total = float(np.sum(sample_weight))
    return np.asarray(1.0 / total if total else 0.0, dtype=dtype), no_cotangent


def _snake_case(name):
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


class Loss:
    """Base class: subclasses implement ``call(y_true, y_pred)`` -> per-sample losses.

    reduction: ``"sum_over_batch_size"`` (default; sum divided by the number of
        elements), ``"mean"`` (same), ``"sum"``, ``"mean_with_sample_weight"``
        (sum divided by the sum of the sample weights) or ``"none"``/``None``.
    dtype: cast predictions to this float type first; by default floating
        predictions keep their own dtype (so float64 stays float64), except float16 ones (a mixed_float16
        model's), computed in float32 as Keras does.
    """

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None):
        self.name = name or _snake_case(type(self).__name__)
        self.reduction = standardize_reduction(reduction)
        self.dtype = None if dtype is None else np.dtype(dtype).name

    def __call__(self, y_true, y_pred, sample_weight=None):
        """Return the reduced loss: a 0-d array (or per-sample array for ``"none"``).

        As in Keras, a mask ``y_pred`` carries (a masked sequence model's output) leaves its entries out.
        """
        in_mask = getattr(y_pred, "_keras_mask", None)
        if self.dtype is not None:
            if not hasattr(y_pred, "dtype"):
                y_pred = np.asarray(y_pred)
            if np.dtype(y_pred.dtype) != self.dtype:
                y_pred = ops.cast(y_pred, self.dtype)
        elif getattr(y_pred, "dtype", None) == np.float16:
            y_pred = ops.cast(y_pred, "float32")  # as Keras: a mixed_float16 model's loss is computed in float32
        values = self.call(y_true, y_pred)
        mask = self.compute_mask(y_true, y_pred)
        # The masks of the prediction and of the loss function's values (Circle's), as Keras combines them.
        for extra in (in_mask, getattr(values, "_keras_mask", None)):
            if extra is not None:
                extra = np.asarray(ops.convert_to_numpy(extra), dtype=bool)
                _check_mask(extra, values, self.name)
                mask = extra if mask is None else ops.logical_and(mask, extra)  # (an op: see _mask_to_weight)
        return reduce_weighted_values(values, sample_weight, mask, self.reduction)

    def call(self, y_true, y_pred):
        raise NotImplementedError(
            f"{type(self).__name__} must implement call(y_true, y_pred) returning per-sample losses."
        )

    def compute_mask(self, y_true, y_pred):
        """Boolean array over the per-sample losses marking those that count (``None`` = all).

        The per-sample losses ``call`` returns may carry a mask of their own too (``_keras_mask``); both apply.
        """
        return None

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r} reduction={self.reduction!r}>"


def _check_mask(mask, values, name):
    """A mask that cannot weigh the per-sample losses is an error naming both shapes (Keras fails there too)."""
    shape, aligned = tuple(np.shape(values)), mask.shape
    if len(aligned) == len(shape) + 1 and aligned[-1] == 1:
        aligned = aligned[:-1]
    elif len(aligned) == len(shape) - 1:
        aligned = aligned + (1,)
    try:
        if np.broadcast_shapes(aligned, shape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"Loss '{name}': the mask of the predictions, of shape {mask.shape}, does not match the "
                         f"per-sample losses, of shape {shape}. A mask a layer's output carries (from "
                         "`Embedding(mask_zero=True)`, `Masking`, or a `mask=` given to a layer's call) must cover "
                         "the loss's axes; drop it before the loss (an op such as `y * 1.0` carries no mask).") \
            from None


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a per-sample function ``fn(y_true, y_pred, **kwargs)``."""

    def __init__(self, fn, reduction="sum_over_batch_size", name=None, dtype=None, **kwargs):
        if not callable(fn):
            raise TypeError(f"Expected a callable loss function, received {fn!r}.")
        super().__init__(name=name or getattr(fn, "__name__", None), reduction=reduction, dtype=dtype)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_true = y_true if _is_array_like(y_true) else np.asarray(y_true)
        y_pred = y_pred if _is_array_like(y_pred) else np.asarray(y_pred)
        y_true, y_pred = squeeze_or_expand_to_same_rank(y_true, y_pred)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        config = super().get_config()
        fn_name = getattr(self.fn, "__name__", None)
        if type(self) is LossFunctionWrapper:
            config["fn"] = fn_name
        config.update(self._fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("fn"), str):
            from kgraph.losses import get_function
            config["fn"] = get_function(config["fn"])
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__}({getattr(self.fn, '__name__', self.fn)}, kwargs={self._fn_kwargs})>"


def _is_array_like(x):
    return hasattr(x, "shape") and hasattr(x, "dtype")
