"""ModelCheckpoint: save the model (or its weights) during training."""
import os
import sys
import warnings

import numpy as np

from kgraph.callbacks.monitor_callback import MonitorCallback
from kgraph.saving.saving_api import MODEL_SUFFIXES, WEIGHTS_SUFFIXES


class ModelCheckpoint(MonitorCallback):
    """Save with ``model.save(path)`` (or ``model.save_weights(path)``) every epoch or every N batches.

    filepath: may hold ``{epoch:02d}`` (1-based), ``{batch}`` and any log key,
        e.g. ``"ckpt-{epoch:02d}-{val_loss:.2f}.keras"``; it ends in ``.keras`` or ``.pkl`` (``.weights.h5`` or
        ``.pkl`` with ``save_weights_only``), checked here rather than after the first epoch.
    save_best_only: save only when ``monitor`` improves.
    save_freq: ``"epoch"`` or a number of batches.
    initial_value_threshold: a first "best" value to beat.
    """

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False, save_weights_only=False,
                 mode="auto", save_freq="epoch", initial_value_threshold=None):
        super().__init__(monitor, mode, baseline=initial_value_threshold)
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(save_freq, int)):
            raise ValueError(f"Unrecognized save_freq: {save_freq!r}. Expected save_freq are 'epoch' or integer values")
        self.filepath = os.fspath(filepath)
        suffixes = WEIGHTS_SUFFIXES if save_weights_only else MODEL_SUFFIXES
        if not self.filepath.endswith(suffixes):
            raise ValueError(f"The filepath provided must end in {' or '.join(f'`{s}`' for s in suffixes)}"
                             f"{' when save_weights_only=True' if save_weights_only else ''}. "
                             f"Received: filepath={self.filepath}")
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = None
        self._current_epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        if self._last_batch_seen is None or batch <= self._last_batch_seen:
            added = batch + 1  # a new epoch started: batches are 0-based
        else:
            added = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += added
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _file_path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as err:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". Reason: {err}') from err

    def _should_save(self, epoch, logs, filepath):
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}", file=sys.stdout)
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.", stacklevel=3)
            return True
        if np.ndim(current) > 0:
            warnings.warn(
                f"Can save best model only when `monitor` is a scalar value. Received: {current}. "
                "Falling back to `save_best_only=False`.",
                stacklevel=3,
            )
            return True
        best = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best} to {current:.5f}, "
                      f"saving model to {filepath}", file=sys.stdout)
            self.best = current
            return True
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best}", file=sys.stdout)
        return False

    def _save_model(self, epoch, batch, logs):
        logs = logs or {}
        filepath = self._file_path(epoch, batch, logs)
        if not self._should_save(epoch, logs, filepath):
            return
        if os.path.isdir(filepath):
            raise IOError(
                f"Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an existing "
                f"directory: {filepath}"
            )
        directory = os.path.dirname(filepath)
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(filepath)
        else:
            self.model.save(filepath)
