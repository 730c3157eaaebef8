"""Image classification with modern MLP models, the MLP-Mixer part (keras-io
examples/vision/mlp_image_classification.py, its Keras 3 form): a data_augmentation Sequential (Normalization
adapted to the training images, Resizing, RandomFlip, RandomZoom), a Patches layer (keras.ops.image.
extract_patches reshaped on keras.ops.shape), a Dense patch embedding, a Sequential of MLPMixerLayer blocks
(LayerNormalization(epsilon=1e-6), keras.ops.transpose between the token-mixing and channel-mixing MLPs, each a
Sequential of a gelu Dense, a Dense and Dropout, with skip connections), GlobalAveragePooling1D, Dropout and
logits, trained with AdamW on SparseCategoricalCrossentropy(from_logits=True) with accuracy and top-5 accuracy
metrics and the ReduceLROnPlateau and EarlyStopping(restore_best_weights=True) callbacks on val_loss, then
evaluate. The example's FNet and gMLP parts are left out.
Smaller: CIFAR-100-shaped uint8 images (48 training, 16 test) resized to 48x48 (the example's 64), patches of 8
(36 patches), embedding_dim 16 (its 256), 2 blocks (its 4), batches of 16 and 2 epochs (its 50). Patches and
MLPMixerLayer take required arguments without get_config(); get_config() is added to both, as Keras requires
for loading them, so that the model can be saved and exported. The probe runs the blocks through a sub-model
and one MLPMixerLayer eagerly on a fixed tensor."""
import keras
import numpy as np
from keras import layers

num_classes = 100
input_shape = (32, 32, 3)

weight_decay = 0.0001
batch_size = 16  # the example's 128
num_epochs = 2  # the example's 50
dropout_rate = 0.2
image_size = 48  # We'll resize input images to this size (the example's 64).
patch_size = 8  # Size of the patches to be extracted from the input images.
num_patches = (image_size // patch_size) ** 2  # Size of the data array.
embedding_dim = 16  # Number of hidden units (the example's 256).
num_blocks = 2  # Number of blocks (the example's 4).


class Patches(layers.Layer):
    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def call(self, x):
        patches = keras.ops.image.extract_patches(x, self.patch_size)
        batch_size = keras.ops.shape(patches)[0]
        num_patches = keras.ops.shape(patches)[1] * keras.ops.shape(patches)[2]
        patch_dim = keras.ops.shape(patches)[3]
        out = keras.ops.reshape(patches, (batch_size, num_patches, patch_dim))
        return out

    def get_config(self):
        return {**super().get_config(), "patch_size": self.patch_size}


class MLPMixerLayer(layers.Layer):
    def __init__(self, num_patches, hidden_units, dropout_rate, *args, **kwargs):
        super().__init__(*args, **kwargs)

        self.mlp1 = keras.Sequential(
            [
                layers.Dense(units=num_patches, activation="gelu"),
                layers.Dense(units=num_patches),
                layers.Dropout(rate=dropout_rate),
            ]
        )
        self.mlp2 = keras.Sequential(
            [
                layers.Dense(units=num_patches, activation="gelu"),
                layers.Dense(units=hidden_units),
                layers.Dropout(rate=dropout_rate),
            ]
        )
        self.normalize = layers.LayerNormalization(epsilon=1e-6)
        self.config = {"num_patches": num_patches, "hidden_units": hidden_units, "dropout_rate": dropout_rate}

    def build(self, input_shape):
        return super().build(input_shape)

    def call(self, inputs):
        # Apply layer normalization.
        x = self.normalize(inputs)
        # Transpose inputs from [num_batches, num_patches, hidden_units] to [num_batches, hidden_units, num_patches].
        x_channels = keras.ops.transpose(x, axes=(0, 2, 1))
        # Apply mlp1 on each channel independently.
        mlp1_outputs = self.mlp1(x_channels)
        # Transpose mlp1_outputs from [num_batches, hidden_dim, num_patches] to [num_batches, num_patches, hidden_units].
        mlp1_outputs = keras.ops.transpose(mlp1_outputs, axes=(0, 2, 1))
        # Add skip connection.
        x = mlp1_outputs + inputs
        # Apply layer normalization.
        x_patches = self.normalize(x)
        # Apply mlp2 on each patch independtenly.
        mlp2_outputs = self.mlp2(x_patches)
        # Add skip connection.
        x = x + mlp2_outputs
        return x

    def get_config(self):
        return {**super().get_config(), **self.config}


def build_classifier(blocks, data_augmentation):
    inputs = layers.Input(shape=input_shape)
    # Augment data.
    augmented = data_augmentation(inputs)
    # Create patches.
    patches = Patches(patch_size)(augmented)
    # Encode patches to generate a [batch_size, num_patches, embedding_dim] tensor.
    x = layers.Dense(units=embedding_dim)(patches)
    # Process x using the module blocks.
    x = blocks(x)
    # Apply global average pooling to generate a [batch_size, embedding_dim] representation tensor.
    representation = layers.GlobalAveragePooling1D()(x)
    # Apply dropout.
    representation = layers.Dropout(rate=dropout_rate)(representation)
    # Compute logits outputs.
    logits = layers.Dense(num_classes)(representation)
    # Create the Keras model.
    return keras.Model(inputs=inputs, outputs=logits)


def run_experiment(model, learning_rate, x_train, y_train, x_test, y_test):
    # Create Adam optimizer with weight decay.
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate,
        weight_decay=weight_decay,
    )
    # Compile the model.
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="acc"),
            keras.metrics.SparseTopKCategoricalAccuracy(5, name="top5-acc"),
        ],
    )
    # Create a learning rate scheduler callback.
    reduce_lr = keras.callbacks.ReduceLROnPlateau(
        monitor="val_loss", factor=0.5, patience=5
    )
    # Create an early stopping callback.
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=10, restore_best_weights=True
    )
    # Fit the model.
    history = model.fit(
        x=x_train,
        y=y_train,
        batch_size=batch_size,
        epochs=num_epochs,
        validation_split=0.1,
        callbacks=[early_stopping, reduce_lr],
        verbose=0,
    )

    _, accuracy, top_5_accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"Test accuracy: {round(accuracy * 100, 2)}%")
    print(f"Test top 5 accuracy: {round(top_5_accuracy * 100, 2)}%")

    # Return history to plot learning curves.
    return history


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(47)

    # Stands in for keras.datasets.cifar100.load_data(): uint8 images, (n, 1) uint8 labels.
    x_train = rng.integers(0, 256, size=(48, *input_shape), dtype=np.uint8)
    y_train = rng.integers(0, num_classes, size=(48, 1), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(16, *input_shape), dtype=np.uint8)
    y_test = rng.integers(0, num_classes, size=(16, 1), dtype=np.uint8)
    print(f"Patches per image: {num_patches}")
    print(f"Elements per patch (3 channels): {(patch_size ** 2) * 3}")

    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.Resizing(image_size, image_size),
            layers.RandomFlip("horizontal"),
            layers.RandomZoom(height_factor=0.2, width_factor=0.2),
        ],
        name="data_augmentation",
    )
    # Compute the mean and the variance of the training data for normalization.
    data_augmentation.layers[0].adapt(x_train)

    mlpmixer_blocks = keras.Sequential(
        [MLPMixerLayer(num_patches, embedding_dim, dropout_rate) for _ in range(num_blocks)]
    )
    learning_rate = 0.005
    mlpmixer_classifier = build_classifier(mlpmixer_blocks, data_augmentation)
    history = run_experiment(mlpmixer_classifier, learning_rate, x_train, y_train, x_test, y_test)

    tokens = np.random.default_rng(48).normal(size=(2, num_patches, embedding_dim)).astype("float32")

    def probe(model):
        blocks = next(layer for layer in model.layers if isinstance(layer, keras.Sequential)
                      and isinstance(layer.layers[0], MLPMixerLayer))
        mixed = keras.Model(model.input, blocks.output).predict(x_test[:2], verbose=0)
        one_block = blocks.layers[0](tokens)
        return {"mixed": mixed, "one_block": keras.ops.convert_to_numpy(one_block)}

    return {
        "model": mlpmixer_classifier,
        "loss": history.history["loss"][-1],
        "inputs": x_test[:4],
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {
            "history_keys": sorted(history.history),
            "learning_rates": [float(lr) for lr in history.history.get("learning_rate", [])],
            "params": mlpmixer_classifier.count_params(),
            "block_weights": [list(w.shape) for w in mlpmixer_blocks.get_weights()],
            "normalization_weights": data_augmentation.layers[0].get_weights(),
        },
    }


if __name__ == "__main__":
    print(main())
