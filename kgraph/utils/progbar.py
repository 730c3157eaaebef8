"""``keras.utils.Progbar``: the progress line of ``fit``, ``evaluate``, ``predict`` and downloads."""
import math
import sys
import time

import numpy as np

from kgraph.utils.io_utils import print_msg


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


class Progbar:
    """Renders ``12/32 ━━━━━━━━━━━━━━━━━━━━ 1s 3ms/step - loss: 0.3100`` (``keras.utils.Progbar``).

    target: total number of steps, or ``None`` if unknown.
    width: the bar's width in characters.
    verbose: 0 for silence, 1 for a live line, 2 for one line when finished.
    interval: least seconds between two live redraws.
    stateful_metrics: names whose values are shown as given; every other value
        is averaged over the steps seen (weighted by the steps each covers).
    stateless_metrics: the reverse: only these names are averaged. Give one of
        the two at most; with neither, every value is averaged, as in Keras.
    unit_name: the unit of ``3ms/step``.
    stream: defaults to the ``sys.stdout`` of each write. Live redraws use
        carriage returns only on an interactive stream; otherwise the line is
        written once, when finished. Output goes to the ``kgraph`` logger
        instead while interactive logging is disabled.
    """

    def __init__(self, target, width=20, verbose=1, interval=0.05, stateful_metrics=None, stateless_metrics=None,
                 unit_name="step", stream=None):
        if stateful_metrics is not None and stateless_metrics is not None:
            raise ValueError("Only one of `stateful_metrics` or `stateless_metrics` can be provided: the first "
                             "lists the values shown as given, the second the values averaged over the steps.")
        self.target = target
        self.width = width
        self.verbose = verbose
        self.interval = interval
        self.unit_name = unit_name
        if stateless_metrics is not None:
            self.stateful_metrics, self.stateless_metrics = None, set(stateless_metrics)
        else:
            self.stateful_metrics, self.stateless_metrics = set(stateful_metrics or ()), None
        self._stream = stream
        self._values = {}  # name -> [sum, count]: insertion order is display order
        self._seen_so_far = 0
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

    def _averaged(self, name):
        if self.stateful_metrics is not None:
            return name not in self.stateful_metrics
        return name in self.stateless_metrics

    def _accumulate(self, current, values, finalize):
        items = values.items() if isinstance(values, dict) else values
        for name, value in items:
            if not self._averaged(name) or finalize:
                self._values[name] = [value, 1]
                continue
            steps = max(current - self._seen_so_far, 1)
            total = self._values.setdefault(name, [0.0, 0])
            total[0] = total[0] + value * steps
            total[1] += steps
        self._seen_so_far = current

    def update(self, current, values=None, finalize=None):
        """Show step ``current`` with ``values`` (``{name: value}`` or ``(name, value)`` pairs)."""
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._accumulate(current, values or (), finalize)
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

    def add(self, n, values=None):
        """Advance by ``n`` steps."""
        self.update(self._seen_so_far + n, values)

    def _display_order(self):
        """The ``(name, [sum, count])`` pairs in display order: first shown first, as Keras's bar shows them."""
        return self._values.items()

    def _metrics(self):
        shown = []
        for key, (total, count) in self._display_order():
            value = total if count == 1 else np.mean(total) / max(1, count)
            shown.append(f" - {key}: {_format_value(value)}")
        return "".join(shown)

    def _write(self, text):
        print_msg(text, line_break=False, stream=self._stream)

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
        self._write(line)
        self._prev_width = width

    def _write_summary(self, current, now, per_unit):
        count = f"{current}/{self.target}" if self.target else f"{current}"
        line = f"{count} - {now - self._start:.0f}s - {_format_time_per_unit(per_unit, self.unit_name)}"
        self._write(line + self._metrics() + "\n")
