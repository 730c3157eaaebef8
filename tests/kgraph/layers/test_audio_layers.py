"""STFTSpectrogram and MelSpectrogram: Keras parity, configs, gradients, save/load, export and errors.

Tolerances (measured against Keras 3.15.1, torch backend, float32):
- STFT kernels as initialized: max |difference| 6e-8 (Keras and kgraph compute them in float32 step by step).
- STFTSpectrogram outputs with Keras's kernels copied: max |difference| <= 2e-6 * max |output| over the modes
  (the angle mode is the loosest); asserted at 1e-5 * max |output|. float64 kernels: equal to 1e-14.
- Mel filter bank: max |difference| 2.2e-5 with 1025 bins (torch's and NumPy's float32 logarithms differ by one
  unit in the last place at ~10% of the mel values near 2800, divided by band widths near 20 mel); asserted at 5e-5.
- MelSpectrogram outputs: max |difference| <= 8e-7 * max |output|; asserted at 1e-5 * max |output|.
"""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L
from kgraph.layers.preprocessing.audio import WINDOWS, mel_weight_matrix, window_values
from tests.export.parity import assert_parity
from tests.gradcheck import check_gradients, check_variable_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")

STFT_CASES = [
    dict(mode="log"),
    dict(mode="magnitude", window="hamming", scaling="spectrum", padding="same", data_format="channels_first",
         periodic=True),
    dict(mode="psd", window="blackman", scaling=None, padding="same", expand_dims=True),
    dict(mode="real", expand_dims=True, data_format="channels_first"),
    dict(mode="imag", window=None, padding="same"),
    dict(mode="angle", periodic=True),
    dict(mode="stft", padding="same"),
    dict(mode="stft", window="hamming", expand_dims=True, data_format="channels_first"),
    dict(mode="log", window="bartlett", scaling="spectrum", padding="same", expand_dims=True,
         data_format="channels_first"),
]
MEL_CASES = [
    dict(fft_length=128, sequence_stride=32, num_mel_bins=20, sampling_rate=8000),
    dict(fft_length=64, sequence_stride=16, sequence_length=48, window="hamming", num_mel_bins=10, min_freq=100.0,
         max_freq=5000, power_to_db=False, mag_exp=1.0),
    dict(fft_length=64, sequence_stride=20, window=None, num_mel_bins=12, top_db=30.0, ref_power=2.0,
         min_power=1e-6),
]


def _signals(shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _stft_input(case, time=257, channels=3, batch=2, dtype="float32"):
    shape = (batch, channels, time) if case.get("data_format") == "channels_first" else (batch, time, channels)
    return _signals(shape, dtype=dtype)


def _config(layer):
    config = layer.get_config()
    for key in ("name", "dtype", "trainable"):
        config.pop(key)
    return config


def _stft(case, **extra):
    return dict(dict(frame_length=30, frame_step=11, fft_length=64), **case, **extra)


@needs_keras
@pytest.mark.parametrize("case", STFT_CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_stft_spectrogram_matches_keras(case):
    import keras
    x = _stft_input(case)
    theirs = keras.layers.STFTSpectrogram(**_stft(case))
    expected = keras.ops.convert_to_numpy(theirs(x))
    ours = L.STFTSpectrogram(**_stft(case))
    ours.build(x.shape)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    for mine, keras_weight in zip(ours.get_weights(), theirs.weights):
        np.testing.assert_allclose(mine, keras.ops.convert_to_numpy(keras_weight), rtol=0, atol=2e-7)
    ours.set_weights([keras.ops.convert_to_numpy(w) for w in theirs.weights])
    got = np.asarray(ours(x))
    assert got.shape == expected.shape == ours.compute_output_shape(x.shape)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * np.max(np.abs(expected)))
    assert _config(ours) == _config(theirs)


@needs_keras
def test_stft_spectrogram_matches_keras_in_float64():
    import keras
    case = dict(mode="log", window="hamming", padding="same", expand_dims=True)
    x = _stft_input(case, dtype="float64")
    theirs = keras.layers.STFTSpectrogram(**_stft(case), dtype="float64")
    expected = keras.ops.convert_to_numpy(theirs(x))
    ours = L.STFTSpectrogram(**_stft(case), dtype="float64")
    got = np.asarray(ours(x))
    assert got.dtype == np.float64
    for mine, keras_weight in zip(ours.get_weights(), theirs.weights):
        np.testing.assert_allclose(mine, keras.ops.convert_to_numpy(keras_weight), rtol=0, atol=1e-14)
    # Keras's torch backend returns this layer's float64 result in float32: compare at float32 precision.
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@needs_keras
@pytest.mark.parametrize("case", MEL_CASES, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_mel_spectrogram_matches_keras(case):
    import keras
    x = _signals((3, 500))
    theirs = keras.layers.MelSpectrogram(**case)
    expected = keras.ops.convert_to_numpy(theirs(x))
    ours = L.MelSpectrogram(**case)
    got = np.asarray(ours(x))
    assert got.shape == expected.shape == ours.compute_output_shape(x.shape)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * np.max(np.abs(expected)))
    np.testing.assert_allclose(np.asarray(ours(x[0])), keras.ops.convert_to_numpy(theirs(x[0])), rtol=0,
                               atol=1e-5 * np.max(np.abs(expected)))
    assert _config(ours) == _config(theirs)


@needs_keras
def test_mel_filter_bank_matches_keras():
    import keras
    layer = keras.layers.MelSpectrogram()
    for bins, mels, rate, low, high in [(65, 20, 8000, 20.0, 4000.0), (1025, 128, 16000, 20.0, 8000),
                                        (129, 40, 22050, 300.0, 6000.0)]:
        expected = keras.ops.convert_to_numpy(layer.linear_to_mel_weight_matrix(mels, bins, rate, low, high))
        np.testing.assert_allclose(mel_weight_matrix(mels, bins, rate, low, high), expected, rtol=0, atol=5e-5)


@needs_keras
@pytest.mark.parametrize("name", WINDOWS)
def test_windows_match_scipy(name):
    import scipy.signal
    for length in (1, 2, 7, 16):
        for periodic in (False, True):
            np.testing.assert_allclose(window_values(name, length, periodic),
                                       scipy.signal.get_window(name, length, periodic), rtol=0, atol=1e-12)


def test_hann_window_and_mel_filter_values():
    np.testing.assert_allclose(window_values("hann", 5), [0, 0.5, 1, 0.5, 0], atol=1e-15)
    np.testing.assert_allclose(window_values("han", 4, periodic=True), [0, 0.5, 1, 0.5], atol=1e-15)
    bank = mel_weight_matrix(4, 257, 8000, 0.0, 4000.0)
    assert bank.shape == (257, 4) and bank.dtype == np.float32
    assert np.all(bank[0] == 0) and np.all(bank >= 0)
    # Triangles peaking at 1 between bin centres: the best-placed bin is within a bin's slope of the peak.
    np.testing.assert_allclose(bank.max(axis=0), 1.0, atol=0.1)
    # Each filter peaks at a higher frequency than the previous one.
    assert np.all(np.diff(np.argmax(bank, axis=0)) > 0)


def test_stft_spectrogram_magnitude_is_the_windowed_fft():
    x = _signals((1, 64, 1), dtype="float64")
    layer = L.STFTSpectrogram(mode="magnitude", frame_length=16, frame_step=8, window="hann", scaling=None,
                              dtype="float64")
    got = np.asarray(layer(x))
    frames = np.stack([x[0, s:s + 16, 0] for s in range(0, 64 - 16 + 1, 8)])
    np.testing.assert_allclose(got[0], np.abs(np.fft.rfft(frames * window_values("hann", 16), axis=-1)),
                               rtol=1e-10, atol=1e-10)


def test_mel_spectrogram_power_is_the_stft_power_through_the_filters():
    x = _signals((2, 300), dtype="float64")
    layer = L.MelSpectrogram(fft_length=64, sequence_stride=16, num_mel_bins=8, sampling_rate=8000,
                             power_to_db=False, dtype="float64")
    padded = np.pad(x, [(0, 0), (32, 32)], mode="reflect")
    frames = np.stack([padded[:, s:s + 64] for s in range(0, padded.shape[1] - 64 + 1, 16)], axis=1)
    power = np.abs(np.fft.rfft(frames * window_values("hann", 64, periodic=True), axis=-1)) ** 2
    expected = np.swapaxes(power @ mel_weight_matrix(8, 33, 8000, 20.0, 4000).astype(np.float64), -1, -2)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-10, atol=1e-10)


def test_mel_spectrogram_floors_top_db_below_the_batch_maximum():
    x = _signals((2, 300))
    x[1] *= 1e-3
    out = np.asarray(L.MelSpectrogram(fft_length=64, sequence_stride=16, num_mel_bins=8, top_db=20.0)(x))
    np.testing.assert_allclose(out.min(), out.max() - 20.0, rtol=1e-6)
    assert np.all(out[1] == out.min())


@pytest.mark.parametrize("mode", ["log", "psd", "angle", "stft"])
def test_stft_spectrogram_gradients(mode):
    case = dict(mode=mode, frame_length=8, frame_step=4, fft_length=8, padding="same", dtype="float64")
    layer = L.STFTSpectrogram(**case)
    x = _signals((1, 20, 2), seed=1, dtype="float64")
    # Trained kernels: noise moves the imaginary parts of the DC and Nyquist bins off 0, where the angle jumps.
    layer.build(x.shape)
    layer.set_weights([w + 0.01 * _signals(w.shape, seed=4, dtype="float64") for w in layer.get_weights()])
    check_gradients(lambda xs: layer(xs[0]), [x], rtol=1e-5, atol=1e-6)
    check_variable_gradients(lambda: layer(x), layer.trainable_weights, rtol=1e-5, atol=1e-6)


def test_stft_spectrogram_gradients_expanded_channels_first():
    layer = L.STFTSpectrogram(mode="magnitude", frame_length=8, frame_step=3, expand_dims=True,
                              data_format="channels_first", dtype="float64")
    x = _signals((1, 2, 17), seed=2, dtype="float64")
    check_gradients(lambda xs: layer(xs[0]), [x], rtol=1e-5, atol=1e-6)
    check_variable_gradients(lambda: layer(x), layer.trainable_weights, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [dict(), dict(power_to_db=False, mag_exp=1.0, window="hamming")])
def test_mel_spectrogram_gradients(case):
    layer = L.MelSpectrogram(fft_length=16, sequence_stride=8, num_mel_bins=4, sampling_rate=8000, dtype="float64",
                             **dict(dict(top_db=200.0), **case))
    check_gradients(lambda xs: layer(xs[0]), [_signals((1, 40), seed=3, dtype="float64")], rtol=1e-5, atol=1e-6)


def test_trainable_false_keeps_the_kernels_out_of_training():
    layer = L.STFTSpectrogram(frame_length=16, trainable=False)
    layer.build((None, 64, 1))
    assert layer.trainable_weights == [] and len(layer.non_trainable_weights) == 2
    assert [w.name for w in layer.weights] == ["real_kernel", "imag_kernel"]
    real_only = L.STFTSpectrogram(mode="real", frame_length=16)
    real_only.build((None, 64, 1))
    assert [w.name for w in real_only.weights] == ["real_kernel"]


def _audio_model():
    signals = kgraph.Input(shape=(128, 2))
    spectrum = L.STFTSpectrogram(frame_length=32, frame_step=16, padding="same")(signals)
    mel = L.MelSpectrogram(fft_length=32, sequence_stride=16, num_mel_bins=6, sampling_rate=8000)(
        L.Reshape((256,))(signals))
    merged = L.Concatenate()([L.Flatten()(spectrum), L.Flatten()(mel)])
    return kgraph.Model(signals, L.Dense(2)(merged))


def test_save_and_load_keep_predictions_and_config(tmp_path):
    model = _audio_model()
    [stft] = [layer for layer in model.layers if isinstance(layer, L.STFTSpectrogram)]
    assert stft.output.shape == (None, 8, 34)
    x = _signals((3, 128, 2))
    expected = model.predict(x, verbose=0)
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), expected)
    assert [layer.get_config() for layer in loaded.layers] == [layer.get_config() for layer in model.layers]


@needs_keras
def test_keras_loads_the_saved_model_and_computes_the_same(tmp_path):
    import keras
    model = _audio_model()
    model.save(tmp_path / "m.keras")
    theirs = keras.saving.load_model(tmp_path / "m.keras")
    x = _signals((2, 128, 2))
    # float32 log spectra and dB values of magnitude up to ~30: Keras's torch convolution rounds differently.
    np.testing.assert_allclose(theirs.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-4)


def test_a_layer_from_its_config_computes_the_same():
    layer = L.STFTSpectrogram(mode="psd", frame_length=20, frame_step=5, fft_length=32, window="hamming",
                              expand_dims=True)
    x = _signals((2, 60, 1))
    clone = L.STFTSpectrogram.from_config(layer.get_config())
    np.testing.assert_allclose(np.asarray(clone(x)), np.asarray(layer(x)), rtol=1e-6)
    mel = L.MelSpectrogram(fft_length=32, sequence_stride=8, num_mel_bins=5)
    np.testing.assert_array_equal(np.asarray(L.MelSpectrogram.from_config(mel.get_config())(x[:, :, 0])),
                                  np.asarray(mel(x[:, :, 0])))


def test_export_parity_at_batch_1_and_3():
    signals = kgraph.Input(shape=(80, 3))
    outputs = [L.STFTSpectrogram(mode=mode, frame_length=16, frame_step=8, fft_length=16, padding=padding,
                                 expand_dims=expand, data_format=fmt)(
        L.Permute((2, 1))(signals) if fmt == "channels_first" else signals)
        for mode, padding, expand, fmt in [("log", "valid", False, "channels_first"), ("stft", "same", True,
                                                                                      "channels_last")]]
    outputs.append(L.MelSpectrogram(fft_length=32, sequence_stride=10, num_mel_bins=6)(L.Reshape((240,))(signals)))
    assert_parity(kgraph.Model(signals, outputs), rtol=1e-5, atol=1e-5, batches=(1, 3))


def test_stft_spectrogram_exports_signals_of_any_length():
    signals = kgraph.Input(shape=(None, 2))
    outputs = [L.STFTSpectrogram(frame_length=16, frame_step=8)(signals),
               L.STFTSpectrogram(mode="psd", frame_length=16, frame_step=4, expand_dims=True)(signals)]
    model = kgraph.Model(signals, outputs)
    assert [tuple(o.shape) for o in model.outputs] == [(None, None, 18), (None, None, 9, 2)]

    def signals_of_70_samples(name, shape, dtype, rng):
        return rng.standard_normal((shape[0], 70, 2)).astype(dtype)

    assert_parity(model, sampler=signals_of_70_samples)


def test_mel_spectrogram_output_shape_counts_the_centred_frames():
    # 1 + samples // stride frames (Keras's compute_output_shape says one more when samples + 1 divides evenly).
    layer = L.MelSpectrogram(fft_length=64, sequence_stride=32, num_mel_bins=8)
    assert layer.compute_output_shape((2, 511)) == (2, 8, 16) == np.asarray(layer(_signals((2, 511)))).shape
    assert layer.compute_output_shape((None,)) == (8, None)


@pytest.mark.parametrize("kwargs, match", [
    (dict(mode="power"), "mode=power"),
    (dict(scaling="l2"), "scaling=l2"),
    (dict(padding="causal"), "padding=causal"),
    (dict(frame_length=16, frame_step=17), "frame_step=17"),
    (dict(frame_length=16, frame_step=0), "frame_step=0"),
    (dict(frame_length=16, fft_length=8), "fft_length=8"),
    (dict(frame_length=0), "frame_length=0"),
    (dict(window="welch"), "window='welch'"),
    (dict(frame_length=16, window=np.ones(8)), r"window shape=\(8,\)"),
    (dict(data_format="channels_middle"), "data_format=channels_middle"),
])
def test_stft_spectrogram_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        L.STFTSpectrogram(**kwargs)


def test_stft_spectrogram_rejects_integer_signals_and_short_signals():
    with pytest.raises(TypeError, match="input type=int32"):
        L.STFTSpectrogram(frame_length=8)(np.ones((1, 16, 1), dtype="int32"))
    with pytest.raises(ValueError, match="shorter than frame_length=32"):
        L.STFTSpectrogram(frame_length=32).compute_output_shape((None, 16, 1))
    with pytest.warns(UserWarning, match="fft_length=24"):
        L.STFTSpectrogram(frame_length=16, fft_length=24)


@pytest.mark.parametrize("kwargs, match", [
    (dict(fft_length=64, sequence_length=128), "sequence_length=128"),
    (dict(sequence_stride=0), "sequence_stride=0"),
    (dict(window="blackman"), "window=blackman"),
    (dict(fft_length=64, window=np.ones(32)), r"window shape=\(32,\)"),
])
def test_mel_spectrogram_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        L.MelSpectrogram(**kwargs)


def test_custom_window_array():
    window = np.linspace(0.1, 1.0, 16)
    x = _signals((1, 48, 1), dtype="float64")
    got = np.asarray(L.STFTSpectrogram(mode="real", frame_length=16, frame_step=16, window=window, scaling=None,
                                       dtype="float64")(x))
    np.testing.assert_allclose(got[0], np.fft.rfft(x[0, :, 0].reshape(3, 16) * window, axis=-1).real, atol=1e-10)
