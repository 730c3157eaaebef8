"""Training & evaluation with the built-in methods (keras-io guides/training_with_built_in_methods.py): the
MNIST model, compile with optimizer/loss/metric objects and with string names, fit with validation_data and
validation_split, the History, evaluate, predict; class_weight and sample_weight; EarlyStopping and
ModelCheckpoint callbacks; a learning-rate schedule (ExponentialDecay)."""
import keras
import numpy as np
from keras import layers


def get_uncompiled_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def get_compiled_model():
    model = get_uncompiled_model()
    model.compile(
        optimizer="rmsprop",
        loss="sparse_categorical_crossentropy",
        metrics=["sparse_categorical_accuracy"],
    )
    return model


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(7)

    # Stands in for keras.datasets.mnist.load_data().
    x_train = rng.integers(0, 256, size=(96, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=(96,), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(32, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, size=(32,), dtype=np.uint8)

    # Preprocess the data (these are NumPy arrays)
    x_train = x_train.reshape(len(x_train), 784).astype("float32") / 255
    x_test = x_test.reshape(len(x_test), 784).astype("float32") / 255
    y_train = y_train.astype("float32")
    y_test = y_test.astype("float32")

    # Reserve samples for validation
    x_val = x_train[-32:]
    y_val = y_train[-32:]
    x_train = x_train[:-32]
    y_train = y_train[:-32]

    model = get_uncompiled_model()
    model.compile(
        optimizer=keras.optimizers.RMSprop(),  # Optimizer
        # Loss function to minimize
        loss=keras.losses.SparseCategoricalCrossentropy(),
        # List of metrics to monitor
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    history = model.fit(x_train, y_train, batch_size=64, epochs=2, validation_data=(x_val, y_val), verbose=0)
    results = model.evaluate(x_test, y_test, batch_size=128, verbose=0)
    predictions = model.predict(x_test[:3], verbose=0)

    # String names, validation_split.
    model2 = get_compiled_model()
    model2.fit(x_train, y_train, batch_size=64, validation_split=0.2, epochs=1, verbose=0)

    # Class weights and sample weights.
    class_weight = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0,
                    # Set weight "2" for class "5", making this class 2x more important
                    5: 2.0, 6: 1.0, 7: 1.0, 8: 1.0, 9: 1.0}
    model3 = get_compiled_model()
    model3.fit(x_train, y_train, class_weight=class_weight, batch_size=64, epochs=1, verbose=0)
    sample_weight = np.ones(shape=(len(y_train),))
    sample_weight[y_train == 5] = 2.0
    model3.fit(x_train, y_train, sample_weight=sample_weight, batch_size=64, epochs=1, verbose=0)

    # Callbacks and a learning-rate schedule.
    initial_learning_rate = 0.1
    lr_schedule = keras.optimizers.schedules.ExponentialDecay(
        initial_learning_rate, decay_steps=100000, decay_rate=0.96, staircase=True
    )
    model4 = get_uncompiled_model()
    model4.compile(optimizer=keras.optimizers.RMSprop(learning_rate=lr_schedule),
                   loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"])
    callbacks = [
        keras.callbacks.EarlyStopping(
            # Stop training when `val_loss` is no longer improving
            monitor="val_loss",
            # "no longer improving" being defined as "no better than 1e-2 less"
            min_delta=1e-2,
            # "no longer improving" being further defined as "for at least 2 epochs"
            patience=2,
            verbose=1,
        ),
        keras.callbacks.ModelCheckpoint(
            filepath="mymodel_{epoch}.keras",
            save_best_only=True,  # Only save a model if `val_loss` has improved.
            monitor="val_loss",
            verbose=1,
        ),
    ]
    model4.fit(x_train, y_train, epochs=2, batch_size=64, callbacks=callbacks, validation_split=0.2, verbose=0)

    def probe(model):
        # The weighted evaluations, with the trained weights.
        weights = np.ones((len(y_test),))
        weights[y_test == 5] = 2.0
        return {"weighted": model.evaluate(x_test, y_test, sample_weight=weights, verbose=0, return_dict=True),
                "schedule": [float(lr_schedule(step)) for step in (0, 100000, 250000)]}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": predictions,
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), "epochs": history.epoch,
                   "results_len": len(results), "predictions_shape": list(predictions.shape)},
    }


if __name__ == "__main__":
    print(main())
