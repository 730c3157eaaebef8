"""ReduceLROnPlateau: lower the learning rate when a monitored quantity stalls."""
import sys

import numpy as np

from kgraph.callbacks.monitor_callback import MonitorCallback


class ReduceLROnPlateau(MonitorCallback):
    """Multiply the learning rate by ``factor`` after ``patience`` epochs without improvement.

    cooldown: epochs to wait after a reduction before counting again.
    min_lr: the learning rate never goes below this.
    Adds the current ``learning_rate`` to each epoch's logs.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto", min_delta=1e-4,
                 cooldown=0, min_lr=0.0):
        super().__init__(monitor, mode, min_delta=min_delta)
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Received factor={factor}")
        self.factor = factor
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.min_lr = min_lr
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self.best = None
        self.cooldown_counter = 0
        self.wait = 0

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        optimizer = self.model.optimizer
        logs["learning_rate"] = float(optimizer.learning_rate)
        current = self.get_monitor_value(logs, "Learning rate reduction")
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(optimizer.learning_rate)
                # Compared in float32 as Keras stores the rate, so a rate that
                # already sits at min_lr is left alone.
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.learning_rate = new_lr
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.",
                              file=sys.stdout)
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
