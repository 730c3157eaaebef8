"""The Functional API (keras-io guides/functional_api.py): the MNIST MLP, training, evaluation and inference,
save and load, serialization of the config, and "Extend the API using custom layers" (CustomDense with
get_config, rebuilt with Model.from_config and custom_objects)."""
import keras
import numpy as np
from keras import layers, ops


class CustomDense(layers.Layer):
    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(
            shape=(input_shape[-1], self.units),
            initializer="random_normal",
            trainable=True,
        )
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal", trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {"units": self.units}


def load_data(rng, n_train=64, n_test=32):
    """Stands in for keras.datasets.mnist.load_data(): uint8 images and labels."""
    x_train = rng.integers(0, 256, size=(n_train, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=(n_train,), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(n_test, 28, 28), dtype=np.uint8)
    y_test = rng.integers(0, 10, size=(n_test,), dtype=np.uint8)
    return (x_train, y_train), (x_test, y_test)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(0)

    inputs = keras.Input(shape=(784,))
    dense = layers.Dense(64, activation="relu")
    x = dense(inputs)
    x = layers.Dense(64, activation="relu")(x)
    outputs = layers.Dense(10)(x)
    model = keras.Model(inputs=inputs, outputs=outputs, name="mnist_model")
    model.summary()

    (x_train, y_train), (x_test, y_test) = load_data(rng)
    x_train = x_train.reshape(len(x_train), 784).astype("float32") / 255
    x_test = x_test.reshape(len(x_test), 784).astype("float32") / 255

    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=keras.optimizers.RMSprop(),
        metrics=["accuracy"],
    )
    history = model.fit(x_train, y_train, batch_size=64, epochs=2, validation_split=0.2, verbose=0)
    test_scores = model.evaluate(x_test, y_test, verbose=0)
    print("Test loss:", test_scores[0])
    print("Test accuracy:", test_scores[1])

    model.save("my_model.keras")
    restored = keras.models.load_model("my_model.keras")
    restored_equal = bool(np.allclose(restored.predict(x_test, verbose=0), model.predict(x_test, verbose=0),
                                      atol=1e-6))

    # The config round trip and a layer of one's own.
    config = model.get_config()
    rebuilt = keras.Model.from_config(config)

    inputs = keras.Input((4,))
    outputs = CustomDense(10)(inputs)
    custom_model = keras.Model(inputs, outputs)
    custom_config = custom_model.get_config()
    new_model = keras.Model.from_config(custom_config, custom_objects={"CustomDense": CustomDense})

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_test[:4], verbose=0),
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "values": {
            "history_keys": sorted(history.history),
            "test_scores_len": len(test_scores),
            "restored_equal": restored_equal,
            "layer_names": [layer.name for layer in model.layers],
            "rebuilt_layer_classes": [type(layer).__name__ for layer in rebuilt.layers],
            "rebuilt_output_shape": list(rebuilt.output_shape),
            "new_model_weight_shapes": [list(w.shape) for w in new_model.get_weights()],
            "count_params": model.count_params(),
        },
    }


if __name__ == "__main__":
    print(main())
