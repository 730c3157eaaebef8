"""What ``compile()`` sets up: per-output losses and weights, loss trackers and metrics."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from kgraph import losses as losses_module
from kgraph import metrics as metrics_module
from kgraph import ops

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any, TypeAlias

    from kgraph.losses.loss import Loss
    from kgraph.metrics.metric import Metric
    from kgraph.trainers.data_adapter import FlatArrays

    # One loss: a name ("mse"), a Loss instance or class, a serialized config, or a function(y_true, y_pred).
    LossLike: TypeAlias = str | Loss | type[Loss] | dict[str, Any] | Callable[..., Any]
    # compile's `loss`: one for every output, a list or tuple with one per output, or a dict by output name.
    LossArg: TypeAlias = LossLike | list[LossLike | None] | tuple[LossLike | None, ...] | dict[str, LossLike | None]
    # compile's `loss_weights`: one weight, one per output, or a dict by output name.
    LossWeights: TypeAlias = float | list[float | None] | tuple[float | None, ...] | dict[str, float | None]
    # One metric: a name ("accuracy"), a Metric instance or class, a serialized config, or a function.
    MetricLike: TypeAlias = str | Metric | type[Metric] | dict[str, Any] | Callable[..., Any]
    MetricList: TypeAlias = list[MetricLike] | tuple[MetricLike, ...]
    # compile's `metrics`: metrics for every output, a list of lists with one per output, or a dict by output name.
    MetricsArg: TypeAlias = (MetricLike | MetricList | list[MetricList | None] | tuple[MetricList | None, ...]
                             | dict[str, MetricLike | MetricList | None])
    # What a step returns and callbacks receive: each tracker's and metric's result by name.
    Logs: TypeAlias = dict[str, float | np.ndarray]


def _per_output(spec, names, what):
    """Spread a compile argument over the outputs: one value, a list, or a dict by output name."""
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
    if what == "metrics" and isinstance(spec, (list, tuple)) and len(names) > 1 and spec \
            and all(isinstance(s, (list, tuple)) or s is None for s in spec):
        if len(spec) != len(names):
            raise ValueError(f"`metrics` as a list of lists needs one list per output ({names}). "
                             f"Received: {spec}")
        return list(spec)
    return [spec] * len(names)


class CompiledLossesAndMetrics:
    """Holds the resolved losses, loss weights, trackers and metrics of a compiled model."""

    def __init__(self, output_names: Iterable[str], loss: LossArg | None, loss_weights: LossWeights | None,
                 metrics: MetricsArg | None) -> None:
        self.output_names = list(output_names)
        if loss is None:
            raise ValueError("`compile()` needs a `loss` (a name such as 'mse', a Loss instance or a function).")
        self.losses = [losses_module.get(s) if s is not None else None
                       for s in _per_output(loss, self.output_names, "loss")]
        if all(l is None for l in self.losses):
            raise ValueError(f"No loss was given for any of the outputs {self.output_names}.")
        weights = _per_output(loss_weights, self.output_names, "loss_weights") if loss_weights is not None \
            else [1.0] * len(self.output_names)
        self.loss_weights = [1.0 if w is None else float(w) for w in weights]
        self._metric_specs = [s if isinstance(s, (list, tuple)) else ([] if s is None else [s])
                              for s in _per_output(metrics or [], self.output_names, "metrics")]
        multi = len(self.output_names) > 1
        self.loss_tracker = metrics_module.Mean(name="loss")
        self.output_loss_trackers = [metrics_module.Mean(name=f"{n}_loss") if multi and l is not None else None
                                     for n, l in zip(self.output_names, self.losses)]
        self.output_metrics = None

    def _build_metrics(self, ys, preds):
        multi = len(self.output_names) > 1
        self.output_metrics = []
        for name, specs, y, p, loss in zip(self.output_names, self._metric_specs, ys, preds, self.losses):
            built = []
            for spec in specs:
                if isinstance(spec, str) and spec in ("accuracy", "acc"):
                    metric = metrics_module.resolve_accuracy(spec, np.shape(y), np.shape(p), loss)
                else:
                    metric = metrics_module.get(spec)
                if multi:
                    metric.name = f"{name}_{metric.name}"
                built.append(metric)
            self.output_metrics.append(built)

    def all_metrics(self) -> list[Metric]:
        out = [self.loss_tracker] + [t for t in self.output_loss_trackers if t is not None]
        for group in self.output_metrics or []:
            out.extend(group)
        return out

    def loss(self, ys: FlatArrays, preds: Sequence[np.ndarray],
             sample_weights: FlatArrays | None) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """``(total, per_output)``: the weighted sum over outputs, each a 0-d array."""
        total, per_output = None, []
        for i, (fn, weight) in enumerate(zip(self.losses, self.loss_weights)):
            if fn is None:
                per_output.append(None)
                continue
            if ys[i] is None:
                raise ValueError(f"No target (`y`) was given for output '{self.output_names[i]}', "
                                 "which has a loss.")
            sw = sample_weights[i] if sample_weights else None
            value = fn(ys[i], preds[i], sample_weight=sw) if isinstance(fn, losses_module.Loss) \
                else _mean_weighted(fn(ys[i], preds[i]), sw)
            per_output.append(value)
            term = value if weight == 1.0 else ops.multiply(value, weight)
            total = term if total is None else ops.add(total, term)
        return total, per_output

    def update_metrics(self, ys: FlatArrays, preds: Sequence[np.ndarray], sample_weights: FlatArrays | None,
                       total: np.ndarray, per_output: Sequence[np.ndarray | None], batch_size: int) -> Logs:
        """Update trackers and metrics with one batch; returns the running logs."""
        if self.output_metrics is None:
            self._build_metrics(ys, preds)
        self.loss_tracker.update_state(float(np.asarray(total)), sample_weight=batch_size)
        for tracker, value in zip(self.output_loss_trackers, per_output):
            if tracker is not None:
                tracker.update_state(float(np.asarray(value)), sample_weight=batch_size)
        for i, group in enumerate(self.output_metrics):
            if not group or ys[i] is None:
                continue
            sw = sample_weights[i] if sample_weights else None
            pred = np.asarray(preds[i])
            for metric in group:
                metric.update_state(ys[i], pred, sample_weight=sw)
        return {m.name: _to_float(m.result()) for m in self.all_metrics()}


def _mean_weighted(values, sample_weight):
    if sample_weight is None:
        return ops.mean(values)
    sw = np.asarray(sample_weight, dtype=np.asarray(values).dtype).reshape(
        np.shape(sample_weight) + (1,) * (np.ndim(values) - np.ndim(sample_weight)))
    return ops.divide(ops.sum(ops.multiply(values, sw)), max(float(np.size(values)), 1.0))


def _to_float(value):
    value = np.asarray(value)
    return float(value) if value.ndim == 0 else value
