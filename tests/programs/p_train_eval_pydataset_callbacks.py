"""Training & evaluation with the built-in methods (keras-io guides/training_with_built_in_methods.py): training
from a keras.utils.PyDataset (and with workers), evaluating on one, a callback of one's own (LossHistory)
among the built-in ones (EarlyStopping, ModelCheckpoint, ReduceLROnPlateau)."""
import keras
import numpy as np
from keras import layers


def get_compiled_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(
        optimizer="rmsprop",
        loss="sparse_categorical_crossentropy",
        metrics=["sparse_categorical_accuracy"],
    )
    return model


class ExamplePyDataset(keras.utils.PyDataset):
    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x = x
        self.y = y
        self.batch_size = batch_size

    def __len__(self):
        return int(np.ceil(len(self.x) / float(self.batch_size)))

    def __getitem__(self, idx):
        batch_x = self.x[idx * self.batch_size : (idx + 1) * self.batch_size]
        batch_y = self.y[idx * self.batch_size : (idx + 1) * self.batch_size]
        return batch_x, batch_y


class LossHistory(keras.callbacks.Callback):
    def on_train_begin(self, logs):
        self.per_batch_losses = []

    def on_batch_end(self, batch, logs):
        self.per_batch_losses.append(logs.get("loss"))


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(10)

    x_train = (rng.integers(0, 256, size=(80, 784)).astype("float32") / 255)
    y_train = rng.integers(0, 10, size=(80,)).astype("float32")
    x_val = (rng.integers(0, 256, size=(32, 784)).astype("float32") / 255)
    y_val = rng.integers(0, 10, size=(32,)).astype("float32")

    train_py_dataset = ExamplePyDataset(x_train, y_train, batch_size=32)
    val_py_dataset = ExamplePyDataset(x_val, y_val, batch_size=32)

    model = get_compiled_model()
    loss_history = LossHistory()
    callbacks = [
        loss_history,
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=2),
        keras.callbacks.ModelCheckpoint(filepath="pydataset_model_{epoch}.keras"),
        keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=1),
    ]
    history = model.fit(train_py_dataset, validation_data=val_py_dataset, epochs=2, callbacks=callbacks, verbose=0)
    evaluated = model.evaluate(val_py_dataset, verbose=0, return_dict=True)

    # With workers (threads) fetching batches ahead.
    train_py_dataset = ExamplePyDataset(x_train, y_train, batch_size=32, workers=2)
    model.fit(train_py_dataset, epochs=1, verbose=0)

    def probe(model):
        return {"pydataset_evaluate": model.evaluate(val_py_dataset, verbose=0, return_dict=True),
                "pydataset_predict": model.predict(val_py_dataset, verbose=0)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_val[:4], verbose=0),
        "inputs": x_val,
        "evaluate": (x_val, y_val),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), "evaluate_keys": sorted(evaluated),
                   "per_batch_losses": len(loss_history.per_batch_losses), "len": len(val_py_dataset)},
    }


if __name__ == "__main__":
    print(main())
