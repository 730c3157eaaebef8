"""Layers over a time axis of any length export: ConvLSTM as an ONNX Scan over image states, and
STFTSpectrogram, whose frames are longer than any placeholder length (its conv's spec is shape arithmetic)."""
import numpy as np
import onnxruntime
import pytest

import kgraph
from export import to_onnx
from kgraph import layers
from tests.export.parity import assert_parity


@pytest.mark.parametrize("options", [{"padding": "same"}, {"padding": "same", "return_sequences": True},
                                     {"strides": 2, "return_sequences": True, "go_backwards": True},
                                     {"padding": "same", "return_state": True}])
def test_conv_lstm_over_any_number_of_steps_is_a_scan(options):
    inp = kgraph.Input((None, 6, 6, 2))
    out = layers.ConvLSTM2D(3, 3, **options)(inp)
    model = kgraph.Model(inp, out)
    proto = assert_parity(model, rtol=1e-4, atol=1e-4)
    assert "Scan" in [node.op_type for node in proto.graph.node]
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((2, 11, 6, 6, 2)).astype("float32")
    expected = model.predict(x, verbose=0)
    got = session.run(None, {session.get_inputs()[0].name: x})
    for e, g in zip(expected if isinstance(expected, list) else [expected], got):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_conv_lstm_with_unknown_image_sizes_is_a_clear_error():
    inp = kgraph.Input((None, None, None, 2))
    with pytest.raises(Exception, match="spatial sizes .* are unknown"):
        to_onnx(kgraph.Model(inp, layers.ConvLSTM2D(3, 3, padding="same")(inp)))


def test_stft_spectrogram_over_a_signal_of_any_length_exports():
    inp = kgraph.Input((None, 1))
    model = kgraph.Model(inp, layers.STFTSpectrogram(mode="log", frame_length=256, frame_step=128,
                                                     fft_length=256)(inp))
    assert model.output.shape == (None, None, 129)
    assert_parity(model, rtol=1e-3, atol=1e-3)
