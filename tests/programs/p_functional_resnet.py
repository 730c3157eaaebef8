"""The Functional API (keras-io guides/functional_api.py), "A toy ResNet model" for CIFAR10 (non-linear
topology: residual adds), "Shared layers" (one Embedding for two inputs) and "Extract and reuse nodes in the
graph of layers" (a feature-extraction model whose outputs are every layer's output)."""
import keras
import numpy as np
from keras import layers


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(3)

    inputs = keras.Input(shape=(32, 32, 3), name="img")
    x = layers.Conv2D(32, 3, activation="relu")(inputs)
    x = layers.Conv2D(64, 3, activation="relu")(x)
    block_1_output = layers.MaxPooling2D(3)(x)

    x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_1_output)
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    block_2_output = layers.add([x, block_1_output])

    x = layers.Conv2D(64, 3, activation="relu", padding="same")(block_2_output)
    x = layers.Conv2D(64, 3, activation="relu", padding="same")(x)
    block_3_output = layers.add([x, block_2_output])

    x = layers.Conv2D(64, 3, activation="relu")(block_3_output)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(256, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(10)(x)

    model = keras.Model(inputs, outputs, name="toy_resnet")
    model.summary()

    # Stands in for keras.datasets.cifar10.load_data().
    x_train = rng.integers(0, 256, size=(32, 32, 32, 3), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=(32, 1), dtype=np.uint8)
    x_train = x_train.astype("float32") / 255.0
    y_train = keras.utils.to_categorical(y_train, 10)

    model.compile(
        optimizer=keras.optimizers.RMSprop(1e-3),
        loss=keras.losses.CategoricalCrossentropy(from_logits=True),
        metrics=["acc"],
    )
    history = model.fit(x_train, y_train, batch_size=64, epochs=1, validation_split=0.2, verbose=0)

    # Shared layers: one Embedding for two text inputs.
    shared_embedding = layers.Embedding(1000, 128)
    text_input_a = keras.Input(shape=(None,), dtype="int32")
    text_input_b = keras.Input(shape=(None,), dtype="int32")
    encoded_input_a = shared_embedding(text_input_a)
    encoded_input_b = shared_embedding(text_input_b)
    shared = keras.Model([text_input_a, text_input_b], [encoded_input_a, encoded_input_b])

    def probe(model):
        # Every layer's output, from a model sliced out of the trained one.
        features_list = [layer.output for layer in model.layers]
        feat_extraction_model = keras.Model(inputs=model.input, outputs=features_list)
        features = feat_extraction_model(x_train[:2])
        table = np.random.default_rng(5).normal(size=(1000, 128)).astype("float32")
        shared_embedding.set_weights([table])
        a, b = shared.predict([np.array([[1, 2, 3]]), np.array([[3, 2, 1]])], verbose=0)
        return {"features": [keras.ops.convert_to_numpy(f) for f in features], "shared_a": a, "shared_b": b}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_train[:4], verbose=0),
        "inputs": x_train[:8],
        "evaluate": (x_train[:16], y_train[:16]),
        "probe": probe,
        "values": {"history_keys": sorted(history.history), "shared_weights": len(shared.weights),
                   "shared_layers": len(shared.layers)},
    }


if __name__ == "__main__":
    print(main())
