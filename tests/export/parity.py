"""assert_parity: export a model, check the ONNX file, and compare native predict with onnxruntime."""
import os
import tempfile

import onnx

from export import to_onnx
from export.verify import LEVELS, verify


def check_file(path):
    """The full ONNX checker and strict, type-checked shape inference on a written model; return it loaded."""
    onnx.checker.check_model(os.fspath(path), full_check=True)
    model = onnx.load(os.fspath(path))
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return model


def assert_parity(model, rtol=1e-5, atol=1e-5, batches=(1, 3), sampler=None, opset=None, levels=LEVELS):
    """Export ``model`` to a temporary file, check it, and assert onnxruntime matches native predict."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{model.name}.onnx")
        to_onnx(model, path, opset=opset)
        proto = check_file(path)
        lines = []
        report = verify(model, path, batches=batches, sampler=sampler, rtol=rtol, atol=atol, print_fn=lines.append,
                        levels=levels)
    assert report.ok, f"ONNX output differs from native predict for model '{model.name}':\n" + "\n".join(lines)
    return proto
