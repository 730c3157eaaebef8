"""Simple MNIST convnet (keras-io examples/vision/mnist_convnet.py): uint8 digits scaled and expanded to
(28, 28, 1), one-hot labels with keras.utils.to_categorical, a Sequential convnet (Conv2D, MaxPooling2D,
Flatten, Dropout, softmax Dense), categorical_crossentropy with Adam, fit with validation_split, evaluate."""
import keras
import numpy as np
from keras import layers


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(27)

    # Model / data parameters
    num_classes = 10
    input_shape = (28, 28, 1)

    # Load the data and split it between train and test sets
    # (stands in for keras.datasets.mnist.load_data()).
    x_train = rng.integers(0, 256, size=(64, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=(64,), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(16, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, size=(16,), dtype=np.uint8)

    # Scale images to the [0, 1] range
    x_train = x_train.astype("float32") / 255
    x_test = x_test.astype("float32") / 255
    # Make sure images have shape (28, 28, 1)
    x_train = np.expand_dims(x_train, -1)
    x_test = np.expand_dims(x_test, -1)
    print("x_train shape:", x_train.shape)

    # convert class vectors to binary class matrices
    y_train = keras.utils.to_categorical(y_train, num_classes)
    y_test = keras.utils.to_categorical(y_test, num_classes)

    model = keras.Sequential(
        [
            keras.Input(shape=input_shape),
            layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            layers.MaxPooling2D(pool_size=(2, 2)),
            layers.Flatten(),
            layers.Dropout(0.5),
            layers.Dense(num_classes, activation="softmax"),
        ]
    )
    model.summary()

    batch_size = 128
    epochs = 2

    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=batch_size, epochs=epochs, validation_split=0.1, verbose=0)

    score = model.evaluate(x_test, y_test, verbose=0)
    print("Test loss:", score[0])
    print("Test accuracy:", score[1])

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_test[:4], verbose=0),
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "values": {"history_keys": sorted(history.history), "y_train_row": y_train[0],
                   "params": model.count_params()},
    }


if __name__ == "__main__":
    print(main())
