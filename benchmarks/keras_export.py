"""``.keras`` -> ONNX: kgraph (``kgraph.load_model`` + ``export.to_onnx``) next to Keras's ``model.export(format="onnx")``.

For each ``.keras`` file (default: the small Keras-written files in tests/data/keras), prints the time to load
and export (best of ``--repeat`` runs), the ONNX node count and file size for both, the ratios, and the largest
difference between each ONNX file's outputs (onnxruntime) and Keras's saved predictions. Keras's column needs
Keras 3 with a backend and its ONNX dependencies in the same environment, e.g.
``KERAS_BACKEND=torch PYTHONPATH=. /path/to/keras-venv/bin/python benchmarks/keras_export.py``; without them only
kgraph's column is printed.
"""
import argparse
import contextlib
import glob
import os
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import onnxruntime

import kgraph
from export import to_onnx

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FILES = sorted(glob.glob(os.path.join(HERE, "..", "tests", "data", "keras", "*.keras")))


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _reference(path):
    npz = path[:-len(".keras")] + ".npz"
    if not os.path.exists(npz):
        return None, None
    arrays = np.load(npz)
    return [arrays[k] for k in sorted(arrays) if k.startswith("x")], arrays["y0"]


def _onnx_error(onnx_path, inputs, expected):
    if inputs is None:
        return float("nan")
    sess = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    feeds = {i.name: x.astype(np.float32 if "float" in i.type else np.int64 if "int64" in i.type else x.dtype)
             for i, x in zip(sess.get_inputs(), inputs)}
    return float(np.abs(sess.run(None, feeds)[0] - expected).max())


def _kgraph(path, out, repeat):
    def run():
        to_onnx(kgraph.load_model(path), out)
    return _best(run, repeat)


@contextlib.contextmanager
def _silenced_stdout():
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def _keras(path, out, repeat, inputs):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    import keras

    def run():
        model = keras.saving.load_model(path)
        model.predict(inputs[0] if len(inputs) == 1 else inputs, verbose=0)  # Keras exports called models only
        with _silenced_stdout():  # torch's exporter prints its whole graph when it fails
            model.export(out, format="onnx", verbose=False)
    return _best(run, repeat)


def _keras_available():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    try:
        import keras  # noqa: F401
    except ImportError:
        return False
    return True


def _row(name, seconds, onnx_path, error):
    return f"{name:<8}{seconds * 1e3:>9.1f} ms{len(onnx.load(onnx_path).graph.node):>7}" \
        f"{os.path.getsize(onnx_path) / 1024:>9.1f} KB  {error:.1e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with_keras = _keras_available()
    if not with_keras:
        print("Keras is not installed here: kgraph's column only.")
    warnings.filterwarnings("ignore")
    print(f"{'':<8}{'load+export':>12}{'nodes':>7}{'size':>12}  max |onnx - keras predict|")
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.files:
            inputs, expected = _reference(path)
            name = os.path.basename(path)
            ours = os.path.join(tmp, "kgraph.onnx")
            ours_s = _kgraph(path, ours, args.repeat)
            print(name)
            print(_row("kgraph", ours_s, ours, _onnx_error(ours, inputs, expected)))
            if with_keras and inputs is not None:
                theirs = os.path.join(tmp, "keras.onnx")
                try:
                    theirs_s = _keras(path, theirs, args.repeat, inputs)
                except Exception as err:  # noqa: BLE001  (report Keras's failure and go on with the next file)
                    print(f"{'keras':<8}export failed: {type(err).__name__}: {str(err).splitlines()[0][:100]}")
                    continue
                print(_row("keras", theirs_s, theirs, _onnx_error(theirs, inputs, expected)))
                nodes = len(onnx.load(theirs).graph.node) / len(onnx.load(ours).graph.node)
                print(f"  Keras / kgraph: time x{theirs_s / ours_s:.1f}, nodes x{nodes:.1f}")


if __name__ == "__main__":
    main()
