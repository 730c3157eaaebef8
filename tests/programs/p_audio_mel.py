"""A small keyword classifier on MelSpectrogram features (keras.layers.MelSpectrogram as its documentation
shows it: batched waveforms in, (batch, num_mel_bins, frames) decibels out), the frames read by Conv1D after a
Permute, with GlobalAveragePooling1D and a softmax Dense; trained with fit, evaluated and predicted."""
import keras
import numpy as np
from keras import layers

SAMPLE_RATE = 8000


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(43)

    n = 32
    labels = rng.integers(0, 4, size=(n,))
    t = np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE
    chirp = np.sin(2 * np.pi * (300 + 400 * labels[:, None]) * t[None, :] * (1 + t[None, :]))
    waveforms = (chirp + 0.2 * rng.normal(size=chirp.shape)).astype("float32")

    inputs = keras.Input(shape=(SAMPLE_RATE // 2,))
    x = layers.MelSpectrogram(
        fft_length=512,
        sequence_stride=128,
        sequence_length=256,
        sampling_rate=SAMPLE_RATE,
        num_mel_bins=40,
    )(inputs)
    x = layers.Permute((2, 1))(x)
    x = layers.Normalization(axis=None, mean=-40.0, variance=400.0)(x)
    x = layers.Conv1D(32, 3, activation="relu")(x)
    x = layers.GlobalAveragePooling1D()(x)
    outputs = layers.Dense(4, activation="softmax")(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(waveforms, labels, batch_size=16, epochs=2, verbose=0)

    mel = layers.MelSpectrogram(fft_length=512, sequence_stride=128, sequence_length=256,
                                sampling_rate=SAMPLE_RATE, num_mel_bins=40)
    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(waveforms[:2], verbose=0),
        "inputs": waveforms[:6],
        "evaluate": (waveforms[:16], labels[:16]),
        "values": {"mel": mel(waveforms[:2]), "mel_shape": list(model.layers[1].output.shape)},
    }


if __name__ == "__main__":
    print(main())
