"""Zoo models of the audio layers: STFTSpectrogram (strided convolutions) and MelSpectrogram (the stft op)."""
import kgraph
from kgraph import layers as L
from tests.export.zoo import register_zoo_model, train_briefly


@register_zoo_model("audio_stft_spectrogram")
def audio_stft_spectrogram():
    """Two-channel signals through four trained STFTSpectrograms: log magnitude with "same" padding, a
    channels_first power spectral density expanded to an image, real and imaginary bins, and phase angles; pooled
    into one Dense head beside the raw spectrogram outputs."""
    signals = kgraph.Input(shape=(96, 2), name="signals")
    log = L.STFTSpectrogram(frame_length=16, frame_step=8, padding="same")(signals)
    psd = L.STFTSpectrogram(mode="psd", frame_length=16, frame_step=16, window="hamming", periodic=True,
                            expand_dims=True, data_format="channels_first")(L.Permute((2, 1))(signals))
    stft = L.STFTSpectrogram(mode="stft", frame_length=12, frame_step=6, fft_length=16, scaling="spectrum")(signals)
    angle = L.STFTSpectrogram(mode="angle", frame_length=16, frame_step=8, window=None, expand_dims=True)(signals)
    pooled = L.Concatenate()([L.GlobalAveragePooling1D()(log), L.GlobalAveragePooling1D()(stft)])
    head = L.Dense(3)(pooled)
    return train_briefly(kgraph.Model(signals, [head, psd, angle], name="audio_stft_spectrogram"))


@register_zoo_model("audio_mel_spectrogram", min_opset=17)
def audio_mel_spectrogram():
    """Log-mel (dB, floored 40 dB below the batch maximum) and magnitude-mel spectrograms of one signal, the first
    feeding a Dense head."""
    signals = kgraph.Input(shape=(240,), name="signals")
    decibels = L.MelSpectrogram(fft_length=64, sequence_stride=16, num_mel_bins=10, sampling_rate=8000,
                                top_db=40.0)(signals)
    magnitude = L.MelSpectrogram(fft_length=32, sequence_stride=12, sequence_length=24, window="hamming",
                                 num_mel_bins=6, sampling_rate=8000, power_to_db=False, mag_exp=1.0)(signals)
    head = L.Dense(2)(L.Flatten()(decibels))
    return train_briefly(kgraph.Model(signals, [head, magnitude], name="audio_mel_spectrogram"))
