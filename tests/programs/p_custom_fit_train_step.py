"""Customizing what happens in fit() with PyTorch (keras-io guides/custom_train_step_in_torch.py, the guide for
the torch backend, which is the backend the Keras reference here runs): a CustomModel overriding
train_step(data) (self.zero_grad(), self.compute_loss, loss.backward(), v.value.grad, optimizer.apply,
self.metrics updated by hand) and test_step(data), used through the plain fit() and evaluate()."""
import keras
import numpy as np
import torch


class CustomModel(keras.Model):
    def train_step(self, data):
        # Unpack the data. Its structure depends on your model and
        # on what you pass to `fit()`.
        x, y = data

        # Call torch.nn.Module.zero_grad() to clear the leftover gradients
        # for the weights from the previous train step.
        self.zero_grad()

        # Compute loss
        y_pred = self(x, training=True)  # Forward pass
        loss = self.compute_loss(y=y, y_pred=y_pred)

        # Call torch.Tensor.backward() on the loss to compute gradients
        # for the weights.
        loss.backward()

        trainable_weights = [v for v in self.trainable_weights]
        gradients = [v.value.grad for v in trainable_weights]

        # Update weights
        with torch.no_grad():
            self.optimizer.apply(gradients, trainable_weights)

        # Update metrics (includes the metric that tracks the loss)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)

        # Return a dict mapping metric names to current value
        # Note that it will include the loss (tracked in self.metrics).
        return {m.name: m.result() for m in self.metrics}

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
    rng = np.random.default_rng(25)

    # Construct and compile an instance of CustomModel
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])

    # Just use `fit` as usual
    x = rng.random((64, 32))
    y = rng.random((64, 1))
    history = model.fit(x, y, epochs=3, verbose=0)
    evaluated = model.evaluate(x, y, verbose=0, return_dict=True)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x[:4], verbose=0),
        "inputs": x[:8],
        "evaluate": (x, y),
        "values": {"history_keys": sorted(history.history), "evaluate_keys": sorted(evaluated)},
    }


if __name__ == "__main__":
    print(main())
