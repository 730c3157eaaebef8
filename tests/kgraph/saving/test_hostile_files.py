"""Hostile model files: each is tiny, made here, and refused with a ValueError before it costs memory or time.

All files are loaded in one child process (``python -m tests.kgraph.saving.test_hostile_files DIR``) under an
address-space limit and a timeout; for each file the child resets the kernel's peak-RSS counter, loads the file
with ``kgraph.load_model`` or the exporter's loader, and reports the error and the peak RSS above its start. A
loader that allocated what a file declares would fail with a MemoryError under the limit, or be killed, or report
a peak far above the bound checked here.
"""
import io
import json
import os
import pickle
import random
import resource
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from kgraph.saving import safe_loads
from kgraph.saving.file_limits import MAX_DEPTH, MAX_NODES

ROOT = Path(__file__).resolve().parents[3]
PEAK_BOUND = 200 << 20  # bytes of RSS a refused file may cost above the loader's start; the files declare GBs
ADDRESS_LIMIT = 3 << 30  # the child's address space: the kgraph imports and a few hundred MB of work fit in it
TIMEOUT_S = 120  # for every file together; a loader that expanded a shared structure would run for minutes


def _unicode(text):
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _int(value):
    return b"J" + struct.pack("<i", value)


def object_array_pickle():
    """65 bytes: NumPy's ``_reconstruct`` asked for a 2e8-element object array (1.6 GB of pointers)."""
    return (b"\x80\x02cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n" + _int(200_000_000) +
            b"\x85C\x01O\x87R.")


def ndarray_call_pickle():
    """``numpy.ndarray((2e8,), 'f8')`` called directly: 1.6 GB of address space from a 30-byte file."""
    return b"\x80\x02cnumpy\nndarray\n" + _int(200_000_000) + b"\x85C\x02f8\x86R."


def dtype_flags_pickle():
    """An array of 8-byte strings whose dtype a BUILD then marks as holding Python objects: NumPy would treat the
    file's bytes as object pointers when the array is freed."""
    return (b"\x80\x02cnumpy\ndtype\n" + _unicode("S8") + b"\x89\x88\x87Rq\x00" +
            b"cnumpy.core.numeric\n_frombuffer\n(C\x08AAAAAAAAh\x00K\x01\x85" + _unicode("C") + b"tRq\x01" +
            b"0h\x00(K\x03" + _unicode("|") + b"NNN" + _int(8) + _int(1) + _int(0x3F) + b"tb.")


def bytearray_length_pickle():
    """11 bytes: a protocol-5 bytearray declaring 3 GiB, which a reader must not allocate before it has the bytes."""
    return b"\x80\x05\x96" + struct.pack("<Q", 3 << 30) + b"."


def _payload(model, weights=(), **extra):
    return {"format": "kgraph-model", "format_version": 1, "model": model, "weights": list(weights), **extra}


def _dense_config(units, inputs):
    return {"class_name": "Sequential", "config": {"name": "big", "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [None, inputs]}},
        {"class_name": "Dense", "config": {"units": units}}]}}


def dense_pickle():
    """A few hundred bytes declaring Dense 20000 x 20000 (1.6 GB of kernel) with no weights."""
    return pickle.dumps(_payload(_dense_config(20000, 20000)), protocol=pickle.HIGHEST_PROTOCOL)


def shared_sequentials_pickle():
    """Nested Sequentials sharing references: 2**24 Dense layers described in under a kilobyte."""
    layer = {"class_name": "Dense", "config": {"units": 1}}
    for _ in range(24):
        layer = {"class_name": "Sequential", "config": {"layers": [layer, layer]}}
    return pickle.dumps(_payload(layer), protocol=pickle.HIGHEST_PROTOCOL)


def list_dag_pickle():
    """A list DAG of 40 levels, two references each: its ``repr`` would be 2**40 items long."""
    node = []
    for _ in range(40):
        node = [node, node]
    return pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL)


def list_dag_weights_pickle():
    """The same DAG as the 'weights' of an otherwise plausible model file."""
    node = []
    for _ in range(40):
        node = [node, node]
    return pickle.dumps(_payload({"class_name": "Sequential", "config": {"layers": []}}, weights=[node]),
                        protocol=pickle.HIGHEST_PROTOCOL)


def deep_list_pickle(depth=200_000):
    """A list nested 200,000 deep as the model's config: any recursive walk over it overflows the stack."""
    head = b"\x80\x02}(" + _unicode("format") + _unicode("kgraph-model") + _unicode("format_version") + b"K\x01"
    head += _unicode("weights") + b"]" + _unicode("model")
    return head + b"(" * depth + b"]" + b"l" * depth + b"u."


def _keras_archive(config, weights=None, compress=zipfile.ZIP_STORED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compress) as zf:
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
        zf.writestr("config.json", json.dumps(config))
        if weights is not None:
            zf.writestr("model.weights.h5", weights)
    return buffer.getvalue()


def _keras_dense(units, inputs):
    return {"module": "keras", "class_name": "Sequential", "config": {"name": "big", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [None, inputs]}},
        {"module": "keras.layers", "class_name": "Dense", "config": {"units": units}}]}}


def _h5(build):
    import h5py
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        build(f)
    return buffer.getvalue()


def _small_weights(f):
    f.create_dataset("layers/dense/vars/0", data=np.zeros((4, 3), np.float32))
    f.create_dataset("layers/dense/vars/1", data=np.zeros(3, np.float32))


def dense_keras():
    """A .keras archive of a few KB declaring Dense 20000 x 20000 over the weights of a 4 x 3 one."""
    return _keras_archive(_keras_dense(20000, 20000), _h5(_small_weights))


def _optimizer_bomb(f):
    # Chunks never written read back as the fill value: 400 MB of zeros stored in no bytes at all.
    _small_weights(f)
    f.create_dataset("optimizer/vars/0", shape=(100_000_000,), dtype="float32", chunks=(1 << 20,),
                     compression="gzip")


def h5_filter_bomb_keras():
    """A small model whose weights file, compressed inside HDF5, holds a 400 MB optimizer array."""
    return _keras_archive(_keras_dense(3, 4), _h5(_optimizer_bomb))


def deflate_bomb_keras(megabytes=120):
    """A small model whose weights member inflates over 100-fold, under the archive's ratio limit, to 120 MB."""
    rng = random.Random(0)
    raw = b"".join(rng.randbytes(230) + bytes(40_000) for _ in range(megabytes * 1_000_000 // 40_230))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("metadata.json", "{}")
        zf.writestr("config.json", json.dumps(_keras_dense(3, 4)))
        zf.writestr("model.weights.h5", raw)
        info = zf.getinfo("model.weights.h5")
    assert 100 * info.compress_size < info.file_size < 200 * info.compress_size
    return buffer.getvalue()


def deep_json_keras(depth=200_000):
    """config.json nesting a list 200,000 deep."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("config.json", '{"class_name": "Sequential", "config": {"layers": ' + "[" * depth +
                    "]" * depth + "}}")
    return buffer.getvalue()


# name: (file maker, file suffix, fragment of the error both loaders must give)
HOSTILE = {
    "object_array": (object_array_pickle, "pkl", "only the empty array NumPy's own pickles start from"),
    "ndarray_call": (ndarray_call_pickle, "pkl", "refusing to call numpy.ndarray"),
    "bytearray_length": (bytearray_length_pickle, "pkl", "truncated or corrupt"),
    "dtype_flags": (dtype_flags_pickle, "pkl", "it is not one NumPy writes for a plain dtype"),
    "dense_20000": (dense_pickle, "pkl", "declares a weight of shape (20000, 20000)"),
    "shared_sequentials": (shared_sequentials_pickle, "pkl", "layers and objects"),
    "list_dag": (list_dag_pickle, "pkl", None),
    "list_dag_weights": (list_dag_weights_pickle, "pkl", f"more than {MAX_NODES} values"),
    "deep_list": (deep_list_pickle, "pkl", f"more than {MAX_DEPTH} levels deep"),
    "dense_20000_keras": (dense_keras, "keras", "declares a weight of shape (20000, 20000)"),
    "h5_filter_bomb": (h5_filter_bomb_keras, "keras", "once decompressed"),
    "deflate_bomb": (deflate_bomb_keras, "keras", "over the limit of"),
    "deep_json": (deep_json_keras, "keras", "nests lists and objects too deeply"),
}
# A list is not a model file: kgraph says so at once; the exporter, which names what it received, bounds that.
LIST_DAG_ERRORS = {"kgraph": "it is not a kgraph model file", "export": f"more than {MAX_NODES} values"}


def write_files(folder):
    """Write every hostile file into ``folder``; ``{name: path}``."""
    paths = {}
    for name, (make, suffix, _) in HOSTILE.items():
        paths[name] = os.path.join(folder, f"{name}.{suffix}")
        with open(paths[name], "wb") as f:
            f.write(make())
    return paths


def _status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith(field))


def load_all(folder, loaders=("kgraph", "export")):
    """In this process: load each file of ``folder`` with each loader; print one JSON line per load."""
    import kgraph
    from export import loading
    load = {"kgraph": kgraph.load_model, "export": loading.load}
    for file in sorted(os.listdir(folder)):
        for loader in loaders:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # the peak RSS (VmHWM) restarts from the current RSS
            start, began = _status("VmRSS"), time.perf_counter()
            try:
                load[loader](os.path.join(folder, file))
                outcome, message = "loaded", ""
            except BaseException as err:  # noqa: BLE001  (every escape is what the test reports)
                outcome, message = type(err).__name__, str(err)[:2000]
            print(json.dumps({"file": file, "loader": loader, "outcome": outcome, "message": message,
                              "seconds": time.perf_counter() - began, "peak": _status("VmHWM") - start}),
                  flush=True)


def run_child(folder, path=(), address_limit=ADDRESS_LIMIT, timeout=TIMEOUT_S):
    """Run ``load_all`` on ``folder`` in a child under ``address_limit``; its JSON lines, and its stderr."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (address_limit, address_limit))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*path, str(ROOT)]), OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "tests.kgraph.saving.test_hostile_files", folder],
                          cwd=path[0] if path else ROOT, env=env, preexec_fn=limit, capture_output=True, text=True,
                          timeout=timeout)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")], proc.stderr


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    pytest.importorskip("h5py")
    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("the peak-RSS watch needs Linux's /proc/self/clear_refs")
    folder = tmp_path_factory.mktemp("hostile")
    write_files(str(folder))
    lines, stderr = run_child(str(folder))
    assert len(lines) == 2 * len(HOSTILE), stderr[-3000:]
    return {(line["file"].rsplit(".", 1)[0], line["loader"]): line for line in lines}


@pytest.mark.parametrize("loader", ["kgraph", "export"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_file_is_refused_cheaply(reports, name, loader):
    report = reports[(name, loader)]
    expected = HOSTILE[name][2] or LIST_DAG_ERRORS[loader]
    assert report["outcome"] in ("ValueError", "LoadError"), report
    assert expected in report["message"], report
    assert report["peak"] < PEAK_BOUND, report
    assert len(report["message"]) < 1000, report


NUMPY_PICKLES = {
    "non-contiguous": lambda np: np.arange(12.0).reshape(3, 4)[:, ::2],
    "fortran order": lambda np: np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
    "strings": lambda np: np.array(["ab", "c"])[::-1],
    "bytes": lambda np: np.array([b"x", b"yz"]),
    "big-endian": lambda np: np.array([1, 2], ">i4"),
    "empty": lambda np: np.zeros((0, 3)),
    "scalar": lambda np: np.float32(3.5),
    "booleans": lambda np: np.array([True, False]),
}


@pytest.mark.parametrize("protocol", [4, 5])
@pytest.mark.parametrize("case", sorted(NUMPY_PICKLES))
def test_numpy_own_pickles_still_load(case, protocol):
    value = NUMPY_PICKLES[case](np)
    data = pickle.dumps(value, protocol=protocol)
    loaded = safe_loads(data)
    assert type(loaded) is type(value)
    np.testing.assert_array_equal(loaded, value)
    assert loaded.dtype == pickle.loads(data).dtype


@pytest.mark.parametrize("value, fragment", [
    (lambda np: np.array([1, None], dtype=object), "object array"),
    (lambda np: np.zeros(2, dtype=[("a", "f4")]), "numeric, boolean and string arrays only"),
])
def test_object_and_record_arrays_are_refused(value, fragment):
    with pytest.raises(ValueError, match=fragment):
        safe_loads(pickle.dumps(value(np), protocol=pickle.HIGHEST_PROTOCOL))


@pytest.mark.parametrize("suffix", ["keras", "pkl"])
def test_the_limits_leave_room_for_valid_models(suffix, tmp_path):
    # Many weightless layers (an HDF5 group each) and an optimizer's slots: what the limits must still admit.
    import kgraph
    from kgraph import layers
    model = kgraph.Sequential([kgraph.Input(shape=(4,))] + [layers.Activation("relu") for _ in range(300)] +
                              [layers.Dense(2)])
    model.compile(optimizer=kgraph.optimizers.Adam(amsgrad=True), loss="mse")
    model.fit(np.ones((8, 4), np.float32), np.ones((8, 2), np.float32), epochs=1, verbose=0)
    model.save(tmp_path / f"model.{suffix}")
    loaded = kgraph.load_model(tmp_path / f"model.{suffix}")
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert int(loaded.optimizer.iterations) == int(model.optimizer.iterations) == 1


def test_the_files_are_tiny():
    sizes = {name: len(make()) for name, (make, _, _) in HOSTILE.items()}
    assert max(sizes.values()) < 2_000_000, sizes


if __name__ == "__main__":
    load_all(sys.argv[1])
