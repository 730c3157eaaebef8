"""int8 (dynamic quantization) and float16 exports: smaller files, float32 inputs and outputs, stated tolerances."""
import sys

import numpy as np
import onnx
import pytest

from export import quantize, to_onnx
from export.__main__ import main
from export.verify import verify
from tests.export import zoo

MODELS = ["mlp_sequential", "digits_cnn", "lstm_classifier"]


@pytest.fixture(scope="module")
def fp32():
    return {name: to_onnx(zoo.shared(name)) for name in MODELS}


@pytest.mark.parametrize("weights", ["int8", "fp16"])
@pytest.mark.parametrize("name", MODELS)
def test_converted_models_match_native_within_their_tolerance(fp32, name, weights):
    converted = quantize.convert(fp32[name], weights)
    ops = {node.op_type for node in converted.graph.node}
    if weights == "int8" and name == "digits_cnn":
        # Convolutions stay float32 (onnxruntime's ConvInteger is slower); the Dense kernel is int8.
        assert {"Conv", "MatMulInteger"} <= ops and "ConvInteger" not in ops
        assert converted.ByteSize() < fp32[name].ByteSize()
    else:
        # Weights shrink 4x (int8) and 2x (float16); scales, zero points and casts take some of it back.
        assert converted.ByteSize() < fp32[name].ByteSize() / (2.5 if weights == "int8" else 1.8)
    float32 = onnx.TensorProto.FLOAT
    for value in list(converted.graph.input) + list(converted.graph.output):
        assert value.type.tensor_type.elem_type == float32, value.name
    lines = []
    report = verify(zoo.shared(name), converted, batches=(1, 16), print_fn=lines.append, weights=weights)
    assert report.ok and not report.findings, "\n".join(lines)
    rtol, atol = quantize.TOLERANCES[weights]
    assert f"within rtol={rtol:g}, atol={atol:g} of each output's scale" in lines[-1]


def test_float16_weights_are_float16():
    converted = quantize.to_float16(to_onnx(zoo.shared("mlp_sequential")))
    assert {t.data_type for t in converted.graph.initializer} == {onnx.TensorProto.FLOAT16}


def test_cli_quantize_verify_and_accuracy_on_a_labelled_set(tmp_path, capsys):
    model = zoo.shared("mlp_sequential")
    path, data = tmp_path / "mlp.pkl", tmp_path / "labelled.npz"
    model.save(path)
    x = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    labels = model.predict(x, verbose=0).argmax(axis=-1)
    labels[:16] = (labels[:16] + 1) % 10  # a quarter wrong, so native accuracy is exactly 0.75
    np.savez(data, x=x, y=labels)
    assert main([str(path), "-o", str(tmp_path / "int8.onnx"), "--quantize", "dynamic",
                 "--verify-data", str(data)]) == 0
    out = capsys.readouterr().out
    assert "int8 weights" in out and "PASS" in out
    assert "accuracy on 64 labelled rows: native 0.7500, onnxruntime 0.7" in out
    with pytest.raises(SystemExit) as info:
        main([str(path), "--fp16", "--quantize", "dynamic"])
    assert info.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_labelled_set_that_does_not_fit_is_one_error(tmp_path, capsys):
    model = zoo.shared("mlp_sequential")
    path, data = tmp_path / "mlp.pkl", tmp_path / "labelled.npz"
    model.save(path)
    np.savez(data, features=np.zeros((4, 32), np.float32))
    assert main([str(path), "--verify-data", str(data)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no array ['y']" in err and str(data) in err


def test_fp16_without_its_extra_is_one_error_naming_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxconverter_common", None)  # what an environment without it imports
    path = tmp_path / "mlp.pkl"
    zoo.shared("mlp_sequential").save(path)
    assert main([str(path), "--fp16"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'kgraph-engine[fp16]'" in err and "onnxconverter-common" in err
    assert not (tmp_path / "mlp.onnx").exists()
