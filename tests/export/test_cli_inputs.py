"""The command line on bad and hostile inputs (one error line, a non-zero exit, nothing run) and --import."""
import os
import pickle
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

from export.__main__ import EXIT_EXPORT_FAILED, EXIT_USAGE, main
from kgraph import saving
from tests.export import zoo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _System:
    """Unpickles as a call of os.system (what a hostile model file does)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A valid model file's bytes and payload."""
    path = tmp_path_factory.mktemp("good") / "mlp.pkl"
    zoo.shared("mlp_functional").save(path)
    return path.read_bytes(), saving.safe_loads(path.read_bytes())


def _payload(good, **changes):
    payload = dict(good[1])
    for key, value in changes.items():
        if value is KeyError:
            del payload[key]
        else:
            payload[key] = value
    return pickle.dumps(payload)


def _one_error(capsys, status, expected_status, *fragments):
    err = capsys.readouterr().err
    assert status == expected_status, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    return err


BAD_FILES = {
    "empty": (lambda good, marker: b"", "the file is empty"),
    "random bytes": (lambda good, marker: np.random.default_rng(0).bytes(256), "truncated or corrupt"),
    "truncated": (lambda good, marker: good[0][: len(good[0]) // 2], "truncated or corrupt"),
    "os.system pickle": (lambda good, marker: pickle.dumps(_System(f"touch {marker}")),
                         "refusing to load global"),
    "os.system inside a payload": (lambda good, marker: _payload(good, model=_System(f"touch {marker}")),
                                   "refusing to load global"),
    "not a dict": (lambda good, marker: pickle.dumps([1, 2]), "not a kgraph model file"),
    "no model field": (lambda good, marker: _payload(good, model=KeyError), "has no 'model' field"),
    "no weights field": (lambda good, marker: _payload(good, weights=KeyError), "has no 'weights' field"),
    "string format_version": (lambda good, marker: _payload(good, format_version="1"),
                              "'format_version' must be an integer; received '1' (str)"),
    "newer format_version": (lambda good, marker: _payload(good, format_version=99), "newer kgraph (format 99)"),
    "string model": (lambda good, marker: _payload(good, model="Functional"),
                     "'model' must be a dict (the model's config); received 'Functional' (str)"),
    "weights not arrays": (lambda good, marker: _payload(good, weights=[[1.0, 2.0]]),
                           "'weights' must be a list of arrays"),
    "config missing its class": (lambda good, marker: _payload(good, model={"config": {}}),
                                 "cannot be rebuilt (KeyError: 'class_name')"),
    "weights of the wrong shapes": (lambda good, marker: _payload(good, weights=[np.zeros(3, np.float32)]),
                                    "cannot be rebuilt"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_model_file_is_one_error_line(case, good, tmp_path, capsys):
    make, fragment = BAD_FILES[case]
    marker = tmp_path / "marker"
    path = tmp_path / "model.pkl"
    path.write_bytes(make(good, marker))
    _one_error(capsys, main([str(path)]), EXIT_EXPORT_FAILED, str(path), fragment)
    assert not marker.exists()
    assert sorted(os.listdir(tmp_path)) == ["model.pkl"]


def test_missing_file_and_directory(tmp_path, capsys):
    _one_error(capsys, main([str(tmp_path / "absent.pkl")]), EXIT_EXPORT_FAILED, "absent.pkl",
               "No such file or directory")
    _one_error(capsys, main([str(tmp_path), "-o", str(tmp_path / "m.onnx")]), EXIT_EXPORT_FAILED,
               "it is a directory")


def test_output_equal_to_the_input_is_refused(good, tmp_path, capsys):
    path = tmp_path / "model.pkl"
    path.write_bytes(good[0])
    for output in (str(path), os.path.join(str(tmp_path), ".", "model.pkl")):
        _one_error(capsys, main([str(path), "-o", output]), EXIT_USAGE, "is the model file itself")
    assert path.read_bytes() == good[0]
    onnx_named = tmp_path / "model.onnx"
    onnx_named.write_bytes(good[0])  # the default output of a file named .onnx would be itself
    _one_error(capsys, main([str(onnx_named)]), EXIT_USAGE, "is the model file itself")


def _unwritable_directory(tmp_path):
    """A directory this process cannot create files in (root ignores permission bits: /sys then)."""
    directory = tmp_path / "read_only"
    directory.mkdir()
    directory.chmod(0o555)
    for candidate in (str(directory), "/sys"):
        if os.path.isdir(candidate) and _refuses_writes(candidate):
            return candidate
    pytest.skip("no directory here refuses writes to this process")


def _refuses_writes(directory):
    try:
        os.rmdir(tempfile.mkdtemp(dir=directory))
    except OSError:
        return True
    return False


def test_unwritable_target_names_the_users_path(good, tmp_path, capsys):
    path = tmp_path / "model.pkl"
    path.write_bytes(good[0])
    target = os.path.join(str(_unwritable_directory(tmp_path)), "model.onnx")
    err = _one_error(capsys, main([str(path), "-o", target]), EXIT_EXPORT_FAILED, f"Cannot write '{target}'")
    assert ".onnx-export-" not in err


CUSTOM_MODULE = '''
    """A custom layer and its converter, for the --import test."""
    import kgraph
    from export import converter


    class CliTestDoubler(kgraph.Layer):
        _preserves_dtype = True

        def call(self, inputs):
            return kgraph.ops.multiply(inputs, 2.0)

        def compute_output_shape(self, input_shape):
            return tuple(input_shape)


    @converter(CliTestDoubler, opset=13)
    def convert_doubler(ctx):
        return ctx.op("Mul", [ctx.input(0), ctx.const(2.0, dtype="float32")])
'''


def _run(cwd, *args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "export", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env)


def test_import_registers_custom_layers(tmp_path):
    (tmp_path / "cli_custom_layers.py").write_text(textwrap.dedent(CUSTOM_MODULE))
    save = textwrap.dedent("""
        import kgraph, cli_custom_layers
        x = kgraph.Input(shape=(3,), name="x")
        y = cli_custom_layers.CliTestDoubler()(kgraph.layers.Dense(2)(x))
        kgraph.Model(x, y).save("custom.pkl")
    """)
    subprocess.run([sys.executable, "-c", save], cwd=tmp_path, check=True, env=dict(os.environ, PYTHONPATH=ROOT))
    result = _run(tmp_path, "custom.pkl", "--verify", "--import", "cli_custom_layers")
    assert result.returncode == 0, result.stderr
    assert "PASS: 6/6 comparisons" in result.stdout
    result = _run(tmp_path, "custom.pkl", "-o", "other.onnx")
    assert result.returncode == EXIT_EXPORT_FAILED and result.stderr.count("\n") == 1, result.stderr
    assert "Unknown layer class 'CliTestDoubler'" in result.stderr and "--import MODULE" in result.stderr
    assert not (tmp_path / "other.onnx").exists()


def test_a_module_that_fails_to_import_is_a_usage_error(good, tmp_path, capsys, monkeypatch):
    path = tmp_path / "model.pkl"
    path.write_bytes(good[0])
    (tmp_path / "cli_broken_layers.py").write_text("raise RuntimeError('half-written module')\n")
    monkeypatch.chdir(tmp_path)
    _one_error(capsys, main([str(path), "--import", "cli_absent_layers"]), EXIT_USAGE,
               "Cannot import module 'cli_absent_layers' given with --import: ModuleNotFoundError")
    _one_error(capsys, main([str(path), "--import", "cli_broken_layers"]), EXIT_USAGE,
               "Cannot import module 'cli_broken_layers' given with --import: RuntimeError: half-written module")
    assert not (tmp_path / "model.onnx").exists()
