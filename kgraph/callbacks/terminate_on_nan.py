"""TerminateOnNaN: stop training as soon as a batch loss is NaN or infinite."""
import math
import sys

from kgraph.callbacks.callback import Callback


class TerminateOnNaN(Callback):
    """Set ``model.stop_training`` (or raise, with ``raise_error``) on a non-finite batch loss."""

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(float(loss)):
            return
        if self.raise_error:
            raise RuntimeError(
                f"NaN or Inf loss encountered at batch {batch}. Loss value: {loss}. Terminating training immediately."
            )
        print(f"Batch {batch}: Invalid loss, terminating training", file=sys.stdout)
        self.model.stop_training = True
