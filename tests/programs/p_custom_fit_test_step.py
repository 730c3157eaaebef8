"""Customizing what happens in fit() (keras-io guides/custom_train_step_in_*.py), "Providing your own
evaluation step": a Model subclass overriding only test_step(data), which needs no gradients and so is the
same code on every backend (compute_loss, self.metrics, metric.update_state/result), with fit() unchanged
and a sample-weighted evaluate()."""
import keras
import numpy as np


class CustomModel(keras.Model):
    def test_step(self, data):
        # Unpack the data
        x, y = data
        # Compute predictions
        y_pred = self(x, training=False)
        # Updates the metrics tracking the loss
        loss = self.compute_loss(y=y, y_pred=y_pred)
        # Update the metrics.
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        # Return a dict mapping metric names to current value.
        # Note that it will include the loss (tracked in self.metrics).
        return {m.name: m.result() for m in self.metrics}


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(26)

    # Construct an instance of CustomModel
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(loss="mse", metrics=["mae"])

    # Evaluate with our custom test_step
    x = rng.random((64, 32))
    y = rng.random((64, 1))
    history = model.fit(x, y, epochs=2, verbose=0)
    evaluated = model.evaluate(x, y, verbose=0)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x[:4], verbose=0),
        "inputs": x[:8],
        "evaluate": (x, y),
        "values": {"history_keys": sorted(history.history), "evaluated_len": len(evaluated)},
    }


if __name__ == "__main__":
    print(main())
