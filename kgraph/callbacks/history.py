"""History: records every epoch's logs; ``fit`` returns it."""
from kgraph.callbacks.callback import Callback


class History(Callback):
    """``history`` maps each log key to its per-epoch values; ``epoch`` lists the epochs seen."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self
