"""Trainer: compile / fit / evaluate / predict and the *_on_batch methods of Model."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from kgraph import tree
from kgraph.trainers import data_adapter as data
from kgraph.trainers.epoch_iterator import (
    ArrayAdapter,
    EpochIterator,
    GeneratorAdapter,
    PyDatasetAdapter,
    is_batch_source,
    source_kind,
    unpack_batch,
)
from kgraph.trainers.py_dataset import PyDataset

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any, Literal, TypeAlias

    from kgraph.callbacks.callback import Callback
    from kgraph.callbacks.history import History
    from kgraph.metrics.metric import Metric
    from kgraph.optimizers.optimizer import Optimizer
    from kgraph.trainers.compile_utils import Logs, LossArg, LossWeights, MetricsArg
    from kgraph.trainers.data_adapter import ArrayData, FlatArrays, Shuffle
    from kgraph.trainers.epoch_iterator import Batch, DataSource

    # fit's `validation_data`: `(x_val, y_val)`, `(x_val, y_val, val_sample_weight)`, a PyDataset or a generator.
    ValidationData: TypeAlias = (tuple[ArrayData, ArrayData] | tuple[ArrayData, ArrayData, ArrayData | None]
                                 | PyDataset | Iterator[Batch])
    # evaluate / train_on_batch / test_on_batch: one value, a list in `metrics_names` order, or a dict by name.
    Results: TypeAlias = float | np.ndarray | list[float | np.ndarray] | dict[str, float | np.ndarray]
    # predict: arrays in the structure of the model's outputs.
    NestedArrays: TypeAlias = (np.ndarray | list["NestedArrays"] | tuple["NestedArrays", ...]
                               | dict[str, "NestedArrays"])


class Trainer:
    """The training loop that Model mixes in (Keras's ``compile``/``fit``/``evaluate``/``predict``)."""

    def __init__(self) -> None:
        self.optimizer = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._compile_config = None
        self._compiled = None

    # ----- compile ------------------------------------------------------------
    def compile(self, optimizer: str | Optimizer | dict[str, Any] = "rmsprop", loss: LossArg | None = None,
                loss_weights: LossWeights | None = None, metrics: MetricsArg | None = None,
                weighted_metrics: MetricsArg | None = None, run_eagerly: bool | None = None,
                steps_per_execution: int = 1, jit_compile: bool | Literal["auto"] | None = None,
                auto_scale_loss: bool | None = None) -> None:
        """Configure the optimizer, the loss(es) and the metrics."""
        from kgraph import optimizers
        from kgraph.trainers.compile_utils import CompiledLossesAndMetrics
        self.optimizer = optimizers.get(optimizer)
        self._compiled = CompiledLossesAndMetrics(self._output_names(), loss, loss_weights, metrics)
        self._compile_config = {"loss": loss, "loss_weights": loss_weights, "metrics": metrics}
        self.compiled = True
        self.stop_training = False

    def _output_names(self):
        names = getattr(self, "output_names", None)
        return list(names) if names else ["output"]

    def _input_names(self):
        struct = getattr(self, "_inputs_struct", None)
        if isinstance(struct, dict):
            return sorted(struct)
        names = getattr(self, "input_names", None)
        return list(names) if names else ["input"]

    def _x_names(self, x):
        """The input names to match ``x`` against; a subclassed model takes a list of arrays as it comes."""
        names = self._input_names()
        if names == ["input"] and isinstance(x, (list, tuple)) and len(x) > 1:
            return [f"input_{i}" for i in range(len(x))]
        return names

    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"You must call `compile()` on model '{self.name}' before calling `{what}()`.")

    @property
    def metrics(self) -> list[Metric]:
        return self._compiled.all_metrics() if self._compiled else []

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    # ----- steps ---------------------------------------------------------------
    def _forward(self, xs, training):
        inputs = xs[0] if len(xs) == 1 else xs
        return tree.flatten(self(inputs, training=training))

    def compute_loss(self, ys: FlatArrays, preds: list[np.ndarray],
                     sample_weights: FlatArrays | None) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Total loss: weighted per-output losses plus the model's added losses."""
        from kgraph import ops
        total, per_output = self._compiled.loss(ys, preds, sample_weights)
        extra = self.losses
        if extra:
            total = ops.add(total, ops.sum(ops.stack([ops.sum(loss) for loss in extra])))
        return total, per_output

    def train_step(self, xs: FlatArrays, ys: FlatArrays, sample_weights: FlatArrays | None) -> Logs:
        from kgraph.backend.autodiff import GradientTape
        with GradientTape() as tape:
            preds = self._forward(xs, training=True)
            total, per_output = self.compute_loss(ys, preds, sample_weights)
        variables = self.trainable_weights  # after the forward pass, which builds a model given no input shape
        grads = tape.gradient(total, variables)
        self.optimizer.apply(grads, variables)
        return self._compiled.update_metrics(ys, preds, sample_weights, total, per_output, len(xs[0]))

    def test_step(self, xs: FlatArrays, ys: FlatArrays, sample_weights: FlatArrays | None) -> Logs:
        preds = self._forward(xs, training=False)
        total, per_output = self.compute_loss(ys, preds, sample_weights)
        return self._compiled.update_metrics(ys, preds, sample_weights, total, per_output, len(xs[0]))

    # ----- data --------------------------------------------------------------------
    def _prepare(self, x, y, sample_weight, class_weight=None, need_y=True):
        xs = data.flatten_by_names(x, self._x_names(x), "x")
        ys = data.flatten_by_names(y, self._output_names(), "y") if y is not None else None
        if need_y and ys is None:
            raise ValueError(f"Model '{self.name}' needs targets: `y` was not provided.")
        sws = None
        if sample_weight is not None:
            if isinstance(sample_weight, (list, tuple, dict)):
                sws = data.flatten_by_names(sample_weight, self._output_names(), "sample_weight")
            else:
                sws = [np.asarray(sample_weight)] * len(self._output_names())
        if class_weight is not None:
            if len(self._output_names()) > 1:
                raise ValueError("`class_weight` is only supported for models with a single output.")
            weights = data.class_weights_to_sample_weights(ys[0], class_weight)
            sws = [weights if sws is None else sws[0] * weights]
        data.check_cardinality({"x": xs, "y": ys or [], "sample_weight": sws or []})
        return xs, ys, sws

    def _standardize_batch(self, batch, class_weight=None, need_y=True):
        x, y, sample_weight = unpack_batch(batch)
        return self._prepare(x, y, sample_weight, class_weight, need_y)

    def _iterator(self, x, y, sample_weight, batch_size, shuffle, steps, what="x", steps_name="steps",
                  batch_size_name="batch_size", class_weight=None, need_y=True):
        """An EpochIterator over ``x`` (arrays, a generator/iterator or a PyDataset)."""
        if not is_batch_source(x):
            arrays = self._prepare(x, y, sample_weight, class_weight, need_y)
            return EpochIterator(ArrayAdapter(arrays, batch_size or 32, shuffle), steps, what, steps_name)
        kind = source_kind(x)
        for name, value, part in (("y", y, "targets"), ("sample_weight", sample_weight, "sample weights")):
            if value is not None:
                raise ValueError(f"When providing `{what}` as a {kind}, `{name}` should not be passed. "
                                 f"Instead, the {part} should be included as part of the {kind}.")
        if batch_size is not None:
            raise ValueError(f"The `{batch_size_name}` argument must not be specified for the given input type: "
                             f"a {kind} yields whole batches. Received: {batch_size_name}={batch_size!r}, "
                             f"{what} of type {type(x).__name__}")
        standardize = functools.partial(self._standardize_batch, class_weight=class_weight, need_y=need_y)
        if isinstance(x, PyDataset):
            adapter = PyDatasetAdapter(x, shuffle, standardize)
        else:
            adapter = GeneratorAdapter(x, standardize)
        return EpochIterator(adapter, steps, what, steps_name)

    @staticmethod
    def _verbose(verbose):
        return 1 if verbose == "auto" else int(verbose)

    def _callbacks(self, callbacks, verbose, epochs, steps, with_history):
        from kgraph import callbacks as cbks
        items = list(callbacks or [])
        if with_history:
            self.history = cbks.History()
            items.append(self.history)
        if verbose and not any(isinstance(c, cbks.ProgbarLogger) for c in items):
            items.insert(0, cbks.ProgbarLogger())
        cl = cbks.CallbackList(items)
        cl.set_model(self)
        cl.set_params({"verbose": verbose, "epochs": epochs, "steps": steps})
        return cl

    # ----- fit / evaluate / predict -------------------------------------------------
    def fit(self, x: DataSource | None = None, y: ArrayData | None = None, batch_size: int | None = None,
            epochs: int = 1, verbose: str | int = "auto", callbacks: list[Callback] | None = None,
            validation_split: float = 0.0, validation_data: ValidationData | None = None, shuffle: Shuffle = True,
            class_weight: Mapping[int, float] | None = None, sample_weight: ArrayData | None = None,
            initial_epoch: int = 0, steps_per_epoch: int | None = None, validation_steps: int | None = None,
            validation_batch_size: int | None = None, validation_freq: int = 1) -> History:
        """Train for ``epochs`` epochs; returns the History callback.

        ``x`` may be arrays (lists/dicts of them, memory maps included), a
        generator or iterator of ``(x, y[, sample_weight])`` batches, or a
        ``kgraph.utils.PyDataset``; ``validation_data`` likewise.
        """
        self._require_compiled("fit")
        val_iterator = None
        if validation_data is not None:
            if is_batch_source(validation_data):
                val_iterator = self._iterator(validation_data, None, None, validation_batch_size, False,
                                              validation_steps, "validation_data", "validation_steps",
                                              "validation_batch_size")
            else:
                if not isinstance(validation_data, (list, tuple)) or len(validation_data) not in (2, 3):
                    raise ValueError("`validation_data` should be a tuple `(x_val, y_val)` or "
                                     f"`(x_val, y_val, val_sample_weight)`. Received: {type(validation_data)}")
                val = self._prepare(*validation_data) if len(validation_data) == 3 else \
                    self._prepare(validation_data[0], validation_data[1], None)
                val_iterator = EpochIterator(ArrayAdapter(val, validation_batch_size or batch_size or 32, False),
                                             validation_steps, "validation_data", "validation_steps")
        if validation_split and is_batch_source(x):
            raise ValueError("`validation_split` is only supported for NumPy arrays. Received: x of type "
                             f"{type(x).__name__}; pass `validation_data` instead.")
        if validation_split and val_iterator is None:
            xs, ys, sws = self._prepare(x, y, sample_weight, class_weight)
            n_x, n_y = len(xs), len(ys)
            train, held = data.split_validation(xs + ys + (sws or []), validation_split)
            train_iterator = EpochIterator(
                ArrayAdapter((train[:n_x], train[n_x:n_x + n_y], train[n_x + n_y:] or None), batch_size or 32,
                             shuffle), steps_per_epoch, "x", "steps_per_epoch")
            val_iterator = EpochIterator(
                ArrayAdapter((held[:n_x], held[n_x:n_x + n_y], held[n_x + n_y:] or None),
                             validation_batch_size or batch_size or 32, False), validation_steps,
                "validation_data", "validation_steps")
        else:
            train_iterator = self._iterator(x, y, sample_weight, batch_size, shuffle, steps_per_epoch,
                                            steps_name="steps_per_epoch", class_weight=class_weight)
        try:
            return self._fit_loop(train_iterator, val_iterator, epochs, verbose, callbacks, initial_epoch,
                                  validation_freq)
        finally:
            train_iterator.close()
            if val_iterator is not None:
                val_iterator.close()

    def _fit_loop(self, iterator, val_iterator, epochs, verbose, callbacks, initial_epoch, validation_freq):
        cl = self._callbacks(callbacks, self._verbose(verbose), epochs, iterator.num_batches, with_history=True)
        self.stop_training = False
        self._initial_epoch = None
        cl.on_train_begin()
        if self._initial_epoch is not None:
            initial_epoch = self._initial_epoch
        epoch_logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            batches = iterator.epoch()
            if batches is None:
                break
            cl.on_epoch_begin(epoch)
            for step, (xs, ys, sws) in enumerate(batches):
                cl.on_train_batch_begin(step)
                logs = self.train_step(xs, ys, sws)
                cl.on_train_batch_end(step, logs)
                if self.stop_training:
                    break
            epoch_logs = dict(logs)
            if val_iterator is not None and (epoch + 1) % validation_freq == 0:
                cl.on_test_begin()  # as Keras: callbacks see the validation run (the progress bar stays quiet)
                val_logs = self._evaluate_epoch(val_iterator, cl)
                cl.on_test_end(val_logs)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cl.on_epoch_end(epoch, epoch_logs)
            if self.stop_training or iterator.ran_out:
                break
        cl.on_train_end(epoch_logs)
        return self.history

    def _empty_outputs(self, xs):
        """The model's outputs for 0 rows: one row of zeros run through the model, then cut to 0 rows."""
        # Some ops (convolutions, reshapes with -1) cannot size an empty batch; a row of zeros gives every
        # output its trailing shape, dynamic axes included.
        row = [np.zeros((1,) + np.shape(x)[1:], dtype=np.asarray(x).dtype) for x in xs]
        return [np.asarray(y)[:0] for y in self._forward(row, training=False)]

    def _empty_logs(self, xs, ys):
        """Logs for 0 rows: every loss tracker and metric in its reset state (Keras's 0 for an empty mean)."""
        if self._compiled.output_metrics is None:
            self._compiled._build_metrics(ys, self._empty_outputs(xs))
        results = [np.asarray(m.result()) for m in self.metrics]
        return {m.name: float(r) if r.ndim == 0 else r for m, r in zip(self.metrics, results)}

    @staticmethod
    def _no_batches(iterator):
        adapter = iterator.adapter
        if isinstance(adapter, ArrayAdapter):
            return adapter.arrays
        raise ValueError(f"`{iterator.what}` yielded no batches: there is nothing to compute on.")

    def _evaluate_epoch(self, iterator, cl):
        self.reset_metrics()
        batches = iterator.epoch()
        if batches is None:
            xs, ys, _ = self._no_batches(iterator)
            return self._empty_logs(xs, ys)
        logs = {}
        for step, (xs, ys, sws) in enumerate(batches):
            if cl:
                cl.on_test_batch_begin(step)
            logs = self.test_step(xs, ys, sws)
            if cl:
                cl.on_test_batch_end(step, logs)
        return logs

    def evaluate(self, x: DataSource | None = None, y: ArrayData | None = None, batch_size: int | None = None,
                 verbose: str | int = "auto", sample_weight: ArrayData | None = None, steps: int | None = None,
                 callbacks: list[Callback] | None = None, return_dict: bool = False) -> Results:
        """Loss and metrics on the given data (a scalar, a list in ``metrics_names`` order, or a dict)."""
        self._require_compiled("evaluate")
        iterator = self._iterator(x, y, sample_weight, batch_size, False, steps)
        try:
            cl = self._callbacks(callbacks, self._verbose(verbose), 1, iterator.num_batches, with_history=False)
            cl.on_test_begin()
            logs = self._evaluate_epoch(iterator, cl)
            cl.on_test_end(logs)
        finally:
            iterator.close()
        return self._format_logs(logs, return_dict)

    def _format_logs(self, logs, return_dict):
        if return_dict:
            return dict(logs)
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    def predict(self, x: DataSource, batch_size: int | None = None, verbose: str | int = "auto",
                steps: int | None = None, callbacks: list[Callback] | None = None) -> NestedArrays:
        """Model outputs for ``x``, computed in batches (structure as the model's outputs)."""
        iterator = self._iterator(x, None, None, batch_size, False, steps, need_y=False)
        try:
            cl = self._callbacks(callbacks, 0, 1, iterator.num_batches, with_history=False)
            cl.on_predict_begin()
            chunks = []
            for step, (xs, _, _) in enumerate(iterator.epoch() or ()):
                cl.on_predict_batch_begin(step)
                chunks.append(self._forward(xs, training=False))
                cl.on_predict_batch_end(step, {})
            cl.on_predict_end()
        finally:
            iterator.close()
        if not chunks:
            return self._pack_outputs(self._empty_outputs(self._no_batches(iterator)[0]))
        flat = [np.concatenate([c[i] for c in chunks], axis=0) for i in range(len(chunks[0]))]
        return self._pack_outputs(flat)

    def _pack_outputs(self, flat):
        struct = getattr(self, "_outputs_struct", None)
        if struct is None and hasattr(self, "functional"):
            struct = self.functional._outputs_struct
        if struct is None:
            return flat[0] if len(flat) == 1 else flat
        return tree.pack_sequence_as(struct, flat)

    def train_on_batch(self, x: ArrayData, y: ArrayData | None = None, sample_weight: ArrayData | None = None,
                       class_weight: Mapping[int, float] | None = None, return_dict: bool = False) -> Results:
        """One gradient step on one batch; returns the batch's loss and metrics."""
        self._require_compiled("train_on_batch")
        xs, ys, sws = self._prepare(x, y, sample_weight, class_weight)
        self.reset_metrics()
        return self._format_logs(self.train_step(xs, ys, sws), return_dict)

    def test_on_batch(self, x: ArrayData, y: ArrayData | None = None, sample_weight: ArrayData | None = None,
                      return_dict: bool = False) -> Results:
        """Loss and metrics of one batch, without updating weights."""
        self._require_compiled("test_on_batch")
        xs, ys, sws = self._prepare(x, y, sample_weight)
        self.reset_metrics()
        return self._format_logs(self.test_step(xs, ys, sws), return_dict)

    def predict_on_batch(self, x: ArrayData) -> NestedArrays:
        """Model outputs for one batch."""
        xs = data.flatten_by_names(x, self._x_names(x), "x")
        return self._pack_outputs(self._forward(xs, training=False))
