"""``Loss`` classes wrapping the per-sample functions with Keras 3's defaults."""
import numpy as np

from kgraph.losses import functions
from kgraph.losses.loss import LossFunctionWrapper


class _ConfiguredLoss(LossFunctionWrapper):
    """A wrapper whose config is its constructor arguments (no ``fn`` entry)."""

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, **self._fn_kwargs}


class MeanSquaredError(_ConfiguredLoss):
    """Mean of squared errors over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error", dtype=None):
        super().__init__(functions.mean_squared_error, reduction=reduction, name=name, dtype=dtype)


class MeanAbsoluteError(_ConfiguredLoss):
    """Mean of absolute errors over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error", dtype=None):
        super().__init__(functions.mean_absolute_error, reduction=reduction, name=name, dtype=dtype)


class Huber(_ConfiguredLoss):
    """Huber loss; ``delta`` is where it turns from quadratic to linear."""

    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss", dtype=None):
        super().__init__(functions.huber, reduction=reduction, name=name, dtype=dtype, delta=delta)


class KLDivergence(_ConfiguredLoss):
    """Kullback-Leibler divergence ``sum(y_true * log(y_true / y_pred))``."""

    def __init__(self, reduction="sum_over_batch_size", name="kl_divergence", dtype=None):
        super().__init__(functions.kl_divergence, reduction=reduction, name=name, dtype=dtype)


class CosineSimilarity(_ConfiguredLoss):
    """Negative cosine similarity along ``axis`` (-1 for identical directions)."""

    def __init__(self, axis=-1, reduction="sum_over_batch_size", name="cosine_similarity", dtype=None):
        super().__init__(functions.cosine_similarity, reduction=reduction, name=name, dtype=dtype, axis=axis)


class BinaryCrossentropy(_ConfiguredLoss):
    """Binary crossentropy for 0/1 targets.

    from_logits: ``y_pred`` are logits rather than probabilities.
    label_smoothing: in ``[0, 1]``; targets are squeezed towards 0.5.
    axis: the axis averaged over for each sample.
    """

    def __init__(
        self,
        from_logits=False,
        label_smoothing=0.0,
        axis=-1,
        reduction="sum_over_batch_size",
        name="binary_crossentropy",
        dtype=None,
    ):
        super().__init__(
            functions.binary_crossentropy,
            reduction=reduction,
            name=name,
            dtype=dtype,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
            axis=axis,
        )
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class CategoricalCrossentropy(_ConfiguredLoss):
    """Crossentropy for one-hot targets.

    from_logits: ``y_pred`` are logits (a log-softmax is taken) rather than
        probabilities (renormalised and clipped to ``[eps, 1 - eps]``).
    label_smoothing: in ``[0, 1]``; targets become ``t * (1 - s) + s / classes``.
    """

    def __init__(
        self,
        from_logits=False,
        label_smoothing=0.0,
        axis=-1,
        reduction="sum_over_batch_size",
        name="categorical_crossentropy",
        dtype=None,
    ):
        super().__init__(
            functions.categorical_crossentropy,
            reduction=reduction,
            name=name,
            dtype=dtype,
            from_logits=from_logits,
            label_smoothing=label_smoothing,
            axis=axis,
        )
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class SparseCategoricalCrossentropy(_ConfiguredLoss):
    """Crossentropy for integer class labels of shape ``(batch,)`` or ``(batch, 1)``.

    ignore_class: a label value excluded from the loss; the mean reductions
        then average over the remaining entries only.
    """

    def __init__(
        self,
        from_logits=False,
        ignore_class=None,
        reduction="sum_over_batch_size",
        axis=-1,
        name="sparse_categorical_crossentropy",
        dtype=None,
    ):
        super().__init__(
            functions.sparse_categorical_crossentropy,
            reduction=reduction,
            name=name,
            dtype=dtype,
            from_logits=from_logits,
            ignore_class=ignore_class,
            axis=axis,
        )
        self.from_logits = from_logits
        self.ignore_class = ignore_class
        self.axis = axis

    def compute_mask(self, y_true, y_pred):
        if self.ignore_class is None:
            return None
        labels = np.asarray(y_true)
        if labels.ndim == len(np.shape(y_pred)) and labels.shape[self.axis] == 1:
            labels = np.squeeze(labels, axis=self.axis)
        return labels != self.ignore_class

