"""Writing a model file atomically, with external data for models too big for one protobuf."""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import TYPE_CHECKING

import onnx

if TYPE_CHECKING:
    from collections.abc import Callable

# Protobuf refuses messages of 2 GiB or more; keep a margin for the graph itself.
EXTERNAL_DATA_THRESHOLD = 2 ** 31 - 2 ** 24


def needs_external_data(model: onnx.ModelProto) -> bool:
    """Whether the initializers are too big to store inside the .onnx protobuf."""
    return sum(len(t.raw_data) for t in model.graph.initializer) >= EXTERNAL_DATA_THRESHOLD


def data_file_name(path: os.PathLike[str] | str) -> str:
    """Name (beside the model file) of the external data file of ``path``."""
    return os.path.basename(os.fspath(path)) + ".data"


def save(model: onnx.ModelProto, path: os.PathLike[str] | str, check: Callable[[str], object] | None = None) -> str:
    """Write ``model`` to ``path`` atomically (weights in ``<name>.data`` when large); return the path."""
    # Written in a temporary directory beside `path`, then os.replace'd: a failed write or a failed
    # `check(tmp_path)` leaves an existing file untouched.
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    tmp_dir = tempfile.mkdtemp(dir=directory, prefix=".onnx-export-")
    try:
        tmp_path = os.path.join(tmp_dir, os.path.basename(path))
        external = needs_external_data(model)
        if external:
            # save_model moves tensor data out of the proto it is given: give it a copy.
            copy = onnx.ModelProto()
            copy.CopyFrom(model)
            onnx.save_model(copy, tmp_path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=data_file_name(path), size_threshold=1024)
        else:
            onnx.save_model(model, tmp_path)
        if check is not None:
            check(tmp_path)
        if external:
            os.replace(os.path.join(tmp_dir, data_file_name(path)), os.path.join(directory, data_file_name(path)))
        os.replace(tmp_path, path)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return path


def write_text(path: os.PathLike[str] | str, text: str) -> str:
    """Write ``text`` to ``path`` (UTF-8) through a temporary file beside it and ``os.replace``."""
    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
