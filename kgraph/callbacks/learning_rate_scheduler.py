"""LearningRateScheduler: set the learning rate at the start of every epoch."""
import inspect
import sys

import numpy as np

from kgraph.callbacks.callback import Callback


def _takes_two_arguments(fn):
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)


class LearningRateScheduler(Callback):
    """Set ``model.optimizer.learning_rate = schedule(epoch, lr)`` before each epoch.

    schedule: ``schedule(epoch, lr) -> float`` with a 0-based epoch and the
        current rate (a one-argument ``schedule(epoch)`` is accepted too).
    Adds the current ``learning_rate`` to each epoch's logs.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if not hasattr(optimizer, "learning_rate"):
            raise ValueError('Optimizer must have a "learning_rate" attribute.')
        current = float(optimizer.learning_rate)
        if _takes_two_arguments(self.schedule):
            learning_rate = self.schedule(epoch, current)
        else:
            learning_rate = self.schedule(epoch)
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (float, int, np.floating, np.integer)):
            raise ValueError(f"The output of the `schedule` function should be a float. Got: {learning_rate!r}")
        optimizer.learning_rate = float(learning_rate)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {float(learning_rate)}.",
                  file=sys.stdout)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(self.model.optimizer.learning_rate)
