"""The exporter's command line at its edges: an ONNX file given as the model, and a model name checked up front."""
import os
import shutil
import subprocess
import sys

import pytest

from export.__main__ import EXIT_EXPORT_FAILED, EXIT_USAGE, main
from export.exporter import to_onnx
from tests.export import zoo

SCRIPT = os.path.join(os.path.dirname(sys.executable), "kgraph-export")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A saved kgraph model and its ONNX export, in a folder of their own."""
    folder = tmp_path_factory.mktemp("edges")
    model = zoo.shared("mlp_functional")
    model.save(folder / "mlp.pkl")
    to_onnx(model, str(folder / "mlp.onnx"))
    return folder


def _listing(folder):
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, dirs, names in os.walk(folder) for name in names + dirs)


@pytest.mark.parametrize("name", ["mlp.onnx", "mlp.bin"])
def test_an_onnx_input_points_to_the_server(files, tmp_path, capsys, name):
    # Named .onnx, or an ONNX protobuf under another name: recognised by its content too.
    path = tmp_path / name
    shutil.copy(files / "mlp.onnx", path)
    before = path.read_bytes()
    assert main([str(path)]) == EXIT_EXPORT_FAILED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"'{path}' is an ONNX model already" in err
    assert f"kgraph-serve {path}" in err and f"python -m serve {path}" in err
    assert "corrupt" not in err and "another path with -o" not in err
    assert path.read_bytes() == before and _listing(tmp_path) == [name]


@pytest.mark.parametrize("name, problem", [
    ("a/b", "without '/'"), ("a\\b", "without '/' or '\\'"), ("..", "plain directory name"),
    (".hidden", "the server skips it"), ("tab\there", "control character")])
def test_a_bad_model_name_is_refused_before_anything_is_written(files, tmp_path, capsys, name, problem):
    out, repo = tmp_path / "out.onnx", tmp_path / "repo"
    with pytest.raises(SystemExit) as info:
        main([str(files / "mlp.pkl"), "-o", str(out), "--triton-repo", str(repo), "--model-name", name])
    assert info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"--model-name {name!r} cannot name a model in the Triton repository" in err and problem in err
    assert _listing(tmp_path) == []


def test_a_name_taken_from_a_hidden_file_is_refused_too(files, tmp_path, capsys):
    hidden = tmp_path / ".mlp.pkl"
    shutil.copy(files / "mlp.pkl", hidden)
    with pytest.raises(SystemExit) as info:
        main([str(hidden), "--triton-repo", str(tmp_path / "repo")])
    assert info.value.code == EXIT_USAGE
    assert "the model name taken from the file name '.mlp'" in capsys.readouterr().err
    assert _listing(tmp_path) == [".mlp.pkl"]


def test_the_console_script_says_the_same(files, tmp_path):
    assert os.path.exists(SCRIPT), "the kgraph-export console script is missing: run pip install -e ."
    result = subprocess.run([SCRIPT, str(files / "mlp.onnx")], capture_output=True, text=True, timeout=120)
    assert result.returncode == EXIT_EXPORT_FAILED and "is an ONNX model already" in result.stderr
    result = subprocess.run([SCRIPT, str(files / "mlp.pkl"), "-o", str(tmp_path / "m.onnx"), "--triton-repo",
                             str(tmp_path / "repo"), "--model-name", "a/b"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == EXIT_USAGE and result.stderr.startswith("usage: kgraph-export")
    assert "error: --model-name 'a/b'" in result.stderr and _listing(tmp_path) == []
