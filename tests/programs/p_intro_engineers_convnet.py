"""Introduction to Keras for engineers (keras-io guides/intro_to_keras_for_engineers.py), first part: the
MNIST convnet as a Sequential model, compiled with Adam, SparseCategoricalCrossentropy and a named metric,
fit with validation_split and the ModelCheckpoint and EarlyStopping callbacks, evaluated, saved to
final_model.keras, loaded with keras.saving.load_model and used for predictions."""
import keras
import numpy as np


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(23)

    # Load the data and split it between train and test sets
    # (stands in for keras.datasets.mnist.load_data()).
    x_train = rng.integers(0, 256, size=(48, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=(48,), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(16, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, size=(16,), dtype=np.uint8)

    # Scale images to the [0, 1] range
    x_train = x_train.astype("float32") / 255
    x_test = x_test.astype("float32") / 255
    # Make sure images have shape (28, 28, 1)
    x_train = np.expand_dims(x_train, -1)
    x_test = np.expand_dims(x_test, -1)

    # Model parameters
    num_classes = 10
    input_shape = (28, 28, 1)

    model = keras.Sequential(
        [
            keras.layers.Input(shape=input_shape),
            keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            keras.layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
            keras.layers.MaxPooling2D(pool_size=(2, 2)),
            keras.layers.Conv2D(128, kernel_size=(3, 3), activation="relu"),
            keras.layers.Conv2D(128, kernel_size=(3, 3), activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(num_classes, activation="softmax"),
        ]
    )
    model.summary()

    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(),
        optimizer=keras.optimizers.Adam(learning_rate=1e-3),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="acc"),
        ],
    )

    batch_size = 16
    epochs = 2

    callbacks = [
        keras.callbacks.ModelCheckpoint(filepath="model_at_epoch_{epoch}.keras"),
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=2),
    ]

    history = model.fit(
        x_train,
        y_train,
        batch_size=batch_size,
        epochs=epochs,
        validation_split=0.15,
        callbacks=callbacks,
        verbose=0,
    )
    score = model.evaluate(x_test, y_test, verbose=0)

    model.save("final_model.keras")
    model = keras.saving.load_model("final_model.keras")
    predictions = model.predict(x_test, verbose=0)

    import os

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": predictions,
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "values": {"history_keys": sorted(history.history), "score_len": len(score),
                   "checkpoints": sorted(f for f in os.listdir(".") if f.startswith("model_at_epoch_"))},
    }


if __name__ == "__main__":
    print(main())
