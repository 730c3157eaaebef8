"""CSVLogger: write every epoch's logs as a row of a CSV file."""
import csv
import os

import numpy as np

from kgraph.callbacks.callback import Callback


def _cell(value):
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.ndim > 0 or isinstance(value, (list, tuple)):
        return f'"[{", ".join(map(str, np.ravel(value)))}]"'
    return value


class CSVLogger(Callback):
    """Columns are ``epoch`` then the log keys (sorted) of the first epoch.

    When the first epoch has no ``val_`` keys, ``val_`` columns are still
    added (filled with ``NA``), as Keras does.
    append: add to an existing file instead of overwriting it (the header is
        written only if the file is empty).
    """

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = append
        self.keys = None
        self.writer = None
        self.csv_file = None
        self.append_header = True

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename, "r", newline="") as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            self.append_header = True
            mode = "w"
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs.keys())
            if self.keys and not any(key.startswith("val_") for key in self.keys):
                self.keys.extend([f"val_{key}" for key in self.keys])
        if self.writer is None:
            class Dialect(csv.excel):
                delimiter = self.sep

            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys, dialect=Dialect)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, _cell(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None
