"""Audio classification with the STFTSpectrogram layer (keras-io examples/audio/stft.py): raw waveforms in,
three STFTSpectrogram layers (mode="log", frame lengths of 30, 40 and 50 ms, a 15 ms step, padding="same",
expand_dims=True) concatenated as the channels of one image, an image model with max pooling, Dropout and a
logit Dense; trained with the spectrogram layers frozen, then fine-tuned with them trainable.
The example runs 16 kHz ESC-10 clips through an ImageNet MobileNet with fft_length=2048; here the clips are
0.5 s at 8 kHz, fft_length=512, and a small convolutional network stands in for MobileNet (no download)."""
import keras
import numpy as np

SAMPLE_RATE = 8000
NUM_CLASSES = 10


def build_model(input_shape):
    inputs = keras.layers.Input(shape=input_shape)
    spectrograms = [
        keras.layers.STFTSpectrogram(
            mode="log",
            frame_length=SAMPLE_RATE * frame_size // 1000,
            frame_step=SAMPLE_RATE * 15 // 1000,
            fft_length=512,
            padding="same",
            expand_dims=True,
            trainable=False,
        )(inputs)
        for frame_size in [30, 40, 50]
    ]
    multi_spectrograms = keras.layers.Concatenate(axis=-1)(spectrograms)
    # Stands in for keras.applications.MobileNet(include_top=False, pooling="max").
    x = keras.layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(multi_spectrograms)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
    output = keras.layers.GlobalMaxPooling2D()(x)
    output = keras.layers.Dropout(0.5)(output)
    output = keras.layers.Dense(NUM_CLASSES)(output)
    return keras.Model(inputs, output)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(42)

    # Stands in for the ESC-10 clips: tones of a class-dependent pitch in noise, shape (samples, 1).
    n = 24
    labels = rng.integers(0, NUM_CLASSES, size=(n,))
    t = np.arange(SAMPLE_RATE // 2) / SAMPLE_RATE
    audio = np.sin(2 * np.pi * (200 + 150 * labels[:, None]) * t[None, :]) + 0.3 * rng.normal(size=(n, t.size))
    audio = audio[..., None].astype("float32")

    model = build_model(audio.shape[1:])
    model.summary()
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(audio, labels, batch_size=8, epochs=1, verbose=0)

    # Fine-tune the spectrogram kernels too.
    for layer in model.layers:
        if isinstance(layer, keras.layers.STFTSpectrogram):
            layer.trainable = True
    model.compile(
        optimizer=keras.optimizers.Adam(1e-5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    history = model.fit(audio, labels, batch_size=8, epochs=1, verbose=0)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(audio[:2], verbose=0),
        "inputs": audio[:6],
        "evaluate": (audio[:12], labels[:12]),
        "values": {"spectrogram_shape": list(model.layers[4].output.shape),
                   "trainable_weights": len(model.trainable_weights)},
    }


if __name__ == "__main__":
    print(main())
