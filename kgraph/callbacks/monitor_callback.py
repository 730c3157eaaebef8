"""MonitorCallback: shared logic of callbacks that watch one logged quantity."""
import operator
import warnings

from kgraph.callbacks.callback import Callback

# Monitored names containing any of these improve upwards in mode "auto".
_MAXIMIZED = ("acc", "auc", "precision", "recall")


class MonitorCallback(Callback):
    """Tracks ``monitor`` and decides what counts as an improvement.

    mode: ``"min"``, ``"max"`` or ``"auto"`` (max for names containing
        "acc", "auc", "precision" or "recall", else min).
    min_delta: the least change that counts as an improvement.
    """

    def __init__(self, monitor="val_loss", mode="auto", baseline=None, min_delta=0):
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(
                f"{type(self).__name__} mode '{mode}' is unknown, fallback to auto mode.", stacklevel=3
            )
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        self.best = baseline
        self.min_delta = abs(min_delta)
        self.monitor_op = None

    def _set_monitor_op(self):
        maximize = self.mode == "max" or (
            self.mode == "auto" and any(key in self.monitor for key in _MAXIMIZED)
        )
        self.monitor_op = operator.gt if maximize else operator.lt
        if not maximize:
            self.min_delta = -self.min_delta

    def _is_improvement(self, value, reference):
        if self.monitor_op is None:
            self._set_monitor_op()
        if reference is None:
            return True
        return bool(self.monitor_op(value - self.min_delta, reference))

    def get_monitor_value(self, logs, what):
        """``logs[monitor]``, or ``None`` with a warning listing the available keys."""
        value = (logs or {}).get(self.monitor)
        if value is None:
            warnings.warn(
                f"{what} conditioned on metric `{self.monitor}` which is not available. "
                f"Available metrics are: {','.join(list((logs or {}).keys()))}",
                stacklevel=3,
            )
        return value
