"""Timeseries classification from scratch (keras-io examples/timeseries/timeseries_classification_from_scratch.py):
FordA-shaped univariate series (500 steps, labels -1/1 mapped to 0/1), a fully convolutional network of three
Conv1D + BatchNormalization + ReLU blocks, GlobalAveragePooling1D and a softmax Dense; ModelCheckpoint
(save_best_only), ReduceLROnPlateau and EarlyStopping callbacks, validation_split, and the best model loaded
back with keras.models.load_model for evaluation."""
import keras
import numpy as np


def readucr(rng, n):
    """Stands in for the example's readucr(): FordA rows, a label (-1 or 1) and 500 values."""
    y = rng.choice([-1.0, 1.0], size=(n,))
    t = np.linspace(0, 8 * np.pi, 500)
    x = np.sin(t[None, :] * (1.5 + 0.5 * y[:, None])) + 0.3 * rng.normal(size=(n, 500))
    return x, y.astype(int)


def make_model(input_shape, num_classes):
    input_layer = keras.layers.Input(input_shape)

    conv1 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)

    conv2 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)

    conv3 = keras.layers.Conv1D(filters=64, kernel_size=3, padding="same")(conv2)
    conv3 = keras.layers.BatchNormalization()(conv3)
    conv3 = keras.layers.ReLU()(conv3)

    gap = keras.layers.GlobalAveragePooling1D()(conv3)

    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)

    return keras.models.Model(inputs=input_layer, outputs=output_layer)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(33)

    x_train, y_train = readucr(rng, 40)
    x_test, y_test = readucr(rng, 16)

    x_train = x_train.reshape((x_train.shape[0], x_train.shape[1], 1))
    x_test = x_test.reshape((x_test.shape[0], x_test.shape[1], 1))

    num_classes = len(np.unique(y_train))

    idx = rng.permutation(len(x_train))
    x_train = x_train[idx]
    y_train = y_train[idx]

    y_train[y_train == -1] = 0
    y_test[y_test == -1] = 0

    model = make_model(input_shape=x_train.shape[1:], num_classes=num_classes)

    epochs = 2
    batch_size = 32

    callbacks = [
        keras.callbacks.ModelCheckpoint("best_model.keras", save_best_only=True, monitor="val_loss"),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=20, min_lr=0.0001),
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=50, verbose=1),
    ]
    model.compile(
        optimizer="adam",
        loss="sparse_categorical_crossentropy",
        metrics=["sparse_categorical_accuracy"],
    )
    history = model.fit(
        x_train,
        y_train,
        batch_size=batch_size,
        epochs=epochs,
        callbacks=callbacks,
        validation_split=0.2,
        verbose=0,
    )

    model = keras.models.load_model("best_model.keras")

    test_loss, test_acc = model.evaluate(x_test, y_test, verbose=0)

    print("Test accuracy", test_acc)
    print("Test loss", test_loss)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_test[:4], verbose=0),
        "inputs": x_test[:8],
        "evaluate": (x_test, y_test),
        "values": {"history_keys": sorted(history.history), "num_classes": num_classes},
    }


if __name__ == "__main__":
    print(main())
