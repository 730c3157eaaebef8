"""Training & evaluation with the built-in methods (keras-io guides/training_with_built_in_methods.py):
custom losses (a function, a keras.losses.Loss subclass with a regularization factor), a custom metric
(keras.metrics.Metric subclass with add_variable, update_state, result, reset_state), losses added by a
layer (add_loss) and an endpoint layer computing the loss from targets given as inputs (compile without a
loss)."""
import keras
import numpy as np
from keras import layers, ops


def get_uncompiled_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def custom_mean_squared_error(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class CustomMSE(keras.losses.Loss):
    def __init__(self, regularization_factor=0.1, name="custom_mse"):
        super().__init__(name=name)
        self.regularization_factor = regularization_factor

    def call(self, y_true, y_pred):
        mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
        reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
        return mse + reg * self.regularization_factor


class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives.value

    def reset_state(self):
        # The state of the metric will be reset at the start of each epoch.
        self.true_positives.assign(0.0)


class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(ops.sum(inputs) * 0.1)
        return inputs  # Pass-through layer.


class LogisticEndpoint(keras.layers.Layer):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        # Compute the training-time loss value and add it
        # to the layer using `self.add_loss()`.
        loss = self.loss_fn(targets, logits, sample_weights)
        self.add_loss(loss)

        # Return the inference-time prediction tensor (for `.predict()`).
        return ops.softmax(logits)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(8)

    x_train = (rng.integers(0, 256, size=(64, 784)).astype("float32") / 255)
    y_train = rng.integers(0, 10, size=(64,)).astype("float32")

    model = get_uncompiled_model()
    model.compile(optimizer=keras.optimizers.Adam(), loss=custom_mean_squared_error)
    # We need to one-hot encode the labels to use MSE
    y_train_one_hot = ops.one_hot(y_train, num_classes=10)
    model.fit(x_train, y_train_one_hot, batch_size=64, epochs=1, verbose=0)

    model = get_uncompiled_model()
    model.compile(optimizer=keras.optimizers.Adam(), loss=CustomMSE())
    model.fit(x_train, y_train_one_hot, batch_size=64, epochs=1, verbose=0)

    model = get_uncompiled_model()
    model.compile(
        optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[CategoricalTruePositives()],
    )
    history = model.fit(x_train, y_train, batch_size=64, epochs=3, verbose=0)

    # A layer adding a loss, in a functional model.
    inputs = keras.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    # Insert activity regularization as a layer
    x = ActivityRegularizationLayer()(x)
    x = layers.Dense(64, activation="relu", name="dense_2")(x)
    outputs = layers.Dense(10, name="predictions")(x)
    reg_model = keras.Model(inputs=inputs, outputs=outputs)
    reg_model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    # The displayed loss will be much higher than before due to the regularization component.
    reg_model.fit(x_train, y_train, batch_size=64, epochs=1, verbose=0)

    # An endpoint layer: targets are inputs, compile without a loss.
    inputs = keras.Input(shape=(3,), name="inputs")
    targets = keras.Input(shape=(10,), name="targets")
    logits = keras.layers.Dense(10)(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    endpoint_model = keras.Model(inputs=[inputs, targets], outputs=predictions)
    endpoint_model.compile(optimizer="adam")  # No loss argument!
    data = {"inputs": rng.random((3, 3)), "targets": rng.random((3, 10))}
    endpoint_model.fit(data, verbose=0)

    def compiled_copy(model, **compile_args):
        copy = get_uncompiled_model()
        copy.set_weights(model.get_weights())
        copy.compile(optimizer="adam", **compile_args)
        return copy

    def probe(model):
        # The same trained weights under each loss and metric of the guide (each in a new model: a model
        # compiled again keeps reporting the metrics of its earlier compile in Keras 3.15, and so does its
        # clone_model copy).
        out = {}
        one_hot = ops.convert_to_numpy(y_train_one_hot)
        copy = compiled_copy(model, loss=custom_mean_squared_error)
        out["custom_fn"] = copy.evaluate(x_train, one_hot, verbose=0, return_dict=True)
        copy = compiled_copy(model, loss=CustomMSE())
        out["custom_mse"] = copy.evaluate(x_train, one_hot, verbose=0, return_dict=True)
        copy = compiled_copy(model, loss=keras.losses.SparseCategoricalCrossentropy(),
                             metrics=[CategoricalTruePositives()])
        weights = np.where(y_train == 5, 2.0, 1.0)
        out["ctp"] = copy.evaluate(x_train, y_train, verbose=0, return_dict=True)
        out["ctp_weighted"] = copy.evaluate(x_train, y_train, sample_weight=weights, verbose=0, return_dict=True)
        fixed = np.random.default_rng(12)
        reg_model.set_weights([fixed.normal(size=w.shape).astype("float32") * 0.1 for w in reg_model.get_weights()])
        out["activity_regularized"] = reg_model.evaluate(x_train, y_train, verbose=0, return_dict=True)
        endpoint_model.set_weights([fixed.normal(size=w.shape).astype("float32")
                                    for w in endpoint_model.get_weights()])
        out["endpoint"] = endpoint_model.evaluate(data, verbose=0, return_dict=True)
        out["endpoint_predict"] = endpoint_model.predict(data, verbose=0)
        return out

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_train[:4], verbose=0),
        "inputs": x_train[:8],
        "evaluate": (x_train, y_train),
        "probe": probe,
        "values": {"history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
