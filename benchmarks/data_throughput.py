"""Training throughput of one model fed by arrays, a generator, PyDatasets and a memory map; peak RSS of a 1 GiB map.

The same MLP trains on the same data (batch 128, shuffle=False unless named)
from each source, the sources taking turns one epoch per round. Two figures per
source: "steady" is the batch size over the median wall time from one step's
end to the next (the data's wait plus the step; robust to a shared machine's
busy moments), "epoch" the best whole epoch (with each pass's start: worker
processes are started per pass). Ratios are to in-memory arrays. The PyDatasets
store the images as uint8 and pay a per-batch load cost: ``--load-ms`` of
waiting (a disk or network read) plus a decode to float32. With ``workers=2``
that cost runs ahead of training in threads (or processes) and is hidden.

Peak memory: a child process trains one full epoch over a 1 GiB float32 ``.npy``
file and reports how far its peak RSS (``VmHWM``) rose above what it was before
the data was opened: memory-mapped with ``mmap_mode="r"`` (rows read with
``preadv``), with ``mmap_mode="c"`` (indexed through the map, whose pages then
count as resident), and loaded whole with ``np.load``.

    python benchmarks/data_throughput.py [--rounds 10] [--load-ms 3] [--quick]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kgraph  # noqa: E402
from kgraph import layers  # noqa: E402

BATCH = 128
FEATURES = 784


def build():
    kgraph.utils.set_random_seed(0)
    inputs = kgraph.Input(shape=(FEATURES,))
    h = layers.Dense(256, activation="relu")(inputs)
    model = kgraph.Model(inputs, layers.Dense(10, activation="softmax")(layers.Dense(256, activation="relu")(h)))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


class Images(kgraph.utils.PyDataset):
    """uint8 images decoded to float32 per batch, after ``load_ms`` of simulated I/O."""

    def __init__(self, pixels, labels, load_ms, **kwargs):
        super().__init__(**kwargs)
        self.pixels, self.labels, self.load_ms = pixels, labels, load_ms

    def __len__(self):
        return -(-len(self.pixels) // BATCH)

    def __getitem__(self, index):
        time.sleep(self.load_ms / 1000)
        rows = slice(index * BATCH, (index + 1) * BATCH)
        return self.pixels[rows].astype(np.float32) * np.float32(1 / 255), self.labels[rows]


def generator(x, y):
    while True:
        for start in range(0, len(x), BATCH):
            yield x[start:start + BATCH], y[start:start + BATCH]


class StepClock(kgraph.callbacks.Callback):
    """Wall time between consecutive training steps: the data's wait plus the step itself."""

    def __init__(self):
        super().__init__()
        self.intervals, self._last = [], None

    def on_epoch_begin(self, epoch, logs=None):
        self._last = None  # the first step also pays for the pass's start (pool, first fetch)

    def on_train_batch_end(self, batch, logs=None):
        now = time.perf_counter()
        if self._last is not None:
            self.intervals.append(now - self._last)
        self._last = now


def sources(x, y, pixels, mapped, load_ms):
    steps = -(-len(x) // BATCH)
    return {
        "arrays in memory": lambda m, c: m.fit(x, y, batch_size=BATCH, shuffle=False, verbose=0, callbacks=c),
        "generator": lambda m, c: m.fit(generator(x, y), steps_per_epoch=steps, verbose=0, callbacks=c),
        f"PyDataset, workers=0, {load_ms:g} ms load": lambda m, c: m.fit(
            Images(pixels, y, load_ms, workers=0), shuffle=False, verbose=0, callbacks=c),
        f"PyDataset, workers=2 threads, {load_ms:g} ms load": lambda m, c: m.fit(
            Images(pixels, y, load_ms, workers=2), shuffle=False, verbose=0, callbacks=c),
        f"PyDataset, workers=2 processes, {load_ms:g} ms load": lambda m, c: m.fit(
            Images(pixels, y, load_ms, workers=2, use_multiprocessing=True), shuffle=False, verbose=0, callbacks=c),
        "memory map, shuffle=False": lambda m, c: m.fit(mapped, y, batch_size=BATCH, shuffle=False, verbose=0,
                                                        callbacks=c),
        'memory map, shuffle="batch"': lambda m, c: m.fit(mapped, y, batch_size=BATCH, shuffle="batch", verbose=0,
                                                          callbacks=c),
        "memory map, shuffle=True": lambda m, c: m.fit(mapped, y, batch_size=BATCH, shuffle=True, verbose=0,
                                                       callbacks=c),
    }


def throughput(n, rounds, load_ms, directory):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(n, FEATURES), dtype=np.uint8)
    x = pixels.astype(np.float32) * np.float32(1 / 255)
    y = rng.integers(0, 10, size=n)
    np.save(os.path.join(directory, "x.npy"), x)
    mapped = np.load(os.path.join(directory, "x.npy"), mmap_mode="r")
    runs = sources(x, y, pixels, mapped, load_ms)
    models = {name: build() for name in runs}
    for name, run in runs.items():
        run(models[name], [])  # warm-up epoch: caches, worker start, page cache
    clocks = {name: StepClock() for name in runs}
    best = {name: 0.0 for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run(models[name], [clocks[name]])
            best[name] = max(best[name], n / (time.perf_counter() - start))
    steady = {name: BATCH / np.median(clock.intervals) for name, clock in clocks.items()}
    base, base_best = steady["arrays in memory"], best["arrays in memory"]
    print(f"\nThroughput (samples/s of fit, MLP {FEATURES}-256-256-10, batch {BATCH}, {n} samples, "
          f"{rounds} rounds taking turns): median step to step, and best whole epoch")
    print(f"| {'source':<44} | {'steady':>7} | {'x arrays':>8} | {'epoch':>7} | {'x arrays':>8} |")
    print(f"|{'-' * 46}|{'-' * 9}|{'-' * 10}|{'-' * 9}|{'-' * 10}|")
    for name in runs:
        print(f"| {name:<44} | {steady[name]:>7,.0f} | {steady[name] / base:>7.2f}x "
              f"| {best[name]:>7,.0f} | {best[name] / base_best:>7.2f}x |")


PEAK = textwrap.dedent("""
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[3])
    import kgraph
    from kgraph import layers

    def peak_mb():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024

    model = kgraph.Sequential([kgraph.Input(shape=(%d,)), layers.Dense(16, activation="relu"),
                               layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(np.zeros((256, %d), "float32"), np.zeros(256, "int64"), batch_size=128, verbose=0)
    before = peak_mb()
    mode = None if sys.argv[2] == "none" else sys.argv[2]
    x = np.load(sys.argv[1], mmap_mode=mode)
    y = np.zeros(len(x), "int64")
    model.fit(x, y, batch_size=1024, shuffle="batch", verbose=0)
    print(peak_mb() - before)
""" % (FEATURES, FEATURES))


def peak_rss(directory, gib):
    path = os.path.join(directory, "big.npy")
    rows = int(gib * 2**30) // (FEATURES * 4)
    big = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, FEATURES))
    rng = np.random.default_rng(0)
    for start in range(0, rows, 65536):
        big[start:start + 65536] = rng.random((min(65536, rows - start), FEATURES), dtype=np.float32)
    big.flush()
    del big
    size_mb = os.path.getsize(path) / 2**20
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"\nPeak RSS growth over one epoch on a {size_mb:,.0f} MB float32 .npy (batch 1024, shuffle=\"batch\")")
    print(f"| {'how the file is opened':<48} | {'peak RSS growth':>15} |\n|{'-' * 50}|{'-' * 17}|")
    for mode, label in (("r", 'np.load(mmap_mode="r")'), ("c", 'np.load(mmap_mode="c"), indexed through the map'),
                        ("none", "np.load (read into memory)")):
        out = subprocess.run([sys.executable, "-c", PEAK, path, mode, root], capture_output=True, text=True,
                             check=True).stdout
        print(f"| {label:<48} | {float(out):>12,.0f} MB |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--load-ms", type=float, default=3.0, help="simulated I/O wait per PyDataset batch")
    parser.add_argument("--samples", type=int, default=3840)
    parser.add_argument("--gib", type=float, default=1.0, help="size of the memory-mapped file for peak RSS")
    parser.add_argument("--quick", action="store_true", help="one round, a quarter of the data, a 0.25 GiB file")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.samples, args.gib = 1, args.samples // 4, 0.25
    with tempfile.TemporaryDirectory() as directory:
        throughput(args.samples, args.rounds, args.load_ms, directory)
        peak_rss(directory, args.gib)


if __name__ == "__main__":
    main()
