"""``Loss`` classes wrapping the per-sample functions with Keras 3's defaults."""
import numpy as np

from kgraph.losses import functions, task_functions
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



class MeanAbsolutePercentageError(_ConfiguredLoss):
    """Mean of ``100 * abs((y_true - y_pred) / y_true)`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_percentage_error", dtype=None):
        super().__init__(functions.mean_absolute_percentage_error, reduction=reduction, name=name, dtype=dtype)


class MeanSquaredLogarithmicError(_ConfiguredLoss):
    """Mean of ``square(log(y_true + 1) - log(y_pred + 1))`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_logarithmic_error", dtype=None):
        super().__init__(functions.mean_squared_logarithmic_error, reduction=reduction, name=name, dtype=dtype)


class LogCosh(_ConfiguredLoss):
    """Mean of ``log(cosh(y_pred - y_true))`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="log_cosh", dtype=None):
        super().__init__(functions.log_cosh, reduction=reduction, name=name, dtype=dtype)


class Poisson(_ConfiguredLoss):
    """Mean of ``y_pred - y_true * log(y_pred)`` over the last axis."""

    def __init__(self, reduction="sum_over_batch_size", name="poisson", dtype=None):
        super().__init__(functions.poisson, reduction=reduction, name=name, dtype=dtype)


class Hinge(_ConfiguredLoss):
    """Mean of ``maximum(1 - y_true * y_pred, 0)`` over the last axis; labels -1/1 (0/1 labels are mapped)."""

    def __init__(self, reduction="sum_over_batch_size", name="hinge", dtype=None):
        super().__init__(functions.hinge, reduction=reduction, name=name, dtype=dtype)


class SquaredHinge(_ConfiguredLoss):
    """Mean of ``square(maximum(1 - y_true * y_pred, 0))`` over the last axis; labels -1/1 (or 0/1)."""

    def __init__(self, reduction="sum_over_batch_size", name="squared_hinge", dtype=None):
        super().__init__(functions.squared_hinge, reduction=reduction, name=name, dtype=dtype)


class CategoricalHinge(_ConfiguredLoss):
    """``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)`` for one-hot labels."""

    def __init__(self, reduction="sum_over_batch_size", name="categorical_hinge", dtype=None):
        super().__init__(functions.categorical_hinge, reduction=reduction, name=name, dtype=dtype)


class BinaryFocalCrossentropy(_ConfiguredLoss):
    """Binary crossentropy scaled by ``(1 - p_t) ** gamma``, which down-weights the well-classified examples.

    apply_class_balancing: also weigh class 1 by ``alpha`` and class 0 by ``1 - alpha``.
    from_logits, label_smoothing, axis: as for ``BinaryCrossentropy``.
    """

    def __init__(self, apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                 axis=-1, reduction="sum_over_batch_size", name="binary_focal_crossentropy", dtype=None):
        super().__init__(functions.binary_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         apply_class_balancing=apply_class_balancing, alpha=alpha, gamma=gamma,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.apply_class_balancing = apply_class_balancing
        self.alpha = alpha
        self.gamma = gamma
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class CategoricalFocalCrossentropy(_ConfiguredLoss):
    """Categorical crossentropy with each class term scaled by ``alpha * (1 - p) ** gamma``.

    from_logits, label_smoothing, axis: as for ``CategoricalCrossentropy``.
    """

    def __init__(self, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction="sum_over_batch_size", name="categorical_focal_crossentropy", dtype=None):
        super().__init__(functions.categorical_focal_crossentropy, reduction=reduction, name=name, dtype=dtype,
                         alpha=alpha, gamma=gamma, from_logits=from_logits, label_smoothing=label_smoothing,
                         axis=axis)
        self.alpha = alpha
        self.gamma = gamma
        self.from_logits = from_logits
        self.label_smoothing = label_smoothing
        self.axis = axis


class Dice(_ConfiguredLoss):
    """``1 - Dice coefficient`` of ``y_true`` and ``y_pred`` over ``axis`` (``None``: the whole batch at once)."""

    def __init__(self, reduction="sum_over_batch_size", name="dice", axis=None, dtype=None):
        super().__init__(task_functions.dice, reduction=reduction, name=name, dtype=dtype, axis=axis)
        self.axis = axis


class Tversky(_ConfiguredLoss):
    """``1 - Tversky index`` over ``axis``; ``alpha`` weighs missed positives and ``beta`` false alarms."""

    def __init__(self, alpha=0.5, beta=0.5, reduction="sum_over_batch_size", name="tversky", axis=None, dtype=None):
        super().__init__(task_functions.tversky, reduction=reduction, name=name, dtype=dtype, alpha=alpha,
                         beta=beta, axis=axis)
        self.alpha = alpha
        self.beta = beta
        self.axis = axis


class Circle(_ConfiguredLoss):
    """Circle loss of L2-normalised embeddings ``(batch, dim)`` and their integer labels ``(batch,)``.

    gamma: the scale of the pair terms. margin: the relaxation of the decision boundary.
    remove_diagonal: leave out the pair of an embedding with itself.
    """

    def __init__(self, gamma=80.0, margin=0.4, remove_diagonal=True, reduction="sum_over_batch_size", name="circle",
                 dtype=None):
        super().__init__(task_functions.circle, reduction=reduction, name=name, dtype=dtype, gamma=gamma,
                         margin=margin, remove_diagonal=remove_diagonal)
        self.gamma = gamma
        self.margin = margin
        self.remove_diagonal = remove_diagonal


class CTC(_ConfiguredLoss):
    """Connectionist temporal classification of labels ``(batch, max_length)`` (0 pads) under logits
    ``(batch, steps, classes)`` whose class 0 is the blank."""

    def __init__(self, reduction="sum_over_batch_size", name="ctc", dtype=None):
        super().__init__(task_functions.ctc, reduction=reduction, name=name, dtype=dtype)


class CategoricalGeneralizedCrossEntropy(_ConfiguredLoss):
    """Generalized cross entropy ``(1 - p ** q) / q`` of integer labels, robust to noisy labels.

    q: in ``(0, 1)``; near 0 it behaves like the crossentropy, near 1 like the mean absolute error.
    """

    def __init__(self, q=0.5, reduction="sum_over_batch_size", name="categorical_generalized_cross_entropy",
                 dtype=None):
        if not 0 < q < 1:
            raise ValueError(f"q must be in the interval (0, 1). Received: q={q}")
        super().__init__(task_functions.categorical_generalized_cross_entropy, reduction=reduction, name=name,
                         dtype=dtype, q=q)
        self.q = q
