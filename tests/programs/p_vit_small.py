"""Image classification with Vision Transformer (keras-io examples/vision/image_classification_with_vision_transformer.py):
a data_augmentation Sequential (Normalization adapted to the training images, Resizing, RandomFlip,
RandomRotation, RandomZoom) inside the model, a Patches layer (keras.ops.image.extract_patches and
ops.reshape on ops.shape), a PatchEncoder (a Dense projection plus an Embedding of ops.arange positions),
Transformer blocks (LayerNormalization(epsilon=1e-6), MultiHeadAttention with dropout, Add skips, an MLP of
gelu Dense and Dropout), Flatten and an MLP head to logits, trained with AdamW on
SparseCategoricalCrossentropy(from_logits=True) with accuracy and top-5 accuracy, a ModelCheckpoint of the best
weights (save_weights_only, monitor val_accuracy) loaded back with load_weights, then evaluate.
Smaller: CIFAR-100-shaped uint8 images (48 training, 16 test) resized to 40x40 (the example's 72), patches of
8 (its 6), projection_dim 16, 2 heads, 2 Transformer layers (its 8), head units [64, 32] (its [2048, 1024]),
batches of 16 and one epoch. The checkpoint is written in the working directory ("checkpoint.weights.h5"),
not "/tmp/". The example's two layers take required arguments: Patches gains **kwargs and PatchEncoder
**kwargs and projection_dim in get_config(), as Keras requires for loading them, so that the model can be
saved and exported. The probe reads the Patches and PatchEncoder outputs through a sub-model."""
import keras
import numpy as np
from keras import layers, ops

num_classes = 100
input_shape = (32, 32, 3)

learning_rate = 0.001
weight_decay = 0.0001
batch_size = 16  # the example's 256
num_epochs = 1
image_size = 40  # We'll resize input images to this size (the example's 72)
patch_size = 8  # Size of the patches to be extract from the input images (the example's 6)
num_patches = (image_size // patch_size) ** 2
projection_dim = 16  # the example's 64
num_heads = 2  # the example's 4
hidden_dim = projection_dim * num_heads
transformer_units = [
    hidden_dim * 2,
    hidden_dim,
]  # Size of the transformer layers
transformer_layers = 2  # the example's 8
mlp_head_units = [
    64,
    32,
]  # Size of the dense layers of the final classifier (the example's [2048, 1024])


def mlp(x, hidden_units, dropout_rate):
    for units in hidden_units:
        x = layers.Dense(units, activation=keras.activations.gelu)(x)
        x = layers.Dropout(dropout_rate)(x)
    return x


class Patches(layers.Layer):
    def __init__(self, patch_size, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = patch_size

    def call(self, images):
        input_shape = ops.shape(images)
        batch_size = input_shape[0]
        height = input_shape[1]
        width = input_shape[2]
        channels = input_shape[3]
        num_patches_h = height // self.patch_size
        num_patches_w = width // self.patch_size
        patches = keras.ops.image.extract_patches(images, size=self.patch_size)
        patches = ops.reshape(
            patches,
            (
                batch_size,
                num_patches_h * num_patches_w,
                self.patch_size * self.patch_size * channels,
            ),
        )
        return patches

    def get_config(self):
        config = super().get_config()
        config.update({"patch_size": self.patch_size})
        return config


class PatchEncoder(layers.Layer):
    def __init__(self, num_patches, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.num_patches = num_patches
        self.projection_dim = projection_dim
        self.projection = layers.Dense(units=projection_dim)
        self.position_embedding = layers.Embedding(
            input_dim=num_patches, output_dim=projection_dim
        )

    def call(self, patch):
        positions = ops.expand_dims(
            ops.arange(start=0, stop=self.num_patches, step=1), axis=0
        )
        projected_patches = self.projection(patch)
        encoded = projected_patches + self.position_embedding(positions)
        return encoded

    def get_config(self):
        config = super().get_config()
        config.update({"num_patches": self.num_patches, "projection_dim": self.projection_dim})
        return config


def create_vit_classifier(data_augmentation):
    inputs = keras.Input(shape=input_shape)
    # Augment data.
    augmented = data_augmentation(inputs)
    # Create patches.
    patches = Patches(patch_size)(augmented)
    # Encode patches.
    encoded_patches = PatchEncoder(num_patches, hidden_dim)(patches)

    # Create multiple layers of the Transformer block.
    for _ in range(transformer_layers):
        # Layer normalization 1.
        x1 = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
        # Create a multi-head attention layer.
        attention_output = layers.MultiHeadAttention(
            num_heads=num_heads, key_dim=projection_dim, dropout=0.1
        )(x1, x1)
        # Skip connection 1.
        x2 = layers.Add()([attention_output, encoded_patches])
        # Layer normalization 2.
        x3 = layers.LayerNormalization(epsilon=1e-6)(x2)
        # MLP.
        x3 = mlp(x3, hidden_units=transformer_units, dropout_rate=0.1)
        # Skip connection 2.
        encoded_patches = layers.Add()([x3, x2])

    # Create a [batch_size, projection_dim] tensor.
    representation = layers.LayerNormalization(epsilon=1e-6)(encoded_patches)
    representation = layers.Flatten()(representation)
    representation = layers.Dropout(0.5)(representation)
    # Add MLP.
    features = mlp(representation, hidden_units=mlp_head_units, dropout_rate=0.5)
    # Classify outputs.
    logits = layers.Dense(num_classes)(features)
    # Create the Keras model.
    model = keras.Model(inputs=inputs, outputs=logits)
    return model


def run_experiment(model, x_train, y_train, x_test, y_test):
    optimizer = keras.optimizers.AdamW(
        learning_rate=learning_rate, weight_decay=weight_decay
    )

    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
            keras.metrics.SparseTopKCategoricalAccuracy(5, name="top-5-accuracy"),
        ],
    )

    checkpoint_filepath = "checkpoint.weights.h5"
    checkpoint_callback = keras.callbacks.ModelCheckpoint(
        checkpoint_filepath,
        monitor="val_accuracy",
        save_best_only=True,
        save_weights_only=True,
    )

    history = model.fit(
        x=x_train,
        y=y_train,
        batch_size=batch_size,
        epochs=num_epochs,
        validation_split=0.1,
        callbacks=[checkpoint_callback],
        verbose=0,
    )

    model.load_weights(checkpoint_filepath)
    _, accuracy, top_5_accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"Test accuracy: {round(accuracy * 100, 2)}%")
    print(f"Test top 5 accuracy: {round(top_5_accuracy * 100, 2)}%")

    return history


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(46)

    # Stands in for keras.datasets.cifar100.load_data(): uint8 images, (n, 1) uint8 labels.
    x_train = rng.integers(0, 256, size=(48, *input_shape), dtype=np.uint8)
    y_train = rng.integers(0, num_classes, size=(48, 1), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(16, *input_shape), dtype=np.uint8)
    y_test = rng.integers(0, num_classes, size=(16, 1), dtype=np.uint8)
    print(f"x_train shape: {x_train.shape} - y_train shape: {y_train.shape}")

    data_augmentation = keras.Sequential(
        [
            layers.Normalization(),
            layers.Resizing(image_size, image_size),
            layers.RandomFlip("horizontal"),
            layers.RandomRotation(factor=0.02),
            layers.RandomZoom(height_factor=0.2, width_factor=0.2),
        ],
        name="data_augmentation",
    )
    # Compute the mean and the variance of the training data for normalization.
    data_augmentation.layers[0].adapt(x_train)

    # The example's look at the patches of one image (weight-independent).
    image = x_train[3]
    resized_image = ops.image.resize(
        ops.convert_to_tensor([image], dtype="float32"), size=(image_size, image_size)
    )
    patches = Patches(patch_size)(resized_image)
    print(f"Patches per image: {patches.shape[1]}")
    print(f"Elements per patch: {patches.shape[-1]}")
    patch_img = ops.reshape(patches[0][5], (patch_size, patch_size, 3))

    vit_classifier = create_vit_classifier(data_augmentation)
    history = run_experiment(vit_classifier, x_train, y_train, x_test, y_test)

    def probe(model):
        patches_layer = next(layer for layer in model.layers if isinstance(layer, Patches))
        encoder = next(layer for layer in model.layers if isinstance(layer, PatchEncoder))
        inner = keras.Model(model.input, [patches_layer.output, encoder.output])
        extracted, encoded = inner.predict(x_test[:2], verbose=0)
        return {"patches": extracted, "encoded_patches": encoded}

    return {
        "model": vit_classifier,
        "loss": history.history["loss"][-1],
        "inputs": x_test[:4],
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {
            "resized_patches": ops.convert_to_numpy(patches),
            "patch_img": ops.convert_to_numpy(patch_img),
            "normalization_weights": data_augmentation.layers[0].get_weights(),
            "history_keys": sorted(history.history),
            "params": vit_classifier.count_params(),
            "layer_types": [type(layer).__name__ for layer in vit_classifier.layers],
        },
    }


if __name__ == "__main__":
    print(main())
