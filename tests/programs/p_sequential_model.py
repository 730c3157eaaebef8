"""The Sequential model (keras-io guides/sequential_model.py): creating one, add() and pop(), specifying the
input shape in advance, the add() + summary() debugging workflow on a convnet, feature extraction with a
Sequential model, and transfer learning by freezing all layers but the last."""
import keras
import numpy as np
from keras import layers, ops


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(4)

    # Define Sequential model with 3 layers
    model = keras.Sequential(
        [
            layers.Dense(2, activation="relu", name="layer1"),
            layers.Dense(3, activation="relu", name="layer2"),
            layers.Dense(4, name="layer3"),
        ]
    )
    # Call model on a test input
    x = ops.ones((3, 3))
    y = model(x)
    first_shape = list(ops.shape(y))

    model = keras.Sequential()
    model.add(layers.Dense(2, activation="relu"))
    model.add(layers.Dense(3, activation="relu"))
    model.add(layers.Dense(4))
    model.pop()
    layers_after_pop = len(model.layers)  # 2

    layer = layers.Dense(3)
    weights_before = len(layer.weights)  # Empty
    x = ops.ones((1, 4))
    y = layer(x)
    weights_after = len(layer.weights)  # Now it has weights, of shape (4, 3) and (3,)

    model = keras.Sequential()
    model.add(keras.Input(shape=(4,)))
    model.add(layers.Dense(2, activation="relu"))
    model.summary()
    layers_with_input = len(model.layers)

    # The add() + summary() workflow.
    model = keras.Sequential()
    model.add(keras.Input(shape=(250, 250, 3)))  # 250x250 RGB images
    model.add(layers.Conv2D(32, 5, strides=2, activation="relu"))
    model.add(layers.Conv2D(32, 3, activation="relu"))
    model.add(layers.MaxPooling2D(3))
    model.summary()
    shape_after_first_block = list(model.output_shape)
    model.add(layers.Conv2D(32, 3, activation="relu"))
    model.add(layers.Conv2D(32, 3, activation="relu"))
    model.add(layers.MaxPooling2D(3))
    model.add(layers.Conv2D(32, 3, activation="relu"))
    model.add(layers.Conv2D(32, 3, activation="relu"))
    model.add(layers.MaxPooling2D(2))
    model.summary()
    model.add(layers.GlobalMaxPooling2D())
    model.add(layers.Dense(10))

    # Transfer learning with a Sequential model: freeze all layers except the last one.
    for layer in model.layers[:-1]:
        layer.trainable = False
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    images = rng.random((8, 250, 250, 3)).astype("float32")
    labels = rng.integers(0, 10, size=(8,))
    frozen_before = [w.copy() for w in model.layers[0].get_weights()]
    history = model.fit(images, labels, batch_size=4, epochs=1, verbose=0)
    frozen_after = model.layers[0].get_weights()

    def probe(model):
        # Feature extraction: a model returning every layer's output, or one intermediate output.
        feature_extractor = keras.Model(inputs=model.inputs, outputs=[layer.output for layer in model.layers])
        features = feature_extractor(images[:1])
        second = keras.Model(inputs=model.inputs, outputs=model.layers[1].output)
        return {"last_features": keras.ops.convert_to_numpy(features[-1]),
                "n_features": len(features),
                "intermediate": second.predict(images[:1], verbose=0)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(images[:2], verbose=0),
        "inputs": images[:3],
        "evaluate": (images, labels),
        "probe": probe,
        "values": {
            "first_shape": first_shape,
            "layers_after_pop": layers_after_pop,
            "weights_before": weights_before,
            "weights_after": weights_after,
            "layers_with_input": layers_with_input,
            "shape_after_first_block": shape_after_first_block,
            "output_shape": list(model.output_shape),
            "trainable_weights": len(model.trainable_weights),
            "non_trainable_weights": len(model.non_trainable_weights),
            "frozen_unchanged": all(np.array_equal(a, b) for a, b in zip(frozen_before, frozen_after)),
        },
    }


if __name__ == "__main__":
    print(main())
