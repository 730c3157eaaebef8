"""Save, serialize, and export models (keras-io guides/serialization_and_saving.py): model.save() and
keras.models.load_model() of .keras files, custom objects registered with register_keras_serializable (a
layer and an activation function) or passed as custom_objects, get_config()/from_config() of layers,
Sequential and functional models, to_json()/model_from_json(), get_weights()/set_weights() between layers,
save_weights()/load_weights() and keras.saving.serialize_keras_object."""
import keras
import numpy as np


@keras.saving.register_keras_serializable(package="MyLayers")
class CustomLayer(keras.layers.Layer):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {"factor": self.factor}


@keras.saving.register_keras_serializable(package="my_package", name="custom_fn")
def custom_fn(x):
    return x**2


def get_model():
    inputs = keras.Input(shape=(4,))
    mid = CustomLayer(0.5)(inputs)
    outputs = keras.layers.Dense(1, activation=custom_fn)(mid)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="rmsprop", loss="mean_squared_error")
    return model


def get_simple_model():
    inputs = keras.Input(shape=(32,))
    outputs = keras.layers.Dense(1)(inputs)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(), loss="mean_squared_error")
    return model


def create_layer():
    layer = keras.layers.Dense(64, activation="relu", name="dense_2")
    layer.build((None, 784))
    return layer


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(12)

    model = get_simple_model()
    test_input = rng.random((48, 32))
    test_target = rng.random((48, 1))
    model.fit(test_input, test_target, verbose=0)
    model.save("my_model.keras")
    reconstructed_model = keras.models.load_model("my_model.keras")
    np.testing.assert_allclose(model.predict(test_input, verbose=0), reconstructed_model.predict(test_input, verbose=0))

    # Custom objects.
    model = get_model()
    x = rng.random((32, 4)).astype("float32")
    y = rng.random((32, 1)).astype("float32")
    history = model.fit(x, y, verbose=0)
    model.save("custom_model.keras")
    reconstructed_model = keras.models.load_model("custom_model.keras")
    np.testing.assert_allclose(model.predict(x, verbose=0), reconstructed_model.predict(x, verbose=0))
    reconstructed_model = keras.models.load_model(
        "custom_model.keras", custom_objects={"CustomLayer": CustomLayer, "custom_fn": custom_fn}
    )

    # Configs.
    layer = keras.layers.Dense(3, activation="relu")
    layer_config = layer.get_config()
    new_layer = keras.layers.Dense.from_config(layer_config)

    sequential = keras.Sequential([keras.Input((32,)), keras.layers.Dense(1)])
    config = sequential.get_config()
    new_sequential = keras.Sequential.from_config(config)

    functional = get_simple_model()
    config = functional.get_config()
    new_functional = keras.Model.from_config(config)
    json_config = functional.to_json()
    from_json = keras.models.model_from_json(json_config)

    # Transferring weights.
    layer_1 = create_layer()
    layer_2 = create_layer()
    layer_2.set_weights(layer_1.get_weights())

    functional.save_weights("my_model.weights.h5")
    new_functional.load_weights("my_model.weights.h5")
    np.testing.assert_allclose(functional.predict(test_input, verbose=0),
                               new_functional.predict(test_input, verbose=0))

    serialized = keras.saving.serialize_keras_object(custom_fn)

    def probe(model):
        # Round trips of the weight-copied model: a file, a config, json.
        model.save("probe_model.keras")
        loaded = keras.models.load_model("probe_model.keras")
        rebuilt = keras.Model.from_config(model.get_config())
        rebuilt.set_weights(model.get_weights())
        return {"loaded": loaded.predict(x[:4], verbose=0), "rebuilt": rebuilt.predict(x[:4], verbose=0)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x[:4], verbose=0),
        "inputs": x,
        "evaluate": (x, y),
        "probe": probe,
        "values": {
            "dense_config": layer_config,
            "new_layer_units": new_layer.units,
            "sequential_layers": [type(layer).__name__ for layer in new_sequential.layers],
            "functional_layers": [type(layer).__name__ for layer in new_functional.layers],
            "from_json_layers": [type(layer).__name__ for layer in from_json.layers],
            "reconstructed_layers": [type(layer).__name__ for layer in reconstructed_model.layers],
            "custom_fn": serialized,
            "layer_weights_equal": all(np.array_equal(a, b)
                                       for a, b in zip(layer_1.get_weights(), layer_2.get_weights())),
        },
    }


if __name__ == "__main__":
    print(main())
