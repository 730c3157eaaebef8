"""fit/evaluate/predict on generators, iterators, PyDatasets and memory-mapped arrays."""
import io
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import kgraph
from kgraph import layers
from kgraph.trainers import data_adapter

BATCH = 64


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_digits()
    order = np.random.default_rng(0).permutation(len(data.target))
    return (data.data[order] / 16.0).astype("float32"), data.target[order]


def _model(seed=0, dropout=False):
    kgraph.utils.set_random_seed(seed)
    inputs = kgraph.Input(shape=(64,))
    h = layers.Dense(32, activation="relu")(inputs)
    if dropout:
        h = layers.Dropout(0.2)(h)
    model = kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _batches(x, y, start=0, stop=None):
    stop = len(x) if stop is None else stop
    for i in range(start, stop, BATCH):
        yield x[i:min(i + BATCH, stop)], y[i:min(i + BATCH, stop)]


def _looping(x, y):
    while True:
        yield from _batches(x, y)


class Digits(kgraph.utils.PyDataset):
    """Batches of arrays with a per-batch decode cost; records which indices were asked for, and where."""

    def __init__(self, x, y, delay=0.0, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.delay = x, y, delay
        self.asked, self.threads, self.passes = [], set(), 0

    def __len__(self):
        return -(-len(self.x) // BATCH)

    def __getitem__(self, index):
        self.asked.append(index)
        self.threads.add(threading.current_thread().name)
        time.sleep(self.delay)
        return self.x[index * BATCH:(index + 1) * BATCH], self.y[index * BATCH:(index + 1) * BATCH]

    def on_epoch_end(self):
        self.passes += 1


def _assert_same_weights(a, b):
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)  # same batches in the same order: bit-identical updates


def test_generator_and_prefetching_pydatasets_reach_the_weights_of_arrays(digits):
    x, y = digits
    steps = -(-len(x) // BATCH)
    reference = _model()
    reference.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    from_generator = _model()
    from_generator.fit(_looping(x, y), steps_per_epoch=steps, epochs=2, verbose=0)
    _assert_same_weights(reference, from_generator)
    threaded = Digits(x, y, delay=0.002, workers=2, max_queue_size=4)
    from_threads = _model()
    from_threads.fit(threaded, epochs=2, shuffle=False, verbose=0)
    _assert_same_weights(reference, from_threads)
    assert threaded.asked == list(range(steps)) * 2 and threaded.passes == 2
    assert threading.current_thread().name not in threaded.threads and len(threaded.threads) == 2
    in_processes = Digits(x, y, workers=2, use_multiprocessing=True)
    from_processes = _model()
    from_processes.fit(in_processes, epochs=2, shuffle=False, verbose=0)
    _assert_same_weights(reference, from_processes)
    assert in_processes.asked == [] and in_processes.passes == 2  # fetched in the workers' copies only


def test_learns_digits_from_a_generator_with_validation_pydataset(digits):
    x, y = digits
    split = 1400
    model = _model(seed=1)
    history = model.fit(_looping(x[:split], y[:split]), steps_per_epoch=split // BATCH, epochs=15, verbose=0,
                        validation_data=Digits(x[split:], y[split:], workers=2))
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert history.history["val_accuracy"][-1] >= 0.9, history.history["val_accuracy"]
    by_generator = model.evaluate(_batches(x[split:], y[split:]), verbose=0, return_dict=True)
    by_arrays = model.evaluate(x[split:], y[split:], batch_size=BATCH, verbose=0, return_dict=True)
    assert by_generator == pytest.approx(by_arrays, rel=1e-6)  # same batches; float64 means in another order
    np.testing.assert_array_equal(model.predict(Digits(x[split:], y[split:]), verbose=0),
                                  model.predict(x[split:], batch_size=BATCH, verbose=0))
    np.testing.assert_array_equal(model.predict((b[0] for b in _batches(x[:100], y[:100])), verbose=0),
                                  model.predict(x[:100], batch_size=BATCH, verbose=0))


def test_validation_generator_with_validation_steps(digits):
    x, y = digits
    model = _model()
    history = model.fit(Digits(x[:640], y[:640]), epochs=3, verbose=0,
                        validation_data=_looping(x[640:], y[640:]), validation_steps=2)
    third = slice(640 + 4 * BATCH, 640 + 6 * BATCH)  # each validation continues where the last one stopped
    expected = model.evaluate(x[third], y[third], batch_size=BATCH, verbose=0)
    assert history.history["val_loss"][-1] == pytest.approx(expected[0], rel=1e-6)
    with pytest.raises(ValueError, match="validation_steps"):
        model.fit(Digits(x[:640], y[:640]), epochs=2, verbose=0, validation_data=_batches(x[640:], y[640:]))


def test_generator_without_steps_runs_one_pass_then_needs_steps_per_epoch(digits):
    x, y = digits
    model = _model()
    history = model.fit(_batches(x, y, stop=640), epochs=1, verbose=0)
    assert model.optimizer.iterations == 10 and history.epoch == [0]
    with pytest.raises(ValueError, match=r"used up after one pass.*`steps_per_epoch`.*PyDataset"):
        model.fit(_batches(x, y, stop=640), epochs=2, verbose=0)
    assert model.optimizer.iterations == 20  # the first epoch ran in full before the error

    class Endless(Digits):
        num_batches = None

    with pytest.raises(ValueError, match="endless.*steps_per_epoch"):
        model.fit(Endless(x, y), epochs=1, verbose=0)
    endless = Endless(x, y)
    model.fit(endless, steps_per_epoch=3, epochs=2, verbose=0)
    assert endless.asked == [0, 1, 2, 3, 4, 5]


def test_steps_per_epoch_continues_across_epochs_a_pass_end_ends_one_and_a_short_generator_stops(digits):
    x, y = digits
    dataset = Digits(x[:640], y[:640])
    model = _model()
    history = model.fit(dataset, steps_per_epoch=4, epochs=3, shuffle=False, verbose=0)
    # As Keras: 4 + 4 + 2 batches, the pass ending the third epoch early (the next would start a new one).
    assert dataset.asked == list(range(10)) and dataset.passes == 1 and history.epoch == [0, 1, 2]
    history = model.fit(_looping(x, y), steps_per_epoch=2, initial_epoch=3, epochs=5, verbose=0)
    assert history.epoch == [3, 4] and model.optimizer.iterations == 10 + 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(_batches(x, y, stop=640), steps_per_epoch=4, epochs=5, verbose=0)
    assert history.epoch == [0, 1, 2]  # 10 batches: 4 + 4 + 2, then training stops
    assert any("ran out of data after 2 of `steps_per_epoch=4` batches" in str(w.message) for w in caught)


def test_shuffled_pydataset_and_shuffle_batch(digits):
    x, y = digits
    dataset = Digits(x[:640], y[:640])
    _model().fit(dataset, epochs=2, verbose=0)  # shuffle=True: the batch order changes every pass
    first, second = dataset.asked[:10], dataset.asked[10:]
    assert sorted(first) == sorted(second) == list(range(10)) and first != second != list(range(10))
    kgraph.utils.set_random_seed(3)
    batches = data_adapter.batches(10, 3, "batch")
    assert [len(b) for b in batches] == [3, 3, 3, 1] and batches[-1].tolist() == [9]
    assert all(np.array_equal(b, np.arange(b[0], b[0] + len(b))) for b in batches)
    assert sorted(b[0] for b in batches) == [0, 3, 6, 9]
    kgraph.utils.set_random_seed(0)
    model = _model()
    history = model.fit(x, y, batch_size=BATCH, epochs=2, shuffle="batch", verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]


def test_generator_batches_with_dicts_and_sample_weights_match_arrays():
    rng = np.random.default_rng(0)
    xa, xb = rng.normal(size=(96, 4)).astype("float32"), rng.normal(size=(96, 2)).astype("float32")
    y, weights = rng.normal(size=(96, 1)).astype("float32"), rng.uniform(size=96)

    def build():
        kgraph.utils.set_random_seed(0)
        a, b = kgraph.Input(shape=(4,), name="a"), kgraph.Input(shape=(2,), name="b")
        out = layers.Dense(1)(layers.Concatenate()([a, b]))
        model = kgraph.Model({"a": a, "b": b}, out)
        model.compile(optimizer="sgd", loss="mse")
        return model

    reference = build()
    reference.fit({"a": xa, "b": xb}, y, sample_weight=weights, batch_size=32, shuffle=False, verbose=0)
    model = build()
    model.fit(iter([({"a": xa[i:i + 32], "b": xb[i:i + 32]}, y[i:i + 32], weights[i:i + 32])
                    for i in range(0, 96, 32)]), verbose=0)
    _assert_same_weights(reference, model)


def test_keras_errors_for_arguments_that_batches_already_carry(digits):
    x, y = digits
    model = _model()
    with pytest.raises(ValueError, match=r"`batch_size` argument must not be specified.*Received: batch_size=32"):
        model.fit(_batches(x, y), batch_size=32, verbose=0)
    with pytest.raises(ValueError, match=r"`y` should not be passed.*targets should be included"):
        model.fit(Digits(x, y), y, verbose=0)
    with pytest.raises(ValueError, match="`validation_split` is only supported for NumPy arrays"):
        model.fit(_batches(x, y), validation_split=0.2, verbose=0)
    with pytest.raises(ValueError, match="`validation_batch_size` argument must not be specified"):
        model.fit(x, y, validation_data=Digits(x, y), validation_batch_size=8, verbose=0)
    with pytest.raises(ValueError, match="tuple of length 4"):
        model.fit(iter([(x[:8], y[:8], None, None)]), verbose=0)
    with pytest.raises(ValueError, match="`steps_per_epoch` must be a positive integer"):
        model.fit(_looping(x, y), steps_per_epoch=0, verbose=0)


class Interactive(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_is_open_ended_without_a_known_total(digits, monkeypatch):
    x, y = digits
    model = _model()
    stream = Interactive()
    monkeypatch.setattr(sys, "stdout", stream)
    model.fit(_batches(x, y, stop=640), epochs=1, verbose=1)
    live, final = stream.getvalue().split("\r")[1:-1], stream.getvalue().split("\r")[-1]
    assert live and all("/Unknown" in line and "━" not in line and "/step" in line for line in live)
    assert live[0].lstrip().startswith("1/Unknown")
    assert final.startswith("\x1b[1m10/10\x1b[0m") and final.endswith("\n")  # the count seen becomes the total
    stream.seek(0)
    stream.truncate()
    model.fit(Digits(x[:640], y[:640]), epochs=1, verbose=1)
    live = stream.getvalue().split("\r")[1:-1]
    assert live and all("/10" in line and "━" in line and "Unknown" not in line for line in live)


def test_memory_mapped_arrays_train_like_arrays(digits, tmp_path):
    x, y = digits
    np.save(tmp_path / "x.npy", x)
    mapped = np.load(tmp_path / "x.npy", mmap_mode="r")
    reference = _model()
    reference.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, validation_split=0.2)
    model = _model()
    model.fit(mapped, y, batch_size=BATCH, epochs=2, verbose=0, validation_split=0.2)
    _assert_same_weights(reference, model)
    np.testing.assert_array_equal(model.predict(mapped[::7], verbose=0), model.predict(x[::7], verbose=0))


CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import kgraph
    from kgraph import layers

    def peak_mb():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM")) / 1024

    model = kgraph.Sequential([kgraph.Input(shape=(256,)), layers.Dense(16, activation="relu"),
                               layers.Dense(4, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(np.zeros((256, 256), "float32"), np.zeros(256, "int64"), batch_size=128, verbose=0)
    before = peak_mb()
    x = np.load(sys.argv[1], mmap_mode="r")
    y = np.load(sys.argv[2], mmap_mode="r")
    for shuffle in (True, "batch", False):
        history = model.fit(x, y, batch_size=128, steps_per_epoch=4, epochs=2, shuffle=shuffle, verbose=0)
    loss = model.evaluate(x, y, batch_size=4096, steps=2, verbose=0)
    print(peak_mb() - before, history.history["loss"][-1], loss)
""")


def test_a_1gb_memory_map_trains_without_being_read_into_memory(tmp_path):
    rows, features = 2**20, 256  # 1 GiB of float32, a sparse file: only the rows written take disk space
    x = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype="float32", shape=(rows, features))
    y = np.lib.format.open_memmap(tmp_path / "y.npy", mode="w+", dtype="int64", shape=(rows,))
    for start in range(0, rows, rows // 8):
        x[start:start + 1024] = np.random.default_rng(start).normal(size=(1024, features))
        y[start:start + 1024] = np.arange(1024) % 4
    del x, y
    result = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "x.npy"), str(tmp_path / "y.npy")],
                            capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    assert result.returncode == 0, result.stderr
    growth, loss, evaluated = map(float, result.stdout.split())
    assert growth < 400, f"peak RSS grew by {growth:.0f} MB while training on a 1024 MB memory map"
    assert np.isfinite(loss) and np.isfinite(evaluated)


def test_an_error_in_a_worker_reaches_fit_and_the_workers_stop(digits):
    x, y = digits

    class Broken(Digits):
        def __getitem__(self, index):
            if index == 3:
                raise OSError("cannot read batch 3")
            return super().__getitem__(index)

    before = threading.active_count()
    with pytest.raises(OSError, match="cannot read batch 3"):
        _model().fit(Broken(x, y, workers=2), shuffle=False, verbose=0)
    assert threading.active_count() == before


class Batches:
    """An iterable of (x, y) batches that starts afresh each time it is iterated, as a torch DataLoader does."""

    def __init__(self, x, y, batch_size):
        self.x, self.y, self.batch_size, self.passes = x, y, batch_size, 0

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __iter__(self):
        self.passes += 1
        for i in range(0, len(self.x), self.batch_size):
            yield self.x[i:i + self.batch_size], self.y[i:i + self.batch_size]


def test_fit_takes_an_iterable_of_batches_anew_each_epoch():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((20, 3)).astype("float32"), rng.standard_normal((20, 1)).astype("float32")
    model = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    source = Batches(x, y, 8)
    history = model.fit(source, epochs=3, verbose=0)
    assert source.passes == 3 and len(history.history["loss"]) == 3
    assert int(np.asarray(model.optimizer.iterations)) == 9  # 3 batches an epoch
    assert np.isfinite(model.evaluate(Batches(x, y, 5), verbose=0))
    with pytest.raises(ValueError, match="iterable of batches"):
        model.fit(Batches(x, y, 8), y, verbose=0)


def test_fit_takes_a_torch_dataloader():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((24, 3)).astype("float32"), rng.standard_normal((24, 1)).astype("float32")
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                                         batch_size=8, shuffle=True)
    model = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(loader, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and int(np.asarray(model.optimizer.iterations)) == 6
    assert model.predict(loader, verbose=0).shape == (24, 1)


def test_a_pass_that_ends_mid_epoch_ends_that_epoch_as_in_keras():
    model = kgraph.Sequential([kgraph.Input((2,)), kgraph.layers.Dense(1)])
    model.compile("sgd", "mse")
    counts = []

    class Count(kgraph.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            counts.append(0)

        def on_train_batch_end(self, batch, logs=None):
            counts[-1] += 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(np.ones((10, 2)), np.ones((10, 1)), batch_size=1, epochs=4, steps_per_epoch=4, verbose=0,
                  callbacks=[Count()])
    assert counts == [4, 4, 2, 4]  # Keras 3.15's counts for the same call
    assert any("ran out of data" in str(w.message) for w in caught)
