"""Export of the complex-number ops: real inputs match native predict in onnxruntime; complex ones are refused."""
import numpy as np
import pytest

import kgraph
from export import to_onnx
from export.registry import ExportError
from kgraph import ops
from tests.export.parity import assert_parity


def _sampler(name, shape, dtype, rng):
    """Negative, zero and positive values (and a NaN in float inputs), so every branch of angle is taken."""
    if np.dtype(dtype).kind == "i":
        return rng.integers(-3, 4, shape).astype(dtype)
    values = rng.standard_normal(shape).astype(dtype)
    values.reshape(-1)[:3] = [0.0, -0.0, np.nan][: values.size]
    return values


def test_ops_on_real_inputs_match_native_predict():
    x, i = kgraph.Input((2, 4)), kgraph.Input((5,), dtype="int32")
    h = kgraph.layers.Dense(4)(x)
    outs = [ops.real(h), ops.imag(h), ops.conj(h), ops.conjugate(x), ops.angle(h), ops.angle(x), ops.isreal(h),
            ops.real(i), ops.imag(i), ops.conj(i), ops.angle(i), ops.isreal(i)]
    model = kgraph.Model([x, i], outs)
    assert [str(o.dtype) for o in outs[-5:]] == ["int32", "int32", "int32", "float32", "bool"]
    assert_parity(model, rtol=0.0, atol=0.0, sampler=_sampler)  # copies, constants and a select: exact


def test_ops_after_a_convolution_keep_its_layout():
    x = kgraph.Input((4, 4, 3))
    h = kgraph.layers.Conv2D(2, 3, padding="same")(x)  # the exporter may hold h channels-first
    model = kgraph.Model(x, [ops.angle(h) + ops.real(h), ops.imag(h)])
    assert_parity(model)


@pytest.mark.parametrize("build, message", [
    (lambda z: ops.real(z), "input is complex64"),
    (lambda z: ops.angle(z), "input is complex64"),
    (lambda z: ops.view_as_real(z), "view_as_real"),
])
def test_complex_inputs_are_refused(tmp_path, build, message):
    z = kgraph.Input((3,), dtype="complex64")
    with pytest.raises(ExportError, match=message):
        to_onnx(kgraph.Model(z, build(z)), str(tmp_path / "m.onnx"))


@pytest.mark.parametrize("build", [lambda x: ops.real(ops.polar(x, x)),
                                   lambda x: ops.imag(ops.view_as_complex(ops.stack([x, x], axis=-1)))])
def test_complex_results_are_refused(tmp_path, build):
    x = kgraph.Input((3,))
    with pytest.raises(ExportError, match="polar|view_as_complex"):
        to_onnx(kgraph.Model(x, build(x)), str(tmp_path / "m.onnx"))
