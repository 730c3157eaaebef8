"""Speaker recognition (keras-io examples/audio/speaker_recognition_using_cnn.py): one-second speech clips of
five speakers mixed with background noise at an amplitude proportion, their FFT magnitudes (the first half:
the positive frequencies) fed to a functional 1D convnet of residual blocks (a 1x1 Conv1D shortcut, Conv1D
and ReLU Activations, Add, MaxPool1D), AveragePooling1D, Flatten, two ReLU Dense and a softmax Dense named
"output", compiled with "Adam", sparse categorical cross-entropy and accuracy, trained with EarlyStopping
(restore_best_weights) and ModelCheckpoint (monitor val_accuracy, save_best_only) and evaluated.
Changed to run without TensorFlow: the example reads WAV files and builds its batches with tf.data and tf.audio;
here the clips and noise chunks are synthetic NumPy arrays, and add_noise and audio_to_fft are written with
NumPy (np.random for tf.random.uniform, np.fft.fft for tf.signal.fft), so that both runs see the same arrays;
keras.ops.fft of the same clips is compared with NumPy's as a value. Keras 3's ModelCheckpoint saves whole
models only to a ".keras" file, so the example's "model.h5" is "model.keras".
Smaller: a sampling rate of 512 instead of 16000 (inputs of 256 frequencies instead of 8000), 40 training and
10 validation clips, 5 noise chunks, one epoch (the example's 100), batches of 16 (the example's 128).
The probe reads the first residual block's output through a sub-model."""
import keras
import numpy as np

# Percentage of samples to use for validation
VALID_SPLIT = 0.2

# Seed to use when shuffling the dataset and the noise
SHUFFLE_SEED = 43

# The sampling rate to use (the example's 16000): one second of audio is SAMPLING_RATE samples.
SAMPLING_RATE = 512

# The factor to multiply the noise with according to:
#   noisy_sample = sample + noise * prop * scale
#      where prop = sample_amplitude / noise_amplitude
SCALE = 0.5

BATCH_SIZE = 16
EPOCHS = 1

class_names = ["Benjamin_Netanyau", "Jens_Stoltenberg", "Julia_Gillard", "Magaret_Tarcher", "Nelson_Mandela"]


def load_audio(rng, n):
    """Stands in for the speakers' WAV files: (n, SAMPLING_RATE, 1) float32 clips and their speaker labels."""
    labels = rng.integers(0, len(class_names), size=(n,))
    t = np.arange(SAMPLING_RATE) / SAMPLING_RATE
    pitch = 20.0 + 15.0 * labels[:, None]
    audio = 0.4 * np.sin(2 * np.pi * pitch * t) + 0.05 * rng.normal(size=(n, SAMPLING_RATE))
    return audio[..., None].astype("float32"), labels


def add_noise(audio, noises=None, scale=0.5, rng=None):
    if noises is not None:
        # A random index for each clip, from 0 to the number of noise chunks that we have.
        rnd = rng.integers(0, noises.shape[0], size=(audio.shape[0],))
        noise = noises[rnd]

        # Get the amplitude proportion between the audio and the noise
        prop = np.max(audio, axis=1) / np.max(noise, axis=1)
        prop = np.repeat(np.expand_dims(prop, axis=1), audio.shape[1], axis=1)

        # Adding the rescaled noise to audio
        audio = audio + noise * prop * scale

    return audio.astype("float32")


def audio_to_fft(audio):
    # np.fft.fft applies the FFT on the innermost dimension: squeeze the channel axis, then expand it again
    audio = np.squeeze(audio, axis=-1)
    fft = np.fft.fft(audio.astype(np.complex64))
    fft = np.expand_dims(fft, axis=-1)

    # Return the absolute value of the first half of the FFT
    # which represents the positive frequencies
    return np.abs(fft[:, : (audio.shape[1] // 2), :]).astype("float32")


def residual_block(x, filters, conv_num=3, activation="relu"):
    # Shortcut
    s = keras.layers.Conv1D(filters, 1, padding="same")(x)
    for i in range(conv_num - 1):
        x = keras.layers.Conv1D(filters, 3, padding="same")(x)
        x = keras.layers.Activation(activation)(x)
    x = keras.layers.Conv1D(filters, 3, padding="same")(x)
    x = keras.layers.Add()([x, s])
    x = keras.layers.Activation(activation)(x)
    return keras.layers.MaxPool1D(pool_size=2, strides=2)(x)


def build_model(input_shape, num_classes):
    inputs = keras.layers.Input(shape=input_shape, name="input")

    x = residual_block(inputs, 16, 2)
    x = residual_block(x, 32, 2)
    x = residual_block(x, 64, 3)
    x = residual_block(x, 128, 3)
    x = residual_block(x, 128, 3)

    x = keras.layers.AveragePooling1D(pool_size=3, strides=3)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(256, activation="relu")(x)
    x = keras.layers.Dense(128, activation="relu")(x)

    outputs = keras.layers.Dense(num_classes, activation="softmax", name="output")(x)

    return keras.models.Model(inputs=inputs, outputs=outputs)


def keras_fft_magnitudes(audio):
    """audio_to_fft with keras.ops.fft (real and imaginary parts), as the example's tf.signal.fft computes it."""
    audio = keras.ops.squeeze(keras.ops.convert_to_tensor(audio), axis=-1)
    real, imag = keras.ops.fft((audio, keras.ops.zeros_like(audio)))
    magnitude = keras.ops.sqrt(keras.ops.square(real) + keras.ops.square(imag))
    return keras.ops.expand_dims(magnitude[:, : (audio.shape[1] // 2)], axis=-1)


def main():
    keras.utils.set_random_seed(1337)
    data_rng = np.random.default_rng(71)

    # Noise chunks of one second each (the example splits its background noise files into them).
    noises = (0.3 * data_rng.normal(size=(5, SAMPLING_RATE, 1))).astype("float32")
    audio, labels = load_audio(data_rng, 50)

    # Shuffle
    rng = np.random.RandomState(SHUFFLE_SEED)
    order = rng.permutation(len(audio))
    audio, labels = audio[order], labels[order]

    # Split into training and validation
    num_val_samples = int(VALID_SPLIT * len(audio))
    print("Using {} files for training.".format(len(audio) - num_val_samples))
    train_audio, train_labels = audio[:-num_val_samples], labels[:-num_val_samples]
    print("Using {} files for validation.".format(num_val_samples))
    valid_audio, valid_labels = audio[-num_val_samples:], labels[-num_val_samples:]

    # Add noise to the training set, then transform audio waves to the frequency domain
    x_train = audio_to_fft(add_noise(train_audio, noises, scale=SCALE, rng=data_rng))
    x_valid = audio_to_fft(valid_audio)

    model = build_model((SAMPLING_RATE // 2, 1), len(class_names))

    model.summary()

    # Compile the model using Adam's default learning rate
    model.compile(
        optimizer="Adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"]
    )

    # Add callbacks:
    # 'EarlyStopping' to stop training when the model is not enhancing anymore
    # 'ModelCheckPoint' to always keep the model that has the best val_accuracy
    model_save_filename = "model.keras"

    earlystopping_cb = keras.callbacks.EarlyStopping(patience=10, restore_best_weights=True)
    mdlcheckpoint_cb = keras.callbacks.ModelCheckpoint(
        model_save_filename, monitor="val_accuracy", save_best_only=True
    )

    history = model.fit(
        x_train,
        train_labels,
        batch_size=BATCH_SIZE,
        epochs=EPOCHS,
        validation_data=(x_valid, valid_labels),
        callbacks=[earlystopping_cb, mdlcheckpoint_cb],
        verbose=0,
    )

    print(model.evaluate(x_valid, valid_labels, verbose=0))

    # Demonstration: noisy validation clips, their FFT, the predicted speakers.
    test_audio = add_noise(valid_audio, noises, scale=SCALE, rng=data_rng)
    ffts = audio_to_fft(test_audio)
    y_pred = np.argmax(model.predict(ffts, verbose=0), axis=-1)
    print([class_names[i] for i in y_pred])

    def probe(m):
        first_pool = next(layer for layer in m.layers if isinstance(layer, keras.layers.MaxPooling1D))
        block = keras.Model(m.inputs, first_pool.output)
        return {"first_block": block.predict(ffts[:4], verbose=0)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": ffts,
        "evaluate": (x_valid, valid_labels),
        "probe": probe,
        "values": {"history_keys": sorted(history.history),
                   "keras_fft": keras_fft_magnitudes(test_audio[:3]),
                   "numpy_fft": ffts[:3],
                   "checkpoint_layers": len(keras.models.load_model(model_save_filename).layers)},
    }


if __name__ == "__main__":
    print(main())
