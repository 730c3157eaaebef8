"""Transfer learning & fine-tuning (keras-io guides/transfer_learning.py): trainable and non-trainable
weights (Dense, BatchNormalization, layer.trainable = False), freezing recursively, then the end-to-end
workflow: augmentation (RandomFlip, RandomRotation), Rescaling, a frozen base model called with
training=False under a new head, training the head, unfreezing and fine-tuning with a low learning rate.
The guide's base model is Xception with ImageNet weights; with no download here, a small convolutional base
of the same kind (separable convolutions, BatchNormalization) plays its part."""
import keras
import numpy as np
from keras import layers


def make_base_model(input_shape):
    """Stands in for keras.applications.Xception(weights="imagenet", include_top=False)."""
    inputs = keras.Input(shape=input_shape)
    x = layers.Conv2D(16, 3, strides=2, use_bias=False)(inputs)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.SeparableConv2D(32, 3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = layers.SeparableConv2D(64, 3, padding="same", use_bias=False)(x)
    x = layers.BatchNormalization()(x)
    outputs = layers.Activation("relu")(x)
    return keras.Model(inputs, outputs, name="base_model")


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(22)
    counts = {}

    layer = keras.layers.Dense(3)
    layer.build((None, 4))  # Create the weights
    counts["dense"] = [len(layer.weights), len(layer.trainable_weights), len(layer.non_trainable_weights)]

    layer = keras.layers.BatchNormalization()
    layer.build((None, 4))  # Create the weights
    counts["batchnorm"] = [len(layer.weights), len(layer.trainable_weights), len(layer.non_trainable_weights)]

    layer = keras.layers.Dense(3)
    layer.build((None, 4))  # Create the weights
    layer.trainable = False  # Freeze the layer
    counts["frozen"] = [len(layer.weights), len(layer.trainable_weights), len(layer.non_trainable_weights)]

    # Make a model with 2 layers
    layer1 = keras.layers.Dense(3, activation="relu")
    layer2 = keras.layers.Dense(3, activation="sigmoid")
    model = keras.Sequential([keras.Input(shape=(3,)), layer1, layer2])
    # Freeze the first layer
    layer1.trainable = False
    # Keep a copy of the weights of layer1 for later reference
    initial_layer1_weights_values = layer1.get_weights()
    # Train the model
    model.compile(optimizer="adam", loss="mse")
    model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)
    # Check that the weights of layer1 have not changed during training
    final_layer1_weights_values = layer1.get_weights()
    np.testing.assert_allclose(initial_layer1_weights_values[0], final_layer1_weights_values[0])
    np.testing.assert_allclose(initial_layer1_weights_values[1], final_layer1_weights_values[1])

    inner_model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(3, activation="relu"),
                                    keras.layers.Dense(3, activation="relu")])
    model = keras.Sequential([keras.Input(shape=(3,)), inner_model, keras.layers.Dense(3, activation="sigmoid")])
    model.trainable = False  # Freeze the outer model
    assert inner_model.trainable == False  # All layers in `model` are now frozen
    assert inner_model.layers[0].trainable == False  # `trainable` is propagated recursively

    # The end-to-end workflow. Stands in for the cats-vs-dogs images: uint8 pictures, binary labels.
    images = rng.integers(0, 256, size=(24, 150, 150, 3)).astype("float32")
    labels = rng.integers(0, 2, size=(24, 1)).astype("float32")

    data_augmentation_layers = [layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)]

    def data_augmentation(x):
        for layer in data_augmentation_layers:
            x = layer(x)
        return x

    augmented = keras.ops.convert_to_numpy(data_augmentation(images))

    base_model = make_base_model((150, 150, 3))
    # Freeze the base_model
    base_model.trainable = False

    # Create new model on top
    inputs = keras.Input(shape=(150, 150, 3))
    # Pre-trained Xception weights requires that input be scaled
    # from (0, 255) to a range of (-1., +1.), the rescaling layer
    # outputs: `(inputs * scale) + offset`
    scale_layer = keras.layers.Rescaling(scale=1 / 127.5, offset=-1)
    x = scale_layer(inputs)

    # The base model contains batchnorm layers. We want to keep them in inference mode
    # when we unfreeze the base model for fine-tuning, so we make sure that the
    # base_model is running in inference mode here.
    x = base_model(x, training=False)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dropout(0.2)(x)  # Regularize with dropout
    outputs = keras.layers.Dense(1)(x)
    model = keras.Model(inputs, outputs)
    model.summary(show_trainable=True)
    counts["head_trainable"] = len(model.trainable_weights)

    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy()],
    )
    model.fit(augmented, labels, epochs=1, batch_size=8, validation_split=0.25, verbose=0)

    # Unfreeze the base_model. Note that it keeps running in inference mode
    # since we passed `training=False` when calling it. This means that
    # the batchnorm layers will not update their batch statistics.
    # This prevents the batchnorm layers from undoing all the training
    # we've done so far.
    base_model.trainable = True
    model.summary(show_trainable=True)
    counts["all_trainable"] = len(model.trainable_weights)
    moving_mean_before = base_model.layers[2].get_weights()[2].copy()

    model.compile(
        optimizer=keras.optimizers.Adam(1e-5),  # Low learning rate
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy()],
    )
    history = model.fit(augmented, labels, epochs=1, batch_size=8, validation_split=0.25, verbose=0)
    moving_mean_after = base_model.layers[2].get_weights()[2]

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(images[:4], verbose=0),
        "inputs": images[:6],
        "evaluate": (images[:12], labels[:12]),
        "values": {"counts": counts,
                   "bn_statistics_kept": bool(np.array_equal(moving_mean_before, moving_mean_after)),
                   "history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
