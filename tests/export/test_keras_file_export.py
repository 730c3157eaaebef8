"""Keras 3 .keras files (shipped in tests/data/keras, written by Keras 3.15) exported through the CLI."""
import os
import shutil

import pytest

from export.__main__ import main

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "keras")


@pytest.mark.parametrize("name", ["transformer", "bidirectional"])
def test_cli_exports_a_keras_file_and_verifies_it(name, tmp_path, capsys):
    path = tmp_path / f"{name}.keras"
    shutil.copy(os.path.join(DATA, f"{name}.keras"), path)
    assert main([str(path), "--verify"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / name}.onnx" in out and "PASS" in out
