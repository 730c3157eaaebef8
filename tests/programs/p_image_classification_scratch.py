"""Image classification from scratch (keras-io examples/vision/image_classification_from_scratch.py): data
augmentation layers (RandomFlip, RandomRotation) applied to the data, the small Xception-like network
(Rescaling, strided Conv2D, BatchNormalization, SeparableConv2D blocks with 1x1 strided residual projections
added back, GlobalAveragePooling2D, Dropout, a logit Dense), BinaryCrossentropy(from_logits=True), a
ModelCheckpoint, and inference on one image with keras.ops.expand_dims and keras.ops.sigmoid.
The example's images are 180x180; they are 64x64 here to fit the suite's time (the network is unchanged)."""
import keras
import numpy as np
from keras import layers

image_size = (64, 64)

data_augmentation_layers = [
    layers.RandomFlip("horizontal"),
    layers.RandomRotation(0.1),
]


def data_augmentation(images):
    for layer in data_augmentation_layers:
        images = layer(images)
    return images


def make_model(input_shape, num_classes):
    inputs = keras.Input(shape=input_shape)

    # Entry block
    x = layers.Rescaling(1.0 / 255)(inputs)
    x = layers.Conv2D(128, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    for size in [256, 512, 728]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    x = layers.SeparableConv2D(1024, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        units = 1
    else:
        units = num_classes

    x = layers.Dropout(0.25)(x)
    # We specify activation=None so as to return logits
    outputs = layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(28)

    # Stands in for the Cats vs Dogs images (uint8 pictures as float32, binary labels).
    images = rng.integers(0, 256, size=(16, *image_size, 3)).astype("float32")
    labels = rng.integers(0, 2, size=(16,)).astype("float32")
    augmented = keras.ops.convert_to_numpy(data_augmentation(images))

    model = make_model(input_shape=image_size + (3,), num_classes=2)

    epochs = 1
    callbacks = [keras.callbacks.ModelCheckpoint("save_at_{epoch}.keras")]
    model.compile(
        optimizer=keras.optimizers.Adam(3e-4),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy(name="acc")],
    )
    history = model.fit(augmented[:12], labels[:12], batch_size=8, epochs=epochs, callbacks=callbacks,
                        validation_data=(images[12:], labels[12:]), verbose=0)

    img_array = images[0]
    img_array = keras.ops.expand_dims(img_array, 0)  # Create batch axis
    predictions = model.predict(img_array, verbose=0)
    score = float(keras.ops.sigmoid(predictions[0][0]))
    print(f"This image is {100 * (1 - score):.2f}% cat and {100 * score:.2f}% dog.")

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": predictions,
        "inputs": images[:4],
        "evaluate": (images, labels),
        "values": {"params": model.count_params(), "history_keys": sorted(history.history)},
    }


if __name__ == "__main__":
    print(main())
