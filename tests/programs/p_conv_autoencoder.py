"""Convolutional autoencoder for image denoising (keras-io examples/vision/autoencoder.py): the example's
preprocess() and noise() helpers, a Conv2D/MaxPooling2D encoder and a Conv2DTranspose decoder built with
`from keras.models import Model` (with `from keras.datasets import mnist` imported, as the example does),
binary_crossentropy, trained to reconstruct and then to denoise."""
import keras
import numpy as np
from keras import layers
from keras.datasets import mnist  # noqa: F401  (as the example imports it; the data here is synthetic)
from keras.models import Model


def preprocess(array):
    """Normalizes the supplied array and reshapes it."""
    array = array.astype("float32") / 255.0
    array = np.reshape(array, (len(array), 28, 28, 1))
    return array


def noise(array, rng):
    """Adds random noise to each image in the supplied array."""
    noise_factor = 0.4
    noisy_array = array + noise_factor * rng.normal(loc=0.0, scale=1.0, size=array.shape)
    return np.clip(noisy_array, 0.0, 1.0)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(29)

    # Stands in for keras.datasets.mnist.load_data().
    train_data = rng.integers(0, 256, size=(32, 28, 28), dtype=np.uint8)
    test_data = rng.integers(0, 256, size=(16, 28, 28), dtype=np.uint8)

    # Normalize and reshape the data
    train_data = preprocess(train_data)
    test_data = preprocess(test_data)

    # Create a copy of the data with added noise
    noisy_train_data = noise(train_data, rng)
    noisy_test_data = noise(test_data, rng)

    input = layers.Input(shape=(28, 28, 1))

    # Encoder
    x = layers.Conv2D(32, (3, 3), activation="relu", padding="same")(input)
    x = layers.MaxPooling2D((2, 2), padding="same")(x)
    x = layers.Conv2D(32, (3, 3), activation="relu", padding="same")(x)
    x = layers.MaxPooling2D((2, 2), padding="same")(x)

    # Decoder
    x = layers.Conv2DTranspose(32, (3, 3), strides=2, activation="relu", padding="same")(x)
    x = layers.Conv2DTranspose(32, (3, 3), strides=2, activation="relu", padding="same")(x)
    x = layers.Conv2D(1, (3, 3), activation="sigmoid", padding="same")(x)

    # Autoencoder
    autoencoder = Model(input, x)
    autoencoder.compile(optimizer="adam", loss="binary_crossentropy")
    autoencoder.summary()

    autoencoder.fit(
        x=train_data,
        y=train_data,
        epochs=1,
        batch_size=16,
        shuffle=True,
        validation_data=(test_data, test_data),
        verbose=0,
    )
    history = autoencoder.fit(
        x=noisy_train_data,
        y=train_data,
        epochs=1,
        batch_size=16,
        shuffle=True,
        validation_data=(noisy_test_data, test_data),
        verbose=0,
    )
    predictions = autoencoder.predict(noisy_test_data, verbose=0)

    return {
        "model": autoencoder,
        "loss": history.history["loss"][-1],
        "predictions": predictions[:2],
        "inputs": noisy_test_data[:6],
        "evaluate": (noisy_test_data, test_data),
        "values": {"output_shape": list(autoencoder.output_shape)},
    }


if __name__ == "__main__":
    print(main())
