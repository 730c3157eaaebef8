"""The command line: python -m export model.pkl [-o] [--opset] [--verify] [--triton-repo ...]."""
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

import kgraph
from export import converter, opsets
from export.__main__ import EXIT_EXPORT_FAILED, EXIT_USAGE, EXIT_VERIFY_FAILED, main
from export.verify import session
from kgraph import layers as L
from serve.config import parse_config
from serve.proto.model_config_pb2 import TYPE_FP32
from tests.export import zoo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Halver(kgraph.Layer):
    """``x / 2``, exported by a deliberately wrong converter (to see --verify fail)."""

    _preserves_dtype = True

    def call(self, inputs):
        return kgraph.ops.multiply(inputs, 0.5)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


class Tripler(kgraph.Layer):
    """``3 * x`` through ``np.asarray``, which tracing cannot follow, and with no converter."""

    _preserves_dtype = True

    def call(self, inputs):
        return kgraph.ops.multiply(np.asarray(inputs), 3.0)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)


@converter(Halver, opset=13)
def convert_halver_wrongly(ctx):
    """Multiplies by 0.6 instead of 0.5."""
    return ctx.op("Mul", [ctx.input(0), ctx.const(0.6, dtype="float32")])


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A trained multi-input model saved to a .pkl file."""
    directory = tmp_path_factory.mktemp("cli")
    path = directory / "ranker.pkl"
    zoo.build("multi_io").save(path)
    return path


def _run(*args):
    return subprocess.run([sys.executable, "-m", "export", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_verify_through_a_subprocess_writes_beside_the_input(saved):
    result = _run(saved, "--verify")
    assert result.returncode == 0, result.stderr
    target = saved.with_suffix(".onnx")
    assert target.exists() and f"wrote {target}" in result.stdout
    assert "PASS: 18/18 comparisons within rtol=1e-05, atol=1e-05" in result.stdout  # batches 0, 1 and 3
    for level in ("ORT_ENABLE_ALL", "ORT_DISABLE_ALL"):
        for output in ("score", "logits", "aux"):
            assert any(level in line and output in line and "max_abs=" in line and "max_rel=" in line
                       for line in result.stdout.splitlines())
    props = {p.key: p.value for p in onnx.load(target).metadata_props}
    assert props["source_file"] == "ranker.pkl"


def test_help_documents_every_option():
    result = _run("--help")
    assert result.returncode == 0
    for option in ("-o", "--output", "--opset", "--import", "--quantize", "--fp16", "--verify", "--verify-data",
                   "--triton-repo", "--model-name", "--max-batch-size", "Exit status"):
        assert option in result.stdout


def test_output_path_and_opsets(saved, tmp_path, capsys):
    for opset in (13, opsets.max_opset()):
        out = tmp_path / f"m{opset}.onnx"
        assert main([str(saved), "-o", str(out), "--opset", str(opset)]) == 0
        proto = onnx.load(out)
        assert proto.opset_import[0].version == opset
        assert proto.ir_version == onnx.helper.find_min_ir_version_for(list(proto.opset_import))
    assert f"opset {opsets.max_opset()}" in capsys.readouterr().out


@pytest.mark.parametrize("opset", ["12", "max+1"])
def test_bad_opset_is_a_usage_error(saved, tmp_path, capsys, opset):
    opset = str(opsets.max_opset() + 1) if opset == "max+1" else opset
    out = tmp_path / "m.onnx"
    with pytest.raises(SystemExit) as info:
        main([str(saved), "-o", str(out), "--opset", opset])
    assert info.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"Opset {opset} is not supported: expected an opset from 13 to {opsets.max_opset()}" in err
    assert not out.exists()


def test_triton_options_need_a_repository(saved, capsys):
    with pytest.raises(SystemExit) as info:
        main([str(saved), "--model-name", "x"])
    assert info.value.code == EXIT_USAGE
    assert "--triton-repo" in capsys.readouterr().err


def test_triton_repository(saved, tmp_path):
    repo = tmp_path / "repo"
    args = [str(saved), "-o", str(tmp_path / "m.onnx"), "--triton-repo", str(repo)]
    assert main(args) == 0
    assert main(args + ["--model-name", "rank_v2", "--max-batch-size", "16"]) == 0
    assert sorted(os.listdir(repo)) == ["rank_v2", "ranker"]
    assert sorted(os.listdir(repo / "ranker")) == ["1", "config.pbtxt"]
    config = parse_config((repo / "ranker" / "config.pbtxt").read_text())
    assert (config.name, config.platform, config.max_batch_size) == ("ranker", "onnxruntime_onnx", 64)
    assert [(t.name, t.data_type, list(t.dims)) for t in config.input] == [("a", TYPE_FP32, [6]), ("b", TYPE_FP32, [4])]
    assert [(t.name, list(t.dims)) for t in config.output] == [("score", [1]), ("logits", [5]), ("aux", [2])]
    assert config.HasField("dynamic_batching")
    custom = (repo / "rank_v2" / "config.pbtxt").read_text()
    assert 'name: "rank_v2"' in custom and "max_batch_size: 16" in custom
    model_path = repo / "ranker" / "1" / "model.onnx"
    feeds = {"a": np.ones((2, 6), np.float32), "b": np.ones((2, 4), np.float32)}
    assert [y.shape for y in session(model_path, "ORT_ENABLE_ALL").run(None, feeds)] == [(2, 1), (2, 5), (2, 2)]


def test_triton_dims_of_a_dynamic_axis_are_minus_one(tmp_path):
    model = zoo.build("variable_length")
    path = tmp_path / "seq.pkl"
    model.save(path)
    assert main([str(path), "--triton-repo", str(tmp_path / "repo")]) == 0
    config = (tmp_path / "repo" / "seq" / "config.pbtxt").read_text()
    assert "dims: [-1, 6]" in config and "dims: [-1, 4]" in config


def test_verify_failure_exits_non_zero(tmp_path, capsys):
    x = kgraph.Input(shape=(3,), name="x")
    path = tmp_path / "halver.pkl"
    zoo.perturb(kgraph.Model(x, Halver()(L.Dense(3)(x)))).save(path)
    assert main([str(path), "--verify"]) == EXIT_VERIFY_FAILED
    out = capsys.readouterr().out
    assert "FAIL: 2/6 comparisons" in out  # only the 0-row batch (nothing to differ) agrees


def test_unsupported_layer_fails_and_keeps_the_old_file(tmp_path, capsys):
    x = kgraph.Input(shape=(3,), name="x")
    path = tmp_path / "tripler.pkl"
    kgraph.Model(x, Tripler(name="triple")(x)).save(path)
    target = tmp_path / "tripler.onnx"
    target.write_bytes(b"previous")
    assert main([str(path)]) == EXIT_EXPORT_FAILED
    err = capsys.readouterr().err
    assert "error: Cannot export layer 'triple' (Tripler)" in err and "@export.converter(Tripler" in err
    assert target.read_bytes() == b"previous"
    assert sorted(os.listdir(tmp_path)) == ["tripler.onnx", "tripler.pkl"]


def test_missing_model_file_is_an_error(tmp_path, capsys):
    assert main([str(tmp_path / "absent.pkl")]) == EXIT_EXPORT_FAILED
    assert "absent.pkl" in capsys.readouterr().err
