"""Trainer: compile / fit / evaluate / predict and the *_on_batch methods of Model, with Keras 3's contracts.

fit / evaluate / predict call ``train_step`` / ``test_step`` / ``predict_step`` on each batch, packed as Keras
packs it (``x``, ``(x,)``, ``(x, y)`` or ``(x, y, sample_weight)``), each part in the structure the user gave.
The default steps compute the loss with ``compute_loss`` and the metrics with ``compute_metrics``; a subclass
may override any of them, and write its own step with ``kgraph.GradientTape`` and ``self.optimizer.apply``.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import TYPE_CHECKING

import numpy as np

from kgraph import backend, ops, tree
from kgraph import metrics as metrics_module
from kgraph.backend.autodiff import GradientTape
from kgraph.trainers import data_adapter as data
from kgraph.trainers import replay as replayed_steps
from kgraph.trainers.data_adapter import pack_x_y_sample_weight, unpack_x_y_sample_weight
from kgraph.trainers.epoch_iterator import (
    ArrayAdapter,
    EpochIterator,
    GeneratorAdapter,
    IterableAdapter,
    PyDatasetAdapter,
    is_batch_iterable,
    is_batch_source,
    source_kind,
)
from kgraph.trainers.py_dataset import PyDataset
from kgraph.trainers.step_logs import batch_hooks, held_metrics, pythonify

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any, Literal, TypeAlias

    from kgraph.callbacks.callback import Callback
    from kgraph.callbacks.history import History
    from kgraph.metrics.metric import Metric
    from kgraph.optimizers.optimizer import Optimizer
    from kgraph.trainers.compile_utils import Logs, LossArg, LossWeights, MetricsArg
    from kgraph.trainers.data_adapter import ArrayData, Shuffle
    from kgraph.trainers.epoch_iterator import ArrayParts, Batch, DataSource

    # fit's `validation_data`: `(x_val, y_val)`, `(x_val, y_val, val_sample_weight)`, a PyDataset or a generator.
    ValidationData: TypeAlias = (tuple[ArrayData, ArrayData] | tuple[ArrayData, ArrayData, ArrayData | None]
                                 | PyDataset | Iterator[Batch])
    # evaluate / train_on_batch / test_on_batch: one value, a list in `metrics` order, or a dict by name.
    Results: TypeAlias = float | np.ndarray | list[float | np.ndarray] | dict[str, float | np.ndarray]
    # predict: arrays in the structure of the model's outputs.
    NestedArrays: TypeAlias = (np.ndarray | list["NestedArrays"] | tuple["NestedArrays", ...]
                               | dict[str, "NestedArrays"])


class Trainer:
    """The training loop that Model mixes in (Keras's ``compile``/``fit``/``evaluate``/``predict``)."""

    def __init__(self) -> None:
        self.optimizer = None
        self.compiled = False
        self.loss = None
        self.stop_training = False
        self.stop_evaluating = False
        self.stop_predicting = False
        self.history = None
        self._compile_config = None
        self._compile_loss = None
        self._compile_metrics = None
        self._loss_tracker = None

    # ----- compile ------------------------------------------------------------
    def compile(self, optimizer: str | Optimizer | dict[str, Any] = "rmsprop", loss: LossArg | None = None,
                loss_weights: LossWeights | None = None, metrics: MetricsArg | None = None,
                weighted_metrics: MetricsArg | None = None, run_eagerly: bool = False,
                steps_per_execution: int = 1, jit_compile: bool | Literal["auto"] = "auto",
                auto_scale_loss: bool = True) -> None:
        """Configure the optimizer, loss(es) and metrics; with no loss, `add_loss` terms or `compute_loss` train."""
        from kgraph import optimizers
        from kgraph.trainers.compile_utils import CompileLoss, CompileMetrics
        self.optimizer = optimizers.get(optimizer)
        if auto_scale_loss and self.dtype_policy.name == "mixed_float16" and \
                not isinstance(self.optimizer, optimizers.LossScaleOptimizer):
            # As Keras: a mixed_float16 model trains with dynamic loss scaling, so float16 gradients do not vanish.
            self.optimizer = optimizers.LossScaleOptimizer(self.optimizer, name="loss_scale_optimizer")
        output_names = self._known_output_names()
        self._compile_loss = CompileLoss(loss, loss_weights, output_names) if loss is not None else None
        self._compile_metrics = None
        if metrics is not None or weighted_metrics is not None:
            self._compile_metrics = CompileMetrics(metrics, weighted_metrics, output_names, self._compile_loss)
        self.loss = loss
        self._loss_tracker = metrics_module.Mean(name="loss")
        self.run_eagerly, self.jit_compile, self.steps_per_execution = run_eagerly, jit_compile, steps_per_execution
        self._compile_config = {"loss": loss, "loss_weights": loss_weights, "metrics": metrics,
                                "weighted_metrics": weighted_metrics}
        self.compiled = True
        self.stop_training = False
        replayed_steps.forget(self)

    def _known_output_names(self):
        """The output names of a graph model (None for a subclassed model: its outputs are seen at first use)."""
        try:
            names = getattr(self, "output_names", None)
        except ValueError:  # a Sequential with no layers yet
            return None
        return list(names) if names else None

    def _graph_outputs(self):
        """The KerasTensors of a Functional or built Sequential model's outputs, else None."""
        outputs = getattr(self, "_outputs_struct", None)
        if outputs is None and getattr(self, "_last_output", None) is not None:
            outputs = self.functional._outputs_struct
        return outputs

    def get_compile_config(self):
        """The arguments ``compile`` was given, serialized as Keras writes them (None before ``compile``)."""
        if not self.compiled or self._compile_config is None:
            return None
        from kgraph.saving.keras_compile import default_compile_config
        return default_compile_config(self)

    def compile_from_config(self, config):
        """``compile`` from ``get_compile_config()`` output (Keras's loading calls it; a subclass may override
        it for a ``compile`` of its own)."""
        if type(self).compile is not Trainer.compile:
            warnings.warn(f"`compile()` was not called as part of loading model '{self.name}': its class defines a "
                          "`compile()` of its own. Override `compile_from_config()` to call it from the saved "
                          "config, or call `compile()` after loading.", stacklevel=2)
            return
        from kgraph.saving.keras_compile import default_compile_from_config
        default_compile_from_config(self, config)

    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"You must call `compile()` on model '{self.name}' before calling `{what}()`.")

    # ----- metrics ------------------------------------------------------------
    @property
    def metrics(self) -> list[Metric]:
        """Loss tracker, compiled metrics, per-output loss trackers, then metrics held by the model and its layers."""
        found = []
        if self.compiled:
            found.append(self._loss_tracker)
            if self._compile_metrics is not None:
                found.extend(self._compile_metrics.metrics)
            if self._compile_loss is not None:
                found.extend(self._compile_loss.metrics)
        found.extend(held_metrics(self, skip=self._loss_tracker))
        for layer in self._flatten_layers(include_self=False):
            if not isinstance(layer, Trainer):
                found.extend(held_metrics(layer))
        return found

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def get_metrics_result(self) -> Logs:
        """The results of ``self.metrics`` by name (a metric whose result is a dict adds its entries)."""
        results = {}
        for metric in self.metrics:
            result = metric.result()
            if isinstance(result, dict):
                results.update(result)
            else:
                results[metric.name] = result
        return results

    # ----- loss, metrics and steps --------------------------------------------
    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None,
                     training: bool = True) -> np.ndarray:
        """The total loss, a 0-d array: the compiled loss plus every loss in ``self.losses``, each summed."""
        del x, training  # the default loss depends on neither
        losses = []
        if self._compile_loss is not None:
            loss = self._compile_loss(y, y_pred, sample_weight)
            if loss is not None:
                losses.append(loss)
        for loss in self.losses:
            if not np.issubdtype(np.dtype(getattr(loss, "dtype", float)), np.floating):
                loss = ops.cast(loss, backend.floatx())
            losses.append(ops.sum(loss))
        if not losses:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        return functools.reduce(ops.add, losses)

    def _compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        # As Keras: positional, so an override may name its parameters freely; one written before Keras 3.3
        # has no `training` argument.
        if _takes_training(getattr(self.compute_loss, "__func__", self.compute_loss)):
            return self.compute_loss(x, y, y_pred, sample_weight, training=training)
        return self.compute_loss(x, y, y_pred, sample_weight)

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> Logs:
        """Update the compiled metrics with one batch; returns ``get_metrics_result()``."""
        del x  # the compiled metrics compare targets with predictions only
        self._update_compiled_metrics(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def _update_compiled_metrics(self, y, y_pred, sample_weight):
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)

    def train_step(self, data: Batch) -> Logs:
        """One gradient step on one batch; returns the logs (the metrics' results by name)."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)  # (fit replays it: kgraph.trainers.replay)
        return self._apply_gradients(x, y, sample_weight, *self._loss_and_gradients(x, y, sample_weight)[1:])

    def _loss_and_gradients(self, x, y, sample_weight):
        """Forward pass, loss, gradients: ``(scaled loss, loss, y_pred, trainable variables, gradients)``."""
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
            scaled = self.optimizer.scale_loss(loss)  # a LossScaleOptimizer's (mixed_float16), else the loss
        variables = self.trainable_weights  # after the forward pass, which builds a model given no input shape
        return scaled, loss, y_pred, variables, tape.gradient(scaled, variables) if variables else None

    def _apply_gradients(self, x, y, sample_weight, loss, y_pred, variables, grads, logs=True):
        """The rest of ``train_step``: the loss tracker, the optimizer's update, the metrics. ``logs=False``
        (``fit``'s replayed step where no callback reads a batch's logs): the metrics are updated, their results
        left to be read when wanted (the logs are None)."""
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        if variables:
            self.optimizer.apply(grads, variables)
        else:
            warnings.warn("The model does not have any trainable weights.", stacklevel=3)
        if not logs:
            return self._update_compiled_metrics(y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def test_step(self, data: Batch) -> Logs:
        """Loss and metrics of one batch, without updating weights; returns the logs."""
        x, y, sample_weight = unpack_x_y_sample_weight(data)  # (evaluate replays it: kgraph.trainers.replay)
        return self._record_test(x, y, sample_weight, *self._test_loss(x, y, sample_weight))

    def _test_loss(self, x, y, sample_weight):
        """``test_step``'s forward pass in inference mode and its loss: ``(loss, y_pred)``."""
        y_pred = self(x, training=False)
        return self._compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=False), y_pred

    def _record_test(self, x, y, sample_weight, loss, y_pred, logs=True):
        """The rest of ``test_step``: the loss tracker and the metrics (``logs=False``: as ``_apply_gradients``)."""
        self._loss_tracker.update_state(loss, sample_weight=_batch_size(x))
        if not logs:
            return self._update_compiled_metrics(y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight=sample_weight)

    def predict_step(self, data: Batch) -> Any:
        """The model's outputs for one batch."""
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def _symbolic_build(self, data):
        """Match the compiled loss and metrics to the outputs before the first step, as Keras does."""
        # So that `self.metrics` already lists every compiled metric to a custom `train_step`.
        loss_unbuilt = self._compile_loss is not None and not self._compile_loss.built
        x, y, _ = unpack_x_y_sample_weight(data)
        # Without targets (a custom step that makes its own), the metrics are matched to the outputs' structure,
        # so that a custom step updating every metric of `self.metrics` finds the compiled ones, as in Keras.
        metrics_unbuilt = self._compile_metrics is not None and not self._compile_metrics.built
        if not (loss_unbuilt or metrics_unbuilt):
            return
        y_pred = self._graph_outputs()
        if y_pred is None:
            y_pred = self._empty_outputs(x) if _batch_size(x) == 0 else self(x, training=False)
        if loss_unbuilt:
            self._compile_loss.build(y, y_pred)
        if metrics_unbuilt:
            self._compile_metrics.build(y_pred if y is None else y, y_pred)

    def _empty_outputs(self, x, step=None):
        """The outputs for 0 rows: one row of zeros run through the model, then cut to 0 rows."""
        # Some ops (convolutions, reshapes with -1) cannot size an empty batch; a row of zeros gives every
        # output its trailing shape, dynamic axes included.
        row = tree.map_structure(lambda a: np.zeros((1,) + np.shape(a)[1:], dtype=np.asarray(a).dtype), x)
        outputs = step(pack_x_y_sample_weight(row)) if step else self(row, training=False)
        return tree.map_structure(lambda a: np.asarray(a)[:0], outputs)

    # ----- data --------------------------------------------------------------------
    def _standardize_x(self, x):
        """``x`` as arrays in its own structure; a graph model checks it against its inputs (names, count) first."""
        names = getattr(self, "input_names", None)
        if not names or getattr(self, "_outputs_struct", None) is None:
            return data.as_arrays(x, "x")
        if isinstance(self._inputs_struct, dict):
            names = sorted(self._inputs_struct)
        flat = data.flatten_by_names(x, names, "x")
        if isinstance(x, dict):
            return dict(zip(names, flat))
        if isinstance(x, (list, tuple)) and len(x) == len(flat) and all(map(data.is_array, x)):
            return type(x)(flat)
        return flat[0] if len(flat) == 1 else flat

    def _array_parts(self, x, y, sample_weight):
        """``(x, y, sample_weight)`` as arrays in the user's structures, all with the same number of samples."""
        names = self._known_output_names()
        count = len(names) if names else None
        x = self._standardize_x(x)
        y = data.as_arrays(y, "y", count)
        sample_weight = data.as_arrays(sample_weight, "sample_weight", count)
        data.check_cardinality({"x": tree.flatten(x), "y": tree.flatten(y) if y is not None else [],
                                "sample_weight": tree.flatten(sample_weight) if sample_weight is not None else []})
        return x, y, sample_weight

    @staticmethod
    def _with_class_weight(parts, class_weight):
        """``parts`` with ``class_weight`` turned into per-sample weights (multiplying any given ones)."""
        x, y, sample_weight = parts
        if class_weight is None:
            return parts
        if y is None or len(tree.flatten(y)) != 1:
            raise ValueError("`class_weight` is only supported for Models with a single output.")
        weights = data.class_weights_to_sample_weights(tree.flatten(y)[0], class_weight)
        return x, y, weights if sample_weight is None else sample_weight * weights

    def _standardize_batch(self, batch, class_weight=None):
        parts = self._array_parts(*unpack_x_y_sample_weight(batch))
        return pack_x_y_sample_weight(*self._with_class_weight(parts, class_weight))

    def _iterator(self, x, y, sample_weight, batch_size, shuffle, steps, what="x", steps_name="steps",
                  batch_size_name="batch_size", class_weight=None):
        """An EpochIterator over ``x`` (arrays, a generator/iterator or a PyDataset)."""
        if not is_batch_source(x):
            parts = self._with_class_weight(self._array_parts(x, y, sample_weight), class_weight)
            return EpochIterator(ArrayAdapter(parts, batch_size or 32, shuffle), steps, what, steps_name)
        kind = source_kind(x)
        for name, value, part in (("y", y, "targets"), ("sample_weight", sample_weight, "sample weights")):
            if value is not None:
                raise ValueError(f"When providing `{what}` as a {kind}, `{name}` should not be passed. "
                                 f"Instead, the {part} should be included as part of the {kind}.")
        # As Keras, a PyDataset's batches are its own: `batch_size` is ignored.
        if batch_size is not None and not (isinstance(x, PyDataset) and batch_size_name == "batch_size"):
            raise ValueError(f"The `{batch_size_name}` argument must not be specified for the given input type: "
                             f"a {kind} yields whole batches. Received: {batch_size_name}={batch_size!r}, "
                             f"{what} of type {type(x).__name__}")
        standardize = functools.partial(self._standardize_batch, class_weight=class_weight)
        if isinstance(x, PyDataset):
            adapter = PyDatasetAdapter(x, shuffle, standardize)
        elif is_batch_iterable(x):
            adapter = IterableAdapter(x, standardize)
        else:
            adapter = GeneratorAdapter(x, standardize)
        return EpochIterator(adapter, steps, what, steps_name)

    def _fit_iterators(self, x, y, sample_weight, class_weight, batch_size, shuffle, steps_per_epoch,
                       validation_split, validation_data, validation_steps, validation_batch_size):
        """The training and validation EpochIterators of ``fit`` (the second None without validation)."""
        val_batch_size = validation_batch_size or batch_size or 32
        if validation_data is not None and is_batch_source(validation_data):
            val = self._iterator(validation_data, None, None, validation_batch_size, False, validation_steps,
                                 "validation_data", "validation_steps", "validation_batch_size")
        elif validation_data is not None:
            # As Keras's unpack_x_y_sample_weight: a tuple (or list) of 1 to 3 parts, anything else is x alone.
            given = tuple(validation_data) if isinstance(validation_data, list) else validation_data
            given = given if isinstance(given, tuple) else (given,)
            if len(given) not in (1, 2, 3):
                raise ValueError("`validation_data` should be `x_val`, `(x_val, y_val)` or "
                                 f"`(x_val, y_val, val_sample_weight)`. Received a tuple of {len(given)} parts")
            parts = self._array_parts(*(given + (None, None))[:3])
            val = EpochIterator(ArrayAdapter(parts, val_batch_size, False), validation_steps, "validation_data",
                                "validation_steps")
        elif validation_split and is_batch_source(x):
            raise ValueError("`validation_split` is only supported for NumPy arrays. Received: x of type "
                             f"{type(x).__name__}; pass `validation_data` instead.")
        elif validation_split:
            # As Keras: the last samples are held out before shuffling; class weights apply to training only.
            parts = self._array_parts(x, y, sample_weight)
            train, held = data.split_validation(tree.flatten(parts), validation_split)
            train = self._with_class_weight(tree.pack_sequence_as(parts, train), class_weight)
            val = EpochIterator(ArrayAdapter(tree.pack_sequence_as(parts, held), val_batch_size, False),
                                validation_steps, "validation_data", "validation_steps")
            return EpochIterator(ArrayAdapter(train, batch_size or 32, shuffle), steps_per_epoch, "x",
                                 "steps_per_epoch"), val
        else:
            val = None
        return self._iterator(x, y, sample_weight, batch_size, shuffle, steps_per_epoch,
                              steps_name="steps_per_epoch", class_weight=class_weight), val

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
        ``kgraph.utils.PyDataset`` (whose own batches make ``batch_size``
        irrelevant); ``validation_data`` likewise.
        """
        self._require_compiled("fit")
        iterator, val_iterator = self._fit_iterators(
            x, y, sample_weight, class_weight, batch_size, shuffle, steps_per_epoch, validation_split,
            validation_data, validation_steps, validation_batch_size)
        try:
            return self._fit_loop(iterator, val_iterator, epochs, verbose, callbacks, initial_epoch,
                                  validation_freq)
        finally:
            iterator.close()
            if val_iterator is not None:
                val_iterator.close()

    def _fit_loop(self, iterator, val_iterator, epochs, verbose, callbacks, initial_epoch, validation_freq):
        from kgraph.config import max_epochs  # deferred: the config module sits above the trainers
        if max_epochs() and max_epochs() < epochs:
            warnings.warn(f"Limiting epochs to {max_epochs()}", stacklevel=3)
            epochs = max_epochs()
        cl = self._callbacks(callbacks, self._verbose(verbose), epochs, iterator.num_batches, with_history=True)
        self.stop_training = False
        self._initial_epoch = None
        cl.on_train_begin()
        if self._initial_epoch is not None:
            initial_epoch = self._initial_epoch
        training_logs, train_step = {}, replayed_steps.replayed_train_step(self)  # or its replay: the same steps
        on_begin, on_end, quiet = batch_hooks(cl, train_step, "train")
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            batches = iterator.epoch()
            if batches is None:
                break
            cl.on_epoch_begin(epoch)
            logs = self._run_steps(train_step, batches, on_begin, on_end, "stop_training", quiet)
            epoch_logs = dict(logs) if quiet else self._metrics_result_or_logs(logs)
            if val_iterator is not None and (epoch + 1) % validation_freq == 0:
                cl.on_test_begin()  # as Keras: callbacks see the validation run (the progress bar stays quiet)
                val_logs = self._evaluate_epoch(val_iterator, cl)
                cl.on_test_end(val_logs)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cl.on_epoch_end(epoch, epoch_logs)
            training_logs = epoch_logs
            if self.stop_training or iterator.ran_out:
                break
        if epochs > 0 and self.optimizer is not None and self.optimizer.built:
            self.optimizer.finalize_variable_values(self.trainable_weights)  # as Keras: the EMA's averages, if kept
        cl.on_train_end(training_logs)
        return self.history

    def _run_steps(self, step, batches, on_batch_begin, on_batch_end, stop_flag, quiet=False):
        """Run ``step`` on each batch between the callbacks' hooks; returns the last logs (Python values).
        ``quiet``: ``step`` is a ``ReplayedStep`` and no hook reads a batch's logs, so the metrics' results are
        read once, after the last batch (the same values: each step's logs are ``get_metrics_result()``)."""
        logs = {}
        for index, batch in enumerate(batches):
            if index == 0:
                self._symbolic_build(batch)
            on_batch_begin(index)
            if quiet:
                step(batch, logs=False)
                logs = None
            else:
                logs = pythonify(step(batch))
            on_batch_end(index, logs)
            if getattr(self, stop_flag):
                break
        return pythonify(self.get_metrics_result()) if logs is None else logs

    def _metrics_result_or_logs(self, logs):
        """As Keras: the metrics' current results when the step's logs name the same metrics, else the logs."""
        results = pythonify(self.get_metrics_result())
        return results if set(results) == set(logs) else dict(logs)

    def _evaluate_epoch(self, iterator, cl):
        self.reset_metrics()
        batches = iterator.epoch()
        if batches is None:
            return self._empty_logs(iterator)
        self.stop_evaluating = False
        step = replayed_steps.replayed_test_step(self)  # or its replay: the same steps
        on_begin, on_end, quiet = batch_hooks(cl, step, "test")
        logs = self._run_steps(step, batches, on_begin, on_end, "stop_evaluating", quiet)
        return dict(logs) if quiet else self._metrics_result_or_logs(logs)

    def _empty_logs(self, iterator):
        """Logs for 0 rows: every loss tracker and metric in its reset state (Keras's 0 for an empty mean)."""
        self._symbolic_build(pack_x_y_sample_weight(*self._no_batches(iterator)))
        return pythonify(self.get_metrics_result())

    @staticmethod
    def _no_batches(iterator) -> ArrayParts:
        adapter = iterator.adapter
        if isinstance(adapter, ArrayAdapter):
            return adapter.arrays
        raise ValueError(f"`{iterator.what}` yielded no batches: there is nothing to compute on.")

    def evaluate(self, x: DataSource | None = None, y: ArrayData | None = None, batch_size: int | None = None,
                 verbose: str | int = "auto", sample_weight: ArrayData | None = None, steps: int | None = None,
                 callbacks: list[Callback] | None = None, return_dict: bool = False) -> Results:
        """Loss and metrics on the given data (a scalar, a list in ``metrics`` order, or a dict)."""
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
        """A dict, or as Keras: the values in ``metrics`` order, then other keys sorted; one value alone."""
        if return_dict:
            return dict(logs)
        # Keras matches a compiled metric by its own name, so one logged with an output prefix sorts later.
        base_names = self._compile_metrics.base_names if self._compile_metrics is not None else {}
        names = [base_names.get(id(m), m.name) for m in self.metrics]
        results = [logs[name] for name in names if name in logs]
        results += [logs[key] for key in sorted(logs) if key not in names]
        return results[0] if len(results) == 1 else results

    def predict(self, x: DataSource, batch_size: int | None = None, verbose: str | int = "auto",
                steps: int | None = None, callbacks: list[Callback] | None = None) -> NestedArrays:
        """The outputs of ``predict_step`` for ``x``, batch by batch, concatenated (structure as the outputs)."""
        iterator = self._iterator(x, None, None, batch_size, False, steps)
        try:
            cl = self._callbacks(callbacks, self._verbose(verbose), 1, iterator.num_batches, with_history=False)
            self.stop_predicting = False
            cl.on_predict_begin()
            outputs, predict_step = [], replayed_steps.replayed_predict_step(self)  # or its replay: the same steps
            for step, batch in enumerate(iterator.epoch() or ()):
                cl.on_predict_batch_begin(step)
                batch_outputs = tree.map_structure(np.asarray, predict_step(batch))
                outputs.append(batch_outputs)
                cl.on_predict_batch_end(step, {"outputs": batch_outputs})
                if self.stop_predicting:
                    break
            cl.on_predict_end()
        finally:
            iterator.close()
        if not outputs:
            return self._empty_outputs(self._no_batches(iterator)[0], self.predict_step)
        flat = [tree.flatten(batch_outputs) for batch_outputs in outputs]
        return tree.pack_sequence_as(outputs[0], [np.concatenate(parts, axis=0) for parts in zip(*flat)])

    def train_on_batch(self, x: ArrayData, y: ArrayData | None = None, sample_weight: ArrayData | None = None,
                       class_weight: Mapping[int, float] | None = None, return_dict: bool = False) -> Results:
        """One ``train_step`` on one batch; returns the batch's loss and metrics."""
        self._require_compiled("train_on_batch")
        # As Keras: the step gets all three parts, `(x, y, sample_weight)`, None where not given.
        batch = self._with_class_weight(self._array_parts(x, y, sample_weight), class_weight)
        self._symbolic_build(batch)
        self.reset_metrics()
        return self._format_logs(pythonify(self.train_step(batch)), return_dict)

    def test_on_batch(self, x: ArrayData, y: ArrayData | None = None, sample_weight: ArrayData | None = None,
                      return_dict: bool = False) -> Results:
        """One ``test_step`` on one batch: its loss and metrics, without updating weights."""
        self._require_compiled("test_on_batch")
        batch = self._array_parts(x, y, sample_weight)
        self._symbolic_build(batch)
        self.reset_metrics()
        return self._format_logs(pythonify(self.test_step(batch)), return_dict)

    def predict_on_batch(self, x: ArrayData) -> NestedArrays:
        """The outputs of ``predict_step`` for one batch."""
        return tree.map_structure(np.asarray, self.predict_step((self._standardize_x(x),)))


@functools.lru_cache(maxsize=None)
def _takes_training(compute_loss):
    return "training" in inspect.signature(compute_loss).parameters


def _batch_size(x):
    if type(x) is np.ndarray and x.ndim:  # one input array, the usual case: read at every step
        return x.shape[0]
    return int(np.shape(next(a for a in tree.flatten(x) if a is not None))[0])
