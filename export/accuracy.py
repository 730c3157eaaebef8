"""Accuracy of the native model and of its ONNX export on a labelled set (``--verify-data file.npz``).

The ``.npz`` holds one array per model input, named after it (``x`` also
names the input of a single-input model), and the labels as ``y``: class ids
``(n,)`` or ``(n, 1)``, or one-hot rows ``(n, classes)``. The first output is
the prediction: the arg-max of its last axis, or ``> 0.5`` for one column.
"""
from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

import numpy as np

from export.exporter import functional_of
from export.isolation import run_isolated
from export.registry import ExportError
from export.verify import native_outputs

if TYPE_CHECKING:
    from kgraph.models.model import Model


@dataclasses.dataclass
class Accuracy:
    """Accuracy of native ``predict`` and of onnxruntime on ``rows`` labelled rows."""

    rows: int
    native: float
    onnx: float

    def __str__(self):
        return (f"accuracy on {self.rows} labelled rows: native {self.native:.4f}, onnxruntime {self.onnx:.4f} "
                f"({self.onnx - self.native:+.4f})")


def load_labelled(model: Model, path: os.PathLike[str] | str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``(feeds by input name, labels)`` from the ``.npz`` file ``path``; a clear ExportError if it does not fit."""
    names = list(functional_of(model).input_names)
    try:
        with np.load(os.fspath(path), allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError) as err:
        raise ExportError(f"Cannot read the labelled set '{path}': {err}. Expected an .npz file (numpy.savez) "
                          f"with the arrays {names + ['y']}.") from None
    if len(names) == 1 and names[0] not in arrays and "x" in arrays:
        arrays[names[0]] = arrays.pop("x")
    missing = [key for key in names + ["y"] if key not in arrays]
    if missing:
        raise ExportError(f"The labelled set '{path}' has no array {missing}. Expected arrays {names + ['y']}; "
                          f"received {sorted(arrays)}.")
    feeds = {name: arrays[name] for name in names}
    rows = {len(a) for a in list(feeds.values()) + [arrays["y"]]}
    if len(rows) != 1:
        raise ExportError(f"The arrays of the labelled set '{path}' have different numbers of rows: "
                          f"{ {k: len(v) for k, v in list(feeds.items()) + [('y', arrays['y'])]} }.")
    return feeds, arrays["y"]


def _predicted_classes(output):
    output = np.asarray(output)
    if output.ndim >= 2 and output.shape[-1] == 1:
        return (output[..., 0] > 0.5).astype(np.int64)
    return output.argmax(axis=-1)


def _label_classes(labels):
    labels = np.asarray(labels)
    if labels.ndim >= 2 and labels.shape[-1] > 1:
        return labels.argmax(axis=-1)
    return labels.reshape(len(labels)).astype(np.int64)


def accuracy(model: Model, onnx_path: os.PathLike[str] | str, data_path: os.PathLike[str] | str) -> Accuracy:
    """The Accuracy of ``model`` and of the ONNX file ``onnx_path`` (run in a child process) on ``data_path``."""
    feeds, labels = load_labelled(model, data_path)
    functional = functional_of(model)
    feeds = {t_name: np.asarray(a, dtype=t.dtype) for (t_name, a), t in zip(feeds.items(), functional.inputs)}
    truth = _label_classes(labels)
    native = native_outputs(model, feeds)[0]
    names = list(functional.output_names[:1])
    (outcome,) = run_isolated([(onnx_path, feeds, names)], ["ORT_ENABLE_ALL"])
    if outcome.error or outcome.abort:
        raise ExportError(f"onnxruntime could not run the labelled set '{data_path}': {outcome.error or outcome.abort}")
    onnx_output = outcome.outputs["ORT_ENABLE_ALL"][0]
    return Accuracy(len(truth), float(np.mean(_predicted_classes(native) == truth)),
                    float(np.mean(_predicted_classes(onnx_output) == truth)))
