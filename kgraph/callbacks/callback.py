"""The ``Callback`` base class and ``CallbackList``, which dispatches hooks to many callbacks."""
import numpy as np


class Callback:
    """Base class for objects hooked into ``fit``/``evaluate``/``predict``.

    ``model`` and ``params`` (``{"verbose", "epochs", "steps"}``) are set by
    the trainer before training starts. Every hook does nothing by default.
    """

    def __init__(self):
        self.model = None
        self.params = {}

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    def on_batch_begin(self, batch, logs=None):
        """Alias run by ``on_train_batch_begin``."""

    def on_batch_end(self, batch, logs=None):
        """Alias run by ``on_train_batch_end``."""

    def on_epoch_begin(self, epoch, logs=None):
        """At the start of each training epoch (0-based ``epoch``)."""

    def on_epoch_end(self, epoch, logs=None):
        """At the end of each epoch; ``logs`` hold the epoch's metrics and ``val_`` metrics."""

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        """Before each batch of ``evaluate``."""

    def on_test_batch_end(self, batch, logs=None):
        """After each batch of ``evaluate``; ``logs`` hold the running metrics."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Before each batch of ``predict``."""

    def on_predict_batch_end(self, batch, logs=None):
        """After each batch of ``predict``."""

    def on_train_begin(self, logs=None):
        """At the start of ``fit``."""

    def on_train_end(self, logs=None):
        """At the end of ``fit``; ``logs`` are the last epoch's."""

    def on_test_begin(self, logs=None):
        """At the start of ``evaluate``."""

    def on_test_end(self, logs=None):
        """At the end of ``evaluate``."""

    def on_predict_begin(self, logs=None):
        """At the start of ``predict``."""

    def on_predict_end(self, logs=None):
        """At the end of ``predict``."""


def pythonify_logs(logs):
    """A new dict with NumPy scalars and 0-d arrays turned into Python floats."""
    result = {}
    for key, value in (logs or {}).items():
        if isinstance(value, np.ndarray) and value.ndim == 0 or isinstance(value, np.generic):
            value = value.item()
        result[key] = value
    return result


class CallbackList(Callback):
    """Runs each hook on every callback in order, with one shared logs dict per call.

    add_history, add_progbar: append a ``History`` / ``ProgbarLogger`` unless
        one is already in ``callbacks``.
    params: passed to ``set_params`` when given.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        super().__init__()
        from kgraph.callbacks.history import History
        from kgraph.callbacks.progbar import ProgbarLogger

        self.callbacks = list(callbacks or [])
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if add_progbar and not any(isinstance(c, ProgbarLogger) for c in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def __iter__(self):
        return iter(self.callbacks)

    def set_params(self, params):
        self.params = params
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model):
        self.model = model
        if self._history is not None:
            model.history = self._history
        for callback in self.callbacks:
            callback.set_model(model)

    def implements(self, *hooks):
        """Whether a callback has one of ``hooks`` of its own (on its class, or set on the instance as
        ``LambdaCallback`` sets them), or is no ``Callback`` at all: calling the others does nothing."""
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                return True
            for hook in hooks:
                if hook in vars(callback) or getattr(type(callback), hook) is not getattr(Callback, hook):
                    return True
        return False

    def _dispatch(self, hook, *args, logs=None):
        logs = pythonify_logs(logs)
        for callback in self.callbacks:
            getattr(callback, hook)(*args, logs)

    def on_batch_begin(self, batch, logs=None):
        self._dispatch("on_batch_begin", batch, logs=logs)

    def on_batch_end(self, batch, logs=None):
        self._dispatch("on_batch_end", batch, logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._dispatch("on_epoch_begin", epoch, logs=logs)

    def on_epoch_end(self, epoch, logs=None):
        self._dispatch("on_epoch_end", epoch, logs=logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._dispatch("on_train_batch_begin", batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self._dispatch("on_train_batch_end", batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._dispatch("on_test_batch_begin", batch, logs=logs)

    def on_test_batch_end(self, batch, logs=None):
        self._dispatch("on_test_batch_end", batch, logs=logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._dispatch("on_predict_batch_begin", batch, logs=logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._dispatch("on_predict_batch_end", batch, logs=logs)

    def on_train_begin(self, logs=None):
        self._dispatch("on_train_begin", logs=logs)

    def on_train_end(self, logs=None):
        self._dispatch("on_train_end", logs=logs)

    def on_test_begin(self, logs=None):
        self._dispatch("on_test_begin", logs=logs)

    def on_test_end(self, logs=None):
        self._dispatch("on_test_end", logs=logs)

    def on_predict_begin(self, logs=None):
        self._dispatch("on_predict_begin", logs=logs)

    def on_predict_end(self, logs=None):
        self._dispatch("on_predict_end", logs=logs)
