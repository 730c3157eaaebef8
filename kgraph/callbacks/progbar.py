"""Progress display: the ``ProgbarLogger`` callback (``Progbar``, the line renderer, lives in ``kgraph.utils``)."""
from kgraph.callbacks.callback import Callback
from kgraph.utils.io_utils import print_msg
from kgraph.utils.progbar import Progbar

__all__ = ["Progbar", "ProgbarLogger"]


def _ordered(values):
    # Training quantities first, then validation ones, each alphabetically.
    return sorted(values.items(), key=lambda item: (item[0].startswith("val_"), item[0]))


class _LogsBar(Progbar):
    """The bar of ``fit``/``evaluate``/``predict``: quantities in ``_ordered``'s order, whenever each first came."""

    def _display_order(self):
        return _ordered(self._values)


class ProgbarLogger(Callback):
    """Prints progress from ``params["verbose"]``: 1 for a live bar, 2 for a line per epoch, 0 for nothing.

    Inside ``fit`` the validation pass stays silent; its ``val_`` results
    appear on the epoch's line.
    """

    def __init__(self):
        super().__init__()
        self.verbose = 1
        self.epochs = 1
        self.target = None
        self.seen = 0
        self.progbar = None
        self._in_fit = False

    def set_params(self, params):
        verbose = params.get("verbose", 1)
        self.verbose = 1 if verbose == "auto" else int(verbose)
        self.epochs = params.get("epochs", 1)
        self.target = params.get("steps")

    def _reset(self):
        # A fresh bar per epoch/pass: its clock starts now.
        self.seen = 0
        self.progbar = _LogsBar(self.target, verbose=self.verbose, stateless_metrics=())

    def _bar(self):
        if self.progbar is None:
            self.progbar = _LogsBar(self.target, verbose=self.verbose, stateless_metrics=())
        return self.progbar

    def _update(self, batch, logs):
        self.seen = batch + 1
        if self.verbose == 1:
            self._bar().update(self.seen, logs or {}, finalize=False)

    def _finalize(self, logs):
        if not self.verbose:
            return
        bar = self._bar()
        if bar.target is None:
            bar.target = self.seen
        bar.update(bar.target, logs or {}, finalize=True)

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._reset()
        if self.verbose and self.epochs > 1:
            print_msg(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        self._update(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._reset()

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._update(batch, logs)

    def on_test_end(self, logs=None):
        if not self._in_fit:
            self._finalize(logs)

    def on_predict_begin(self, logs=None):
        self._reset()

    def on_predict_batch_end(self, batch, logs=None):
        self._update(batch, None)

    def on_predict_end(self, logs=None):
        self._finalize(None)
