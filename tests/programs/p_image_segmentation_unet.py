"""Image segmentation with a U-Net-like architecture (keras-io examples/vision/oxford_pets_image_segmentation.py,
its Keras 3 form): the Xception-style U-Net (a strided Conv2D entry block with BatchNormalization and relu; three
downsampling blocks of SeparableConv2D, BatchNormalization and MaxPooling2D(3, strides=2) with strided 1x1
Conv2D residual projections joined by layers.add; four upsampling blocks of Conv2DTranspose, BatchNormalization
and UpSampling2D with UpSampling2D + 1x1 Conv2D residuals; a per-pixel softmax Conv2D), trained with rmsprop on
sparse_categorical_crossentropy of uint8 masks, with a ModelCheckpoint(save_best_only=True) of the whole model to
"oxford_segmentation.keras" on validation data, then predictions on the validation batches.
The example reads JPEG/PNG files with a tf.data pipeline (tf_io.read_file, decode_png, tf_image.resize,
convert_image_dtype, Dataset.batch), which does not run without TensorFlow: `get_dataset` here is a
keras.utils.PyDataset batching in-memory float32 images (0-255) and their uint8 trimaps minus one (0, 1, 2), as
the pipeline yields them. Smaller: 32x32 images (the example's 160x160), 24 training and 8 validation samples,
batches of 8 (its 32), one epoch (its 15), half the example's filters in every block (the layers are the
example's). Real Keras 3.15 on torch 2.13 (CPU) cannot train with the example's
loss="sparse_categorical_crossentropy" on per-pixel targets: torch's nll_loss backward on the (batch, height,
width) targets raises "RuntimeError: grad_input must be contiguous"; the loss here is the same formula as a
function, keras.losses.categorical_crossentropy of ops.one_hot of the uint8 masks. The probe reads
the bottleneck (the last downsampling block's add) through a sub-model and predicts the validation PyDataset."""
import random

import keras
import numpy as np
from keras import layers, ops

img_size = (32, 32)  # the example's (160, 160)
num_classes = 3
batch_size = 8  # the example's 32


class PetsDataset(keras.utils.PyDataset):
    """Batches of (input image, target mask), as the example's tf.data pipeline yields them."""

    def __init__(self, batch_size, input_imgs, target_imgs, **kwargs):
        super().__init__(**kwargs)
        self.batch_size = batch_size
        self.input_imgs = input_imgs
        self.target_imgs = target_imgs

    def __len__(self):
        return -(-len(self.input_imgs) // self.batch_size)

    def __getitem__(self, idx):
        i = idx * self.batch_size
        input_img = self.input_imgs[i : i + self.batch_size].astype("float32")
        target_img = self.target_imgs[i : i + self.batch_size].astype("uint8")
        # Ground truth labels are 1, 2, 3. Subtract one to make them 0, 1, 2:
        target_img -= 1
        return input_img, target_img


def get_dataset(batch_size, img_size, input_imgs, target_imgs, max_dataset_len=None):
    """Returns a dataset of batches (a PyDataset standing in for the example's TF Dataset)."""
    if max_dataset_len:
        input_imgs = input_imgs[:max_dataset_len]
        target_imgs = target_imgs[:max_dataset_len]
    return PetsDataset(batch_size, input_imgs, target_imgs)


def sparse_categorical_crossentropy(y_true, y_pred):
    """keras.losses.sparse_categorical_crossentropy of (batch, height, width, 1) integer masks, by its one-hot form."""
    labels = ops.squeeze(ops.cast(y_true, "int32"), axis=-1)
    return keras.losses.categorical_crossentropy(ops.one_hot(labels, num_classes), y_pred)


def get_model(img_size, num_classes):
    inputs = keras.Input(shape=img_size + (3,))

    ### [First half of the network: downsampling inputs] ###

    # Entry block
    x = layers.Conv2D(16, 3, strides=2, padding="same")(inputs)  # the example's 32 filters
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)

    previous_block_activation = x  # Set aside residual

    # Blocks 1, 2, 3 are identical apart from the feature depth.
    for filters in [32, 64, 128]:  # the example's [64, 128, 256]
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)

        # Project residual
        residual = layers.Conv2D(filters, 1, strides=2, padding="same")(
            previous_block_activation
        )
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    ### [Second half of the network: upsampling inputs] ###

    for filters in [128, 64, 32, 16]:  # the example's [256, 128, 64, 32]
        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.Activation("relu")(x)
        x = layers.Conv2DTranspose(filters, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)

        x = layers.UpSampling2D(2)(x)

        # Project residual
        residual = layers.UpSampling2D(2)(previous_block_activation)
        residual = layers.Conv2D(filters, 1, padding="same")(residual)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual

    # Add a per-pixel classification layer
    outputs = layers.Conv2D(num_classes, 3, activation="softmax", padding="same")(x)

    # Define the model
    model = keras.Model(inputs, outputs)
    return model


def load_data(rng, n):
    """Stands in for the decoded Oxford Pets images (resized, float32 0-255) and trimaps (uint8 1, 2, 3)."""
    input_imgs = rng.integers(0, 256, size=(n, *img_size, 3)).astype("float32")
    target_imgs = rng.integers(1, 4, size=(n, *img_size, 1), dtype=np.uint8)
    return input_imgs, target_imgs


def make_probe(val_x, val_dataset):
    def probe(model):
        adds = [layer for layer in model.layers if isinstance(layer, layers.Add)]
        bottleneck = adds[2]  # the last downsampling block's residual add
        encoder = keras.Model(model.input, bottleneck.output)
        return {"bottleneck": encoder.predict(val_x[:2], verbose=0),
                "val_preds": model.predict(val_dataset, verbose=0)}

    return probe


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(51)

    input_imgs, target_imgs = load_data(rng, 32)
    order = list(range(len(input_imgs)))

    # Build model
    model = get_model(img_size, num_classes)
    model.summary()

    # Split our images into a training and a validation set
    val_samples = 8
    random.Random(1337).shuffle(order)
    input_imgs, target_imgs = input_imgs[order], target_imgs[order]
    train_input_imgs = input_imgs[:-val_samples]
    train_target_imgs = target_imgs[:-val_samples]
    val_input_imgs = input_imgs[-val_samples:]
    val_target_imgs = target_imgs[-val_samples:]

    # Instantiate dataset for each split
    # Limit input images in `max_dataset_len` for faster epoch training time.
    # Remove the `max_dataset_len` arg when running with full dataset.
    train_dataset = get_dataset(
        batch_size,
        img_size,
        train_input_imgs,
        train_target_imgs,
        max_dataset_len=24,
    )
    valid_dataset = get_dataset(batch_size, img_size, val_input_imgs, val_target_imgs)

    # Configure the model for training.
    # We use the "sparse" version of categorical_crossentropy
    # because our target data is integers.
    model.compile(optimizer="rmsprop", loss=sparse_categorical_crossentropy)

    callbacks = [
        keras.callbacks.ModelCheckpoint("oxford_segmentation.keras", save_best_only=True)
    ]

    # Train the model, doing validation at the end of each epoch.
    epochs = 1
    history = model.fit(
        train_dataset,
        epochs=epochs,
        validation_data=valid_dataset,
        callbacks=callbacks,
        verbose=0,
    )

    # Generate predictions for all images in the validation set
    val_dataset = get_dataset(batch_size, img_size, val_input_imgs, val_target_imgs)
    val_preds = model.predict(val_dataset, verbose=0)
    mask = np.argmax(val_preds[2], axis=-1)
    mask = np.expand_dims(mask, axis=-1)
    print("predicted mask", mask.shape)

    val_x, val_y = val_dataset[0]

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": val_x[:4],
        "evaluate": (val_x, val_y),
        "probe": make_probe(val_x, val_dataset),
        "values": {
            "batch_shapes": [list(a.shape) for a in train_dataset[0]],
            "target_classes": np.unique(val_y),
            "val_preds_shape": list(val_preds.shape),
            "history_keys": sorted(history.history),
            "params": model.count_params(),
            "checkpoint_layers": len(keras.models.load_model("oxford_segmentation.keras", compile=False).layers),
        },
    }


if __name__ == "__main__":
    print(main())
