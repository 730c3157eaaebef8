"""What ``compile()`` sets up, as Keras's compile_utils: the compiled loss and the compiled metrics.

Both are matched to the model's outputs when first used (a model's first batch, or the first
``compute_loss`` / ``compute_metrics`` call), so a subclassed model compiles before it has outputs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kgraph import losses as losses_module
from kgraph import metrics as metrics_module
from kgraph import ops, tree
from kgraph.layers.mask_propagation import with_mask

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeAlias

    from kgraph.losses.loss import Loss
    from kgraph.metrics.metric import Metric

    # One loss: a name ("mse"), a Loss instance or class, a serialized config, or a function(y_true, y_pred).
    LossLike: TypeAlias = str | Loss | type[Loss] | dict[str, Any] | Callable[..., Any]
    # compile's `loss`: one for every output, a list or tuple with one per output, or a dict by output name.
    LossArg: TypeAlias = LossLike | list[LossLike | None] | tuple[LossLike | None, ...] | dict[str, LossLike | None]
    # compile's `loss_weights`: one weight, one per output, or a dict by output name.
    LossWeights: TypeAlias = float | list[float | None] | tuple[float | None, ...] | dict[str, float | None]
    # One metric: a name ("accuracy"), a Metric instance or class, a serialized config, or a function.
    MetricLike: TypeAlias = str | Metric | type[Metric] | dict[str, Any] | Callable[..., Any]
    MetricList: TypeAlias = list[MetricLike] | tuple[MetricLike, ...]
    # compile's `metrics`: metrics for every output, one entry (a metric or a list) per output, or a dict by
    # output name.
    MetricsArg: TypeAlias = (MetricLike | MetricList | list[MetricList | None] | tuple[MetricList | None, ...]
                             | dict[str, MetricLike | MetricList | None])
    # What a step returns and callbacks receive: each tracker's and metric's result by name.
    Logs: TypeAlias = dict[str, float | np.ndarray]


def flat_output_names(y_pred: Any, model_names: Sequence[str] | None) -> list[str | None]:
    """A name per output in ``tree.flatten(y_pred)`` order: dict keys, the model's output names, or None."""
    flat = tree.flatten(y_pred)
    if isinstance(y_pred, dict) and len(y_pred) == len(flat):
        return sorted(y_pred)
    if model_names and len(model_names) == len(flat):
        return list(model_names)
    return [None] * len(flat)


def _spread(spec, names, what):
    """One entry of a compile argument per output: the same for all, by position, or by output name."""
    if isinstance(spec, dict):
        unknown = [k for k in spec if k not in names]
        if unknown:
            raise ValueError(f"Unknown output name(s) in `{what}`: {unknown}. The model's outputs are {names}.")
        return [spec.get(name) for name in names]
    if isinstance(spec, (list, tuple)) and what != "metrics":
        if len(spec) != len(names):
            raise ValueError(f"When passing a list as `{what}`, it should have one entry per output "
                             f"({len(names)}: {names}). Received: {what}={spec}")
        return list(spec)
    if isinstance(spec, (list, tuple)) and len(names) > 1 and len(spec) == len(names):
        return list(spec)  # as Keras: with several outputs, a list of the outputs' length has one entry each
    return [spec] * len(names)


def flat_targets(y: Any, names: Sequence[str | None], wanted: Sequence[bool]) -> list[Any]:
    """One target per output: by name (a dict), by position, or only for the ``wanted`` outputs (those with a loss)."""
    n = len(names)
    if y is None:
        return [None] * n
    if isinstance(y, dict) and any(names):
        unknown = [k for k in y if k not in names]
        if unknown:
            raise ValueError(f"Unknown key(s) in `y`: {unknown}. Expected keys: {list(names)}")
        return [y.get(name) for name in names]
    flat = [y] if n == 1 and not isinstance(y, (list, tuple)) else tree.flatten(y)
    if len(flat) == n:
        return flat
    positions = [i for i in range(n) if wanted[i]]
    if len(flat) == len(positions):
        out = [None] * n
        for i, target in zip(positions, flat):
            out[i] = target
        return out
    raise ValueError(f"`y` should hold {n} arrays (one per model output: {list(names)}) or one per output that has "
                     f"a loss ({len(positions)}), but it holds {len(flat)}.")


def flat_sample_weights(sample_weight: Any, names: Sequence[str | None]) -> list[Any]:
    """One sample weight per output: by name (a dict), by position (one per output), or the same for all."""
    n = len(names)
    if isinstance(sample_weight, dict):
        return [sample_weight.get(name) for name in names]
    if isinstance(sample_weight, (list, tuple)) and len(sample_weight) == n and n > 1:
        return list(sample_weight)
    return [sample_weight] * n


def _loss_name(spec, loss):
    return spec if isinstance(spec, str) else getattr(loss, "name", None) or getattr(loss, "__name__", "loss")


def _resolve_loss(spec):
    loss = losses_module.get(spec)
    if isinstance(loss, losses_module.Loss):
        return loss
    # A plain function reduces like Keras's LossFunctionWrapper: a (weighted) mean over the batch.
    return losses_module.LossFunctionWrapper(loss, name=_loss_name(spec, loss))


def _batch_size(value):
    return int(np.shape(tree.flatten(value)[0])[0])


class CompileLoss:
    """The losses of ``compile(loss=..., loss_weights=...)``, called as ``(y_true, y_pred, sample_weight)``."""

    def __init__(self, loss: LossArg, loss_weights: LossWeights | None = None,
                 output_names: Sequence[str] | None = None) -> None:
        self._user_loss = loss
        self._user_loss_weights = loss_weights
        self.output_names = list(output_names) if output_names else None
        self.built = False
        self.names = self.losses = self.loss_weights = None
        self._trackers = []
        # A list while fit's step is traced for replay (kgraph.trainers.replay): the per-output trackers' updates
        # ``(tracker, loss, batch size)`` wait in it, to be made after the traced part (the same values).
        self.deferred = None

    @property
    def metrics(self) -> list[Metric]:
        return [t for t in self._trackers if t is not None]

    @property
    def has_loss(self) -> list[bool]:
        return [loss is not None for loss in self.losses]

    def build(self, y_true: Any, y_pred: Any) -> None:
        """Match the losses and weights to the outputs of ``y_pred`` (arrays or KerasTensors)."""
        del y_true  # the losses are chosen by output, not from the targets
        self.names = flat_output_names(y_pred, self.output_names)
        keys = [name if name is not None else str(i) for i, name in enumerate(self.names)]
        specs = _spread(self._user_loss, keys, "loss")
        weights = _spread(self._user_loss_weights, keys, "loss_weights") if self._user_loss_weights is not None \
            else [None] * len(keys)
        self.losses = [None if spec is None else _resolve_loss(spec) for spec in specs]
        self.loss_weights = [None if w is None else float(w) for w in weights]
        # As Keras: with several losses, a tracker per output records its unweighted loss, named
        # `<output>_loss`, or `<loss name>_loss` for an unnamed output.
        several = sum(self.has_loss) > 1
        self._trackers = [metrics_module.Mean(name=f"{name or _loss_name(spec, loss)}_loss")
                          if several and loss is not None else None
                          for name, spec, loss in zip(self.names, specs, self.losses)]
        self.built = True

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> np.ndarray | None:
        """The weighted sum of the outputs' losses, a 0-d array (None if no output has one); updates the trackers."""
        if not self.built:
            self.build(y_true, y_pred)
        preds = tree.flatten(y_pred)
        targets = flat_targets(y_true, self.names, self.has_loss)
        weights = flat_sample_weights(sample_weight, self.names)
        total = None
        for i, (fn, loss_weight, tracker) in enumerate(zip(self.losses, self.loss_weights, self._trackers)):
            if fn is None:
                continue
            if targets[i] is None:
                output = f"'{self.names[i]}'" if self.names[i] else str(i)
                raise ValueError(f"No target (`y`) was given for output {output}, which has a loss.")
            value = fn(targets[i], preds[i], sample_weight=weights[i])
            if tracker is not None:
                pending = getattr(self, "deferred", None)
                if pending is None:
                    tracker.update_state(value, sample_weight=_batch_size(preds[i]))
                else:
                    pending.append((tracker, value, _batch_size(preds[i])))
            if loss_weight is not None:
                value = ops.multiply(value, loss_weight)
            total = value if total is None else ops.add(total, value)
        return total


class CompileMetrics:
    """The metrics of ``compile(metrics=..., weighted_metrics=...)``: only the weighted ones see sample weights."""

    def __init__(self, metrics: MetricsArg | None, weighted_metrics: MetricsArg | None,
                 output_names: Sequence[str] | None = None, compile_loss: CompileLoss | None = None) -> None:
        self._user_metrics = metrics
        self._user_weighted_metrics = weighted_metrics
        self.output_names = list(output_names) if output_names else None
        self._compile_loss = compile_loss
        self.built = False
        self.names = None
        self._unweighted = self._weighted = []
        # Each metric's own name before the output prefix: Keras orders evaluate's list by these.
        self.base_names = {}

    @property
    def metrics(self) -> list[Metric]:
        return [m for group in self._unweighted + self._weighted for m in group]

    def _wanted(self, n):
        loss = self._compile_loss
        return loss.has_loss if loss is not None and loss.built else [True] * n

    def build(self, y_true: Any, y_pred: Any) -> None:
        """Create the metrics of each output (``"accuracy"`` picks its kind from the shapes)."""
        self.names = flat_output_names(y_pred, self.output_names)
        preds = tree.flatten(y_pred)
        targets = flat_targets(y_true, self.names, self._wanted(len(preds)))
        losses = self._compile_loss.losses if self._compile_loss is not None and self._compile_loss.built \
            else [None] * len(preds)
        self._unweighted = self._build_set(self._user_metrics, targets, preds, losses)
        self._weighted = self._build_set(self._user_weighted_metrics, targets, preds, losses)
        self._name_metrics()
        self.built = True

    def _build_set(self, spec, targets, preds, losses):
        keys = [name if name is not None else str(i) for i, name in enumerate(self.names)]
        groups = []
        for entry, y, p, loss in zip(_spread(spec or [], keys, "metrics"), targets, preds, losses):
            groups.append([] if y is None else [_resolve_metric(e, y, p, loss) for e in _entries(entry)])
        return groups

    def _name_metrics(self):
        # As Keras: `<output>_<metric>` with several outputs; a repeated name gets `_1`, `_2`... (a weighted
        # metric first tries `weighted_<metric>`).
        several = len(self.names) > 1
        taken = {}
        for weighted, groups in ((False, self._unweighted), (True, self._weighted)):
            for output, group in zip(self.names, groups):
                for metric in group:
                    self.base_names[id(metric)] = metric.name
                    prefix = f"{output}_" if several and output else ""
                    name = prefix + metric.name
                    if name in taken and weighted:
                        name = f"{prefix}weighted_{metric.name}"
                    if name in taken:
                        taken[name] += 1
                        name = f"{name}_{taken[name] - 1}"
                    else:
                        taken[name] = 1
                    metric.name = name

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Update every output's metrics with one batch (none without targets)."""
        if y_true is None:
            return  # building now would leave every output without metrics for later batches that have targets
        if not self.built:
            self.build(y_true, y_pred)
        preds = tree.flatten(y_pred)
        targets = flat_targets(y_true, self.names, self._wanted(len(preds)))
        weights = flat_sample_weights(sample_weight, self.names)
        for y, p, sw, unweighted, weighted in zip(targets, preds, weights, self._unweighted, self._weighted):
            if y is None:
                continue
            # A plain array for the metrics, still carrying the mask of a masked model's output (Keras weighs
            # masked entries out of the metrics, as out of the loss).
            p = with_mask(np.asarray(p), getattr(p, "_keras_mask", None))
            for metric in unweighted:
                metric.update_state(y, p)
            for metric in weighted:
                metric.update_state(y, p, sample_weight=sw)


def _entries(entry):
    """The metrics of one output's entry: None, one metric, or a (nested) list of them."""
    if entry is None:
        return []
    if not isinstance(entry, (list, tuple)):
        return [entry]
    return [m for item in entry for m in _entries(item)]


def _resolve_metric(spec, y_true, y_pred, loss):
    if isinstance(spec, str) and spec in ("accuracy", "acc"):
        return metrics_module.resolve_accuracy(spec, np.shape(y_true), tuple(y_pred.shape), loss)
    # get() wraps a function or loss as Keras's compile does: a MeanMetricWrapper named after it.
    return metrics_module.get(spec)
