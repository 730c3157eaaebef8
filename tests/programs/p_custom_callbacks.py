"""Writing your own callbacks (keras-io guides/writing_your_own_callbacks.py): a callback overriding every
hook of fit, evaluate and predict (the order of the calls and the keys of their logs are compared with
Keras), LossAndErrorPrintingCallback, EarlyStoppingAtMinLoss (get_weights/set_weights/stop_training from a
callback) and CustomLearningRateScheduler (reading and setting model.optimizer.learning_rate)."""
import keras
import numpy as np

CALLS = []


class CustomCallback(keras.callbacks.Callback):
    def _record(self, hook, logs):
        CALLS.append(f"{hook}:{','.join(sorted(logs or {}))}")

    def on_train_begin(self, logs=None):
        self._record("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._record("on_train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._record(f"on_epoch_begin {epoch}", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._record(f"on_epoch_end {epoch}", logs)

    def on_test_begin(self, logs=None):
        self._record("on_test_begin", logs)

    def on_test_end(self, logs=None):
        self._record("on_test_end", logs)

    def on_predict_begin(self, logs=None):
        self._record("on_predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._record("on_predict_end", logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._record(f"on_train_batch_begin {batch}", logs)

    def on_train_batch_end(self, batch, logs=None):
        self._record(f"on_train_batch_end {batch}", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._record(f"on_test_batch_begin {batch}", logs)

    def on_test_batch_end(self, batch, logs=None):
        self._record(f"on_test_batch_end {batch}", logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._record(f"on_predict_batch_begin {batch}", logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._record(f"on_predict_batch_end {batch}", logs)


class LossAndErrorPrintingCallback(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        print("Up to batch {}, the average loss is {:7.2f}.".format(batch, logs["loss"]))

    def on_test_batch_end(self, batch, logs=None):
        print("Up to batch {}, the average loss is {:7.2f}.".format(batch, logs["loss"]))

    def on_epoch_end(self, epoch, logs=None):
        print(
            "The average loss for epoch {} is {:7.2f} "
            "and mean absolute error is {:7.2f}.".format(epoch, logs["loss"], logs["mean_absolute_error"])
        )


class EarlyStoppingAtMinLoss(keras.callbacks.Callback):
    """Stop training when the loss is at its min, i.e. the loss stops decreasing."""

    def __init__(self, patience=0):
        super().__init__()
        self.patience = patience
        # best_weights to store the weights at which the minimum loss occurs.
        self.best_weights = None

    def on_train_begin(self, logs=None):
        # The number of epoch it has waited when loss is no longer minimum.
        self.wait = 0
        # The epoch the training stops at.
        self.stopped_epoch = 0
        # Initialize the best as infinity.
        self.best = np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = logs.get("loss")
        if np.less(current, self.best):
            self.best = current
            self.wait = 0
            # Record the best weights if current results is better (less).
            self.best_weights = self.model.get_weights()
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                self.model.stop_training = True
                print("Restoring model weights from the end of the best epoch.")
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class CustomLearningRateScheduler(keras.callbacks.Callback):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule
        self.rates = []

    def on_epoch_begin(self, epoch, logs=None):
        if not hasattr(self.model.optimizer, "learning_rate"):
            raise ValueError('Optimizer must have a "learning_rate" attribute.')
        # Get the current learning rate from model's optimizer.
        lr = self.model.optimizer.learning_rate
        # Call schedule function to get the scheduled learning rate.
        scheduled_lr = self.schedule(epoch, lr)
        # Set the value back to the optimizer before this epoch starts
        self.model.optimizer.learning_rate = scheduled_lr
        print(f"\nEpoch {epoch}: Learning rate is {float(np.array(scheduled_lr))}.")
        self.rates.append(float(np.array(scheduled_lr)))


LR_SCHEDULE = [
    # (epoch to start, learning rate) tuples
    (3, 0.05),
    (6, 0.01),
    (9, 0.005),
    (12, 0.001),
]


def lr_schedule(epoch, lr):
    """Helper function to retrieve the scheduled learning rate based on epoch."""
    if epoch < LR_SCHEDULE[0][0] or epoch > LR_SCHEDULE[-1][0]:
        return lr
    for i in range(len(LR_SCHEDULE)):
        if epoch == LR_SCHEDULE[i][0]:
            return LR_SCHEDULE[i][1]
    return lr


def get_model():
    model = keras.Sequential()
    model.add(keras.layers.Dense(1))
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=0.1),
        loss="mean_squared_error",
        metrics=["mean_absolute_error"],
    )
    return model


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(14)
    CALLS.clear()

    # Stands in for the MNIST digits of the guide, flattened and scaled.
    x_train = rng.integers(0, 256, size=(64, 784)).astype("float32") / 255.0
    y_train = rng.integers(0, 10, size=(64,)).astype("float32")
    x_test = rng.integers(0, 256, size=(32, 784)).astype("float32") / 255.0
    y_test = rng.integers(0, 10, size=(32,)).astype("float32")

    model = get_model()
    model.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0, validation_split=0.5,
              callbacks=[CustomCallback()])
    res = model.evaluate(x_test, y_test, batch_size=16, verbose=0, callbacks=[CustomCallback()])
    res = model.predict(x_test, batch_size=16, callbacks=[CustomCallback()], verbose=0)

    model = get_model()
    model.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0, callbacks=[LossAndErrorPrintingCallback()])
    model.evaluate(x_test, y_test, batch_size=16, verbose=0, callbacks=[LossAndErrorPrintingCallback()])

    model = get_model()
    stopper = EarlyStoppingAtMinLoss(patience=1)
    model.fit(x_train, y_train, batch_size=16, steps_per_epoch=2, epochs=4, verbose=0,
              callbacks=[LossAndErrorPrintingCallback(), stopper])

    model = get_model()
    scheduler = CustomLearningRateScheduler(lr_schedule)
    history = model.fit(x_train, y_train, batch_size=32, epochs=15, verbose=0,
                        callbacks=[LossAndErrorPrintingCallback(), scheduler])

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_test[:4], verbose=0),
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "values": {"calls": list(CALLS), "rates": scheduler.rates, "epochs_run": len(history.epoch),
                   "predict_shape": list(res.shape),
                   "final_learning_rate": float(np.array(model.optimizer.learning_rate))},
    }


if __name__ == "__main__":
    print(main())
