"""Progress display: the ``Progbar`` line renderer and the ``ProgbarLogger`` callback."""
import math
import sys
import time

from kgraph.callbacks.callback import Callback


def _format_value(value):
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"
    return str(value)


def _format_time_per_unit(seconds, unit_name):
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit_name}"
    return f"{seconds * 1e6:.0f}us/{unit_name}"


def _format_eta(seconds):
    if seconds > 3600:
        return "%d:%02d:%02d" % (seconds // 3600, (seconds % 3600) // 60, seconds % 60)
    if seconds > 60:
        return "%d:%02d" % (seconds // 60, seconds % 60)
    return "%ds" % seconds


def _ordered(values):
    # Training quantities first, then validation ones, each alphabetically.
    return sorted(values.items(), key=lambda item: (item[0].startswith("val_"), item[0]))


class Progbar:
    """Renders ``12/32 ━━━━━━━━━━━━━━━━━━━━ 1s 3ms/step - loss: 0.3100``.

    target: total number of steps, or ``None`` if unknown.
    verbose: 1 for a live line, 2 for one line when finished.
    interval: least seconds between two live redraws.
    stream: defaults to the ``sys.stdout`` of each write. Live redraws use
        carriage returns only on an interactive stream; otherwise the line is
        written once, when finished.
    """

    def __init__(self, target, verbose=1, width=20, interval=0.05, unit_name="step", stream=None):
        self.target = target
        self.verbose = verbose
        self.width = width
        self.interval = interval
        self.unit_name = unit_name
        self._stream = stream
        self._values = {}
        self._start = time.time()
        self._last_update = 0.0
        self._time_after_first_step = None
        self._prev_width = 0

    @property
    def stream(self):
        return self._stream or sys.stdout

    def _dynamic(self):
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty()) or "ipykernel" in sys.modules

    def _time_per_unit(self, current, now):
        if not current:
            return 0.0
        if self._time_after_first_step is not None and current > 1:
            per_unit = (now - self._time_after_first_step) / (current - 1)
        else:
            per_unit = (now - self._start) / current
        if current == 1:
            self._time_after_first_step = now
        return per_unit

    def update(self, current, values=None, finalize=None):
        """Show step ``current`` with ``values`` (``{name: value}`` or pairs), displayed as given."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._values.update(dict(values or {}))
        now = time.time()
        per_unit = self._time_per_unit(current, now)
        if self.verbose == 1:
            dynamic = self._dynamic()
            if not finalize and (not dynamic or now - self._last_update < self.interval):
                return
            self._write_live(current, now, per_unit, finalize, dynamic)
        elif self.verbose == 2 and finalize:
            self._write_summary(current, now, per_unit)
        self._last_update = now

    def _metrics(self):
        return "".join(f" - {key}: {_format_value(value)}" for key, value in _ordered(self._values))

    def _write_live(self, current, now, per_unit, finalize, dynamic):
        if self.target:
            digits = int(math.log10(self.target)) + 1
            count = f"{current:{digits}d}/{self.target}"
            done = min(int(self.width * current / self.target), self.width)
            if dynamic:
                bar = f"\x1b[1m{count}\x1b[0m \x1b[32m{'━' * done}\x1b[0m\x1b[37m{'━' * (self.width - done)}\x1b[0m"
                visible = len(count) + 1 + self.width
            else:
                bar = f"{count} {'━' * self.width}"
                visible = len(bar)
        else:
            bar = "%7d/Unknown" % current
            visible = len(bar)
        if self.target and not finalize:
            elapsed = _format_eta(per_unit * (self.target - current))
        else:
            elapsed = f"{now - self._start:.0f}s"
        info = f" {elapsed} {_format_time_per_unit(per_unit, self.unit_name)}{self._metrics()}"
        width = visible + len(info)
        line = bar + info
        if dynamic:
            line = "\r" + line + " " * max(self._prev_width - width, 0)
        if finalize:
            line += "\n"
        self.stream.write(line)
        self.stream.flush()
        self._prev_width = width

    def _write_summary(self, current, now, per_unit):
        count = f"{current}/{self.target}" if self.target else f"{current}"
        line = f"{count} - {now - self._start:.0f}s - {_format_time_per_unit(per_unit, self.unit_name)}"
        self.stream.write(line + self._metrics() + "\n")
        self.stream.flush()


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
        self.progbar = Progbar(self.target, verbose=self.verbose)

    def _bar(self):
        if self.progbar is None:
            self.progbar = Progbar(self.target, verbose=self.verbose)
        return self.progbar

    def _update(self, batch, logs):
        self.seen = batch + 1
        if self.verbose == 1:
            self._bar().update(self.seen, logs, finalize=False)

    def _finalize(self, logs):
        if not self.verbose:
            return
        bar = self._bar()
        if bar.target is None:
            bar.target = self.seen
        bar.update(bar.target, logs, finalize=True)

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self._reset()
        if self.verbose and self.epochs > 1:
            print(f"Epoch {epoch + 1}/{self.epochs}", file=sys.stdout)

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
