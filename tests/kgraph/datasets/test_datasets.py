"""``kgraph.datasets``: each ``load_data`` on small files in Keras's exact on-disk formats.

The files sit in a temporary ``KERAS_HOME`` cache under Keras's names; each module's ``FILE_HASH`` is set to the
hash of the small file, so ``get_file`` finds the cached file valid (or, where the test serves it from a local
HTTP server, downloads and verifies it). No test touches the network.
"""
import gzip
import hashlib
import inspect
import io
import json
import os
import pickle
import struct
import tarfile

import numpy as np
import pytest

from kgraph import datasets
from kgraph.datasets import (
    boston_housing,
    california_housing,
    cifar10,
    cifar100,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)
from tests.kgraph.utils.test_get_file import serving


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    folder = tmp_path / "keras" / "datasets"
    folder.mkdir(parents=True)
    return folder


def _place(monkeypatch, cache, module, name, data, hash_attr="FILE_HASH"):
    """Put ``data`` in the cache as ``name`` with ``module``'s expected hash made its hash."""
    (cache / name).write_bytes(data)
    digest = hashlib.md5(data) if len(getattr(module, hash_attr)) == 32 else hashlib.sha256(data)
    monkeypatch.setattr(module, hash_attr, digest.hexdigest())


def _npz(**arrays):
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _ragged(*sequences):
    array = np.empty(len(sequences), dtype=object)
    for i, sequence in enumerate(sequences):
        array[i] = list(sequence)
    return array


def _keras_order(n, rng):
    indices = np.arange(n)
    rng.shuffle(indices)
    return list(indices)


def test_the_namespace_has_keras_modules():
    assert datasets.__all__ == ["boston_housing", "california_housing", "cifar10", "cifar100", "fashion_mnist",
                                "imdb", "mnist", "reuters"]
    assert reuters.get_label_names()[:3] == ("cocoa", "grain", "veg-oil") and len(reuters.get_label_names()) == 46


KERAS_SIGNATURES = {  # inspect.signature of Keras 3.15.1's functions
    "boston_housing.load_data": "(path='boston_housing.npz', test_split=0.2, seed=113)",
    "california_housing.load_data": "(version='large', path='california_housing.npz', test_split=0.2, seed=113)",
    "cifar10.load_data": "()",
    "cifar100.load_data": "(label_mode='fine')",
    "fashion_mnist.load_data": "()",
    "imdb.load_data": "(path='imdb.npz', num_words=None, skip_top=0, maxlen=None, seed=113, start_char=1, "
                      "oov_char=2, index_from=3, **kwargs)",
    "imdb.get_word_index": "(path='imdb_word_index.json')",
    "mnist.load_data": "(path='mnist.npz')",
    "reuters.load_data": "(path='reuters.npz', num_words=None, skip_top=0, maxlen=None, test_split=0.2, seed=113, "
                         "start_char=1, oov_char=2, index_from=3)",
    "reuters.get_word_index": "(path='reuters_word_index.json')",
    "reuters.get_label_names": "()",
}


@pytest.mark.parametrize("name", sorted(KERAS_SIGNATURES))
def test_arguments_and_defaults_are_keras_3_15s(name):
    module, function = name.split(".")
    assert str(inspect.signature(getattr(getattr(datasets, module), function))) == KERAS_SIGNATURES[name]


def test_mnist_reads_the_npz_arrays(cache, monkeypatch):
    x_train = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    _place(monkeypatch, cache, mnist, "mnist.npz", _npz(x_train=x_train, y_train=np.array([3, 1], np.uint8),
                                                        x_test=x_train[:1], y_test=np.array([7], np.uint8)))
    (xt, yt), (xs, ys) = mnist.load_data()
    np.testing.assert_array_equal(xt, x_train)
    assert (xt.dtype, yt.tolist(), xs.shape, ys.tolist()) == (np.uint8, [3, 1], (1, 28, 28), [7])


def test_mnist_file_without_keras_keys_is_a_value_error(cache, monkeypatch):
    _place(monkeypatch, cache, mnist, "mnist.npz", _npz(x_train=np.zeros(1)))
    with pytest.raises(ValueError, match=r"lacks the arrays \['y_train', 'x_test', 'y_test'\]"):
        mnist.load_data()


def _idx(magic, *dims, data):
    return gzip.compress(struct.pack(">" + "I" * (1 + len(dims)), magic, *dims) + bytes(data))


def test_fashion_mnist_reads_the_gzipped_idx_files(cache):
    folder = cache / "fashion-mnist"
    folder.mkdir()
    pixels = list(range(3 * 28 * 28))
    for prefix, n in (("train", 3), ("t10k", 2)):
        (folder / f"{prefix}-labels-idx1-ubyte.gz").write_bytes(_idx(2049, n, data=range(n)))
        (folder / f"{prefix}-images-idx3-ubyte.gz").write_bytes(_idx(2051, n, 28, 28, data=[p % 256 for p in
                                                                                            pixels[:n * 784]]))
    (xt, yt), (xs, ys) = fashion_mnist.load_data()
    assert (xt.shape, yt.tolist(), xs.shape, ys.tolist(), xt.dtype) == ((3, 28, 28), [0, 1, 2], (2, 28, 28),
                                                                        [0, 1], np.uint8)
    assert xt[1, 0, 5] == (784 + 5) % 256 and xt.flags.writeable
    (folder / "t10k-labels-idx1-ubyte.gz").write_bytes(_idx(2051, 2, data=[0, 1]))
    with pytest.raises(ValueError, match="IDX header of labels"):
        fashion_mnist.load_data()


@pytest.mark.parametrize("module, n, features", [(boston_housing, 20, 13), (california_housing, 650, 8)])
def test_housing_shuffles_with_the_seed_and_splits(cache, monkeypatch, module, n, features):
    x = np.arange(n * features, dtype=np.float64).reshape(n, features)
    y = np.arange(n, dtype=np.float64)
    _place(monkeypatch, cache, module, f"{module.__name__.rsplit('.', 1)[1]}.npz", _npz(x=x, y=y))
    (xt, yt), (xs, ys) = module.load_data(test_split=0.25, seed=3)
    order = _keras_order(n, np.random.RandomState(3))
    cut = int(n * 0.75)
    assert yt.tolist() == order[:cut] and ys.tolist() == order[cut:]
    np.testing.assert_array_equal(xt, x[order[:cut]])
    assert xs.shape == (n - cut, features)
    with pytest.raises(ValueError, match="Invalid `test_split` argument: 1"):
        module.load_data(test_split=1)


def test_california_small_version_keeps_the_first_600_samples(cache, monkeypatch):
    _place(monkeypatch, cache, california_housing, "california_housing.npz",
           _npz(x=np.zeros((650, 8)), y=np.arange(650.0)))
    (_, yt), (_, ys) = california_housing.load_data(version="small")
    assert len(yt) == 480 and len(ys) == 120 and max(yt.max(), ys.max()) < 600
    with pytest.raises(ValueError, match="must be one of 'small', 'large'. Received: version=medium"):
        california_housing.load_data(version="medium")


# IMDB: four training and two test reviews; Keras shuffles each split with RandomState(seed), then offsets.
TRAIN = ([1, 2, 3], [4, 5], [6], [7, 8, 9, 10])
TEST = ([2, 9], [3, 3, 3])


@pytest.fixture
def imdb_file(cache, monkeypatch):
    _place(monkeypatch, cache, imdb, "imdb.npz", _npz(x_train=_ragged(*TRAIN), y_train=np.array([0, 1, 0, 1]),
                                                      x_test=_ragged(*TEST), y_test=np.array([1, 0])))
    rng = np.random.RandomState(113)
    return _keras_order(4, rng), _keras_order(2, rng)


def _as_lists(array):
    return [list(x) for x in array]


def test_imdb_defaults_start_char_index_from_and_the_largest_index_made_oov(imdb_file):
    train_order, test_order = imdb_file
    (xt, yt), (xs, ys) = imdb.load_data()
    # 1 starts each review, words move up by 3; the largest index (10 + 3) is out of `num_words` and becomes 2.
    offset = {0: [1, 4, 5, 6], 1: [1, 7, 8], 2: [1, 9], 3: [1, 10, 11, 12, 2]}
    assert _as_lists(xt) == [offset[i] for i in train_order]
    assert yt.tolist() == [[0, 1, 0, 1][i] for i in train_order] and yt.dtype == np.int64
    assert _as_lists(xs) == [[[1, 5, 12], [1, 6, 6, 6]][i] for i in test_order]
    assert ys.tolist() == [[1, 0][i] for i in test_order]
    assert xt.dtype == object and xt.shape == (4,) and xs.shape == (2,)


def test_imdb_num_words_skip_top_and_oov(imdb_file):
    train_order, _ = imdb_file
    (xt, _), _ = imdb.load_data(num_words=9, skip_top=5, oov_char=0)
    # Kept: 5 <= index < 9; the start character 1 is below skip_top, so it becomes the oov character too.
    expected = {0: [0, 0, 5, 6], 1: [0, 7, 8], 2: [0, 0], 3: [0, 0, 0, 0, 0]}
    assert _as_lists(xt) == [expected[i] for i in train_order]
    (xt, _), _ = imdb.load_data(num_words=9, skip_top=5, oov_char=None)
    expected = {0: [5, 6], 1: [7, 8], 2: [], 3: []}
    assert _as_lists(xt) == [expected[i] for i in train_order]


def test_imdb_maxlen_start_char_none_and_index_from(imdb_file):
    train_order, test_order = imdb_file
    (xt, yt), (xs, ys) = imdb.load_data(maxlen=4)
    # Sequences of 4 or more (after the start character) are dropped; the largest index left (12) becomes 2.
    kept = [i for i in train_order if i in (1, 2)]
    assert _as_lists(xt) == [{1: [1, 7, 8], 2: [1, 9]}[i] for i in kept]
    assert yt.tolist() == [[0, 1, 0, 1][i] for i in kept]
    assert _as_lists(xs) == [[1, 5, 2]] and ys.tolist() == [1]
    (xt, _), _ = imdb.load_data(start_char=None, index_from=0, num_words=100)
    assert _as_lists(xt) == [list(TRAIN[i]) for i in train_order]
    with pytest.raises(ValueError, match="no sequence was kept. Increase maxlen"):
        imdb.load_data(maxlen=2)
    with pytest.raises(ValueError, match="`num_words` must be a number or None"):
        imdb.load_data(num_words="all")
    with pytest.raises(ValueError, match=r"Unrecognized keyword arguments for imdb.load_data: \['nb_words'\]"):
        imdb.load_data(nb_words=10)


def test_imdb_downloads_from_its_origin_and_reads_the_word_index(cache, tmp_path, monkeypatch):
    www = tmp_path / "www"
    www.mkdir()
    data = _npz(x_train=_ragged([1]), y_train=np.array([1]), x_test=_ragged([2, 2]), y_test=np.array([0]))
    (www / "imdb.npz").write_bytes(data)
    monkeypatch.setattr(imdb, "FILE_HASH", hashlib.sha256(data).hexdigest())
    with serving(www) as server:
        monkeypatch.setattr(imdb, "ORIGIN", f"{server.url}/imdb.npz")
        (xt, yt), (xs, ys) = imdb.load_data(num_words=10)
    assert (_as_lists(xt), yt.tolist(), _as_lists(xs), ys.tolist()) == ([[1, 4]], [1], [[1, 5, 5]], [0])
    assert (cache / "imdb.npz").read_bytes() == data
    _place(monkeypatch, cache, imdb, "imdb_word_index.json", json.dumps({"the": 1}).encode(), "WORD_INDEX_HASH")
    assert imdb.get_word_index() == {"the": 1}


def test_reuters_preprocesses_then_splits_by_test_split(cache, monkeypatch):
    xs = ([5, 1], [2], [3, 3, 4], [1, 1, 1, 1], [6])
    _place(monkeypatch, cache, reuters, "reuters.npz", _npz(x=_ragged(*xs), y=np.array([10, 11, 12, 13, 14])))
    order = _keras_order(5, np.random.RandomState(113))
    (xt, yt), (xv, yv) = reuters.load_data(test_split=0.4, index_from=2, num_words=7)
    # Words move up by 2 after the start character 1; 7 and 8 are not below num_words=7, so they become 2.
    expected = {0: [1, 2, 3], 1: [1, 4], 2: [1, 5, 5, 6], 3: [1, 3, 3, 3, 3], 4: [1, 2]}
    assert _as_lists(xt) + _as_lists(xv) == [expected[i] for i in order] and len(xt) == 3
    assert yt.tolist() + yv.tolist() == [10 + i for i in order] and yt.dtype == np.int64
    (xt, yt), (xv, yv) = reuters.load_data(maxlen=3, test_split=0.5)
    kept = [i for i in order if i in (1, 4)]  # with the start character, only these two are shorter than 3
    assert yt.tolist() + yv.tolist() == [10 + i for i in kept] and len(yt) == 1
    with pytest.raises(ValueError, match="Invalid `test_split` argument: 2"):
        reuters.load_data(test_split=2)
    _place(monkeypatch, cache, reuters, "reuters_word_index.json", b'{"said": 2}', "WORD_INDEX_HASH")
    assert reuters.get_word_index() == {"said": 2}


class _Python2Pickler(pickle._Pickler):
    """Writes strings and bytes as Python 2's str (BINSTRING) and NumPy's names as Python 2 did: the CIFAR files'
    format, which Python 3 reads with ``encoding="bytes"``."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_py2_string(self, obj):
        data = obj.encode("latin1") if isinstance(obj, str) else obj
        size = len(data)
        self.write(pickle.SHORT_BINSTRING + bytes([size]) + data if size < 256 else
                   pickle.BINSTRING + struct.pack("<i", size) + data)
        self.memoize(obj)

    def save_global(self, obj, name=None):
        module = obj.__module__.replace("numpy._core", "numpy.core")
        self.write(pickle.GLOBAL + f"{module}\n{name or obj.__qualname__}\n".encode())
        self.memoize(obj)

    dispatch[str] = dispatch[bytes] = save_py2_string
    dispatch[type] = dispatch[type(len)] = save_global


def _python2_pickle(value):
    buffer = io.BytesIO()
    _Python2Pickler(buffer, protocol=2).dump(value)
    return buffer.getvalue()


def _tar_gz(members):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _images(n, start):
    return ((np.arange(n * 3072) + start) % 251).astype(np.uint8).reshape(n, 3072)


def test_cifar10_downloads_extracts_and_reads_the_batches(cache, tmp_path, monkeypatch):
    folder = "cifar-10-batches-py"
    members = {f"{folder}/data_batch_{i}": pickle.dumps({b"batch_label": b"training", b"labels": [i, i + 1],
                                                         b"data": _images(2, i), b"filenames": [b"a", b"b"]})
               for i in range(1, 6)}
    members[f"{folder}/test_batch"] = pickle.dumps({b"labels": [9], b"data": _images(1, 7)})
    www = tmp_path / "www"
    www.mkdir()
    (www / "cifar.tar.gz").write_bytes(_tar_gz(members))
    monkeypatch.setattr(cifar10, "FILE_HASH", hashlib.sha256((www / "cifar.tar.gz").read_bytes()).hexdigest())
    with serving(www) as server:
        monkeypatch.setattr(cifar10, "ORIGIN", f"{server.url}/cifar.tar.gz")
        (xt, yt), (xs, ys) = cifar10.load_data()
        assert server.requests == ["/cifar.tar.gz"]
        cifar10.load_data()  # cached and extracted: no second download
        assert server.requests == ["/cifar.tar.gz"]
    assert (cache / "cifar-10-batches-py-target_archive").exists()
    assert (xt.shape, yt.shape, xs.shape, ys.shape) == ((10, 32, 32, 3), (10, 1), (1, 32, 32, 3), (1, 1))
    assert (xt.dtype, yt.dtype, xs.dtype, ys.dtype) == (np.uint8,) * 4
    assert yt.ravel().tolist() == [1, 2, 2, 3, 3, 4, 4, 5, 5, 6] and ys.tolist() == [[9]]
    # Each row is 1024 red, then green, then blue pixels, row-major; images come out channels-last.
    row = _images(2, 3)[1]
    assert xt[5, 4, 7].tolist() == [row[4 * 32 + 7], row[1024 + 4 * 32 + 7], row[2048 + 4 * 32 + 7]]


def test_cifar100_reads_python2_pickles_with_fine_or_coarse_labels(cache, monkeypatch):
    batches = {"train": {b"fine_labels": [42, 7, 99], b"coarse_labels": [1, 2, 3], b"data": _images(3, 0),
                         b"filenames": [b"x"] * 3, b"batch_label": b"training batch 1 of 1"},
               "test": {b"fine_labels": [5], b"coarse_labels": [19], b"data": _images(1, 1)}}
    data = _tar_gz({f"cifar-100-python/{name}": _python2_pickle(batch) for name, batch in batches.items()})
    _place(monkeypatch, cache, cifar100, "cifar-100-python-target_archive", data)
    (xt, yt), (xs, ys) = cifar100.load_data()
    assert (xt.shape, xt.dtype, yt.tolist(), ys.tolist(), yt.dtype) == ((3, 32, 32, 3), np.uint8, [[42], [7], [99]],
                                                                        [[5]], np.int64)
    assert xs[0, 0, 0].tolist() == [1, 1025 % 251, 2049 % 251]
    (_, yt), (_, ys) = cifar100.load_data(label_mode="coarse")
    assert yt.ravel().tolist() == [1, 2, 3] and ys.tolist() == [[19]]
    with pytest.raises(ValueError, match="`label_mode` must be one of"):
        cifar100.load_data(label_mode="medium")


class _RunsCommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_hostile_cifar_pickle_is_refused_and_runs_nothing(cache, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    hostile = pickle.dumps({b"data": _RunsCommand(marker), b"labels": [0]})
    members = {f"cifar-10-batches-py/{name}": hostile for name in
               [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]}
    _place(monkeypatch, cache, cifar10, "cifar-10-batches-py-target_archive", _tar_gz(members))
    with pytest.raises(ValueError, match=r"refusing to load the global '(posix|os|nt)\.system'"):
        cifar10.load_data()
    assert not marker.exists()


def test_a_hostile_imdb_object_array_is_refused_and_runs_nothing(cache, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    hostile = np.empty(1, dtype=object)
    hostile[0] = _RunsCommand(marker)
    _place(monkeypatch, cache, imdb, "imdb.npz", _npz(x_train=hostile, y_train=np.array([0]),
                                                      x_test=_ragged([1]), y_test=np.array([1])))
    with pytest.raises(ValueError, match=r"imdb.npz:x_train.npy.*refusing to load the global"):
        imdb.load_data()
    assert not marker.exists()


@pytest.mark.parametrize("payload, message", [
    (pickle.dumps({b"data": np.zeros((1, 3072), dtype=object), b"labels": [0]}), "array of Python objects"),
    (b"\x80\x02cnumpy\nndarray\nK\x05\x85R.", "refusing to call numpy.ndarray"),
    (b"\x80\x02cbuiltins\neval\nX\x04\x00\x00\x00argsq\x00\x85R.", "builtins.eval"),
])
def test_the_cifar_unpickler_builds_numeric_arrays_only(tmp_path, payload, message):
    from kgraph.datasets.cifar import load_batch
    (tmp_path / "batch").write_bytes(payload)
    with pytest.raises(ValueError, match=message):
        load_batch(str(tmp_path / "batch"))
