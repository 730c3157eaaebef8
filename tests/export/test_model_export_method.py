"""``Model.export(filepath, format="onnx")``: Keras's export call writes an ONNX file onnxruntime runs."""
import numpy as np
import onnxruntime as ort
import pytest

import kgraph
from kgraph import layers as L


def _model():
    kgraph.utils.set_random_seed(0)
    inp = kgraph.Input((6,), name="features")
    return kgraph.Model(inp, L.Dense(3, activation="softmax")(L.Dense(8, activation="relu")(inp)))


def test_export_writes_onnx_that_matches_predict(tmp_path, capsys):
    model = _model()
    path = tmp_path / "model.onnx"
    proto = model.export(path, format="onnx", opset_version=13)
    assert f"Saved artifact at '{path}'." in capsys.readouterr().out
    assert {o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")} == {13}
    x = np.random.default_rng(1).standard_normal((5, 6)).astype("float32")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (onnx_out,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(onnx_out, model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    model.export(tmp_path / "quiet.onnx", verbose=False)  # ONNX is the default format
    assert capsys.readouterr().out == "" and (tmp_path / "quiet.onnx").stat().st_size > 0


def test_input_signature_must_describe_the_model_inputs(tmp_path):
    model = _model()
    model.export(tmp_path / "a.onnx", input_signature=[L.InputSpec(shape=(None, 6), dtype="float32")], verbose=False)
    model.export(tmp_path / "b.onnx", input_signature=[kgraph.KerasTensor((2, 6))], verbose=False)
    with pytest.raises(ValueError, match=r"shape \(None, 5\) does not match input 'features'"):
        model.export(tmp_path / "c.onnx", input_signature=[L.InputSpec(shape=(None, 5))])
    with pytest.raises(ValueError, match="dtype int32 does not match"):
        model.export(tmp_path / "c.onnx", input_signature=[kgraph.KerasTensor((None, 6), dtype="int32")])
    with pytest.raises(ValueError, match="2 specs but model"):
        model.export(tmp_path / "c.onnx", input_signature=[L.InputSpec(shape=(None, 6))] * 2)
    assert not (tmp_path / "c.onnx").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"format": "tf_saved_model"}, "kgraph exports ONNX only"), ({"format": "openvino"}, "format='onnx'"),
    ({"dynamic_shapes": True}, "Unexpected arguments for ONNX export: \\['dynamic_shapes'\\]"),
])
def test_other_formats_and_arguments_are_refused_by_name(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        _model().export(tmp_path / "m", **kwargs)
    assert not (tmp_path / "m").exists()
