"""Image classification via fine-tuning with EfficientNet (keras-io
examples/vision/image_classification_efficientnet_fine_tuning.py, its Keras 3 form): images of different sizes
resized with `keras.ops.image.resize` in `keras.utils.PyDataset` pipelines (a preview stream of single images,
a training stream with augmentation layers applied to its batches - RandomRotation, RandomTranslation,
RandomFlip, RandomContrast - shuffled on each epoch's end and read by two worker threads, a test stream), one-hot
labels from `keras.ops.one_hot`, an EfficientNetB0 with its top built from scratch, then the transfer-learning
model: EfficientNetB0(include_top=False, input_tensor=inputs) frozen with `model.trainable = False`, a new top
(GlobalAveragePooling2D, BatchNormalization, Dropout, a softmax Dense) trained with Adam(1e-2), then
`unfreeze_model`: the last 20 layers of the functional model unfrozen except BatchNormalization, recompiled with
Adam(1e-5) and trained again.
As the example writes it. Smaller: 32x32 images instead of 224x224, 4 classes instead of Stanford Dogs' 120,
16 training and 8 test images of random sizes in [0, 255] (uint8, as PIL decodes them) instead of the download,
batches of 8 instead of 64, one epoch per stage instead of 40, 25 and 4, `weights=None` instead of "imagenet"
(no download), the from-scratch EfficientNetB0 built and compiled but not trained, and no plots (matplotlib).
The probe reads the features of EfficientNet's "top_activation" layer through a sub-model, after the weight
copy."""
import keras
import numpy as np
from keras import layers
from keras.applications import EfficientNetB0

# IMG_SIZE is determined by EfficientNet model choice
IMG_SIZE = 32  # the example's 224
BATCH_SIZE = 8  # the example's 64
NUM_CLASSES = 4  # Stanford Dogs' 120


class ResizeOnlyDataset(keras.utils.PyDataset):
    def __init__(self, images, labels, img_size, batch_size=1, **kwargs):
        super().__init__(**kwargs)
        self.images = images
        self.labels = labels
        self.img_size = img_size
        self.batch_size = batch_size
        self.indices = np.arange(len(labels))

    def __len__(self):
        return int(np.ceil(len(self.labels) / self.batch_size))

    def __getitem__(self, idx):
        batch_indices = self.indices[idx * self.batch_size: (idx + 1) * self.batch_size]
        batch_images = np.stack(
            [
                np.array(
                    keras.ops.image.resize(
                        np.array(self.images[i], dtype="float32"),
                        (self.img_size, self.img_size),
                    )
                )
                for i in batch_indices
            ]
        )
        batch_labels = self.labels[batch_indices]
        if self.batch_size == 1:
            return batch_images[0], batch_labels[0]
        return batch_images, batch_labels


img_augmentation_layers = [
    layers.RandomRotation(factor=0.15),
    layers.RandomTranslation(height_factor=0.1, width_factor=0.1),
    layers.RandomFlip(),
    layers.RandomContrast(factor=0.1),
]


def img_augmentation(images):
    for layer in img_augmentation_layers:
        images = layer(images)
    return images


class StanfordDogsDataset(keras.utils.PyDataset):
    def __init__(self, images, labels, num_classes, img_size, batch_size, augment=False, shuffle=False, **kwargs):
        super().__init__(**kwargs)
        self.images = images
        self.labels = labels
        self.num_classes = num_classes
        self.img_size = img_size
        self.batch_size = batch_size
        self.augment = augment
        self.shuffle = shuffle
        self.indices = np.arange(len(labels))
        self.on_epoch_end()

    def __len__(self):
        # Match previous drop_remainder=True behavior.
        return len(self.indices) // self.batch_size

    def on_epoch_end(self):
        if self.shuffle:
            np.random.shuffle(self.indices)

    def __getitem__(self, idx):
        batch_indices = self.indices[idx * self.batch_size: (idx + 1) * self.batch_size]

        batch_images = np.stack(
            [
                np.array(
                    keras.ops.image.resize(
                        np.array(self.images[i], dtype="float32"),
                        (self.img_size, self.img_size),
                    )
                )
                for i in batch_indices
            ]
        )

        if self.augment:
            batch_images = np.array(img_augmentation(batch_images))

        batch_labels = np.array(keras.ops.one_hot(self.labels[batch_indices], self.num_classes))

        return batch_images, batch_labels


def build_model(num_classes):
    inputs = layers.Input(shape=(IMG_SIZE, IMG_SIZE, 3))
    model = EfficientNetB0(include_top=False, input_tensor=inputs, weights=None)  # the example's "imagenet"

    # Freeze the pretrained weights
    model.trainable = False

    # Rebuild top
    x = layers.GlobalAveragePooling2D(name="avg_pool")(model.output)
    x = layers.BatchNormalization()(x)

    top_dropout_rate = 0.2
    x = layers.Dropout(top_dropout_rate, name="top_dropout")(x)
    outputs = layers.Dense(num_classes, activation="softmax", name="pred")(x)

    # Compile
    model = keras.Model(inputs, outputs, name="EfficientNet")
    optimizer = keras.optimizers.Adam(learning_rate=1e-2)
    model.compile(optimizer=optimizer, loss="categorical_crossentropy", metrics=["accuracy"])
    return model


def unfreeze_model(model, layers_to_unfreeze=20, learning_rate=1e-5, loss="categorical_crossentropy",
                   metrics=None):
    """Unfreeze part of `model` and recompile it for fine-tuning."""
    if metrics is None:
        metrics = ["accuracy"]

    if isinstance(layers_to_unfreeze, str):
        unfreeze_from = None
        for i, layer in enumerate(model.layers):
            if layers_to_unfreeze in layer.name:
                unfreeze_from = i
                break
        if unfreeze_from is None:
            raise ValueError(f"No layer name contains {layers_to_unfreeze!r}.")
        layers_to_process = model.layers[unfreeze_from:]
    elif isinstance(layers_to_unfreeze, int):
        n_layers_to_unfreeze = min(layers_to_unfreeze, len(model.layers))
        layers_to_process = model.layers[-n_layers_to_unfreeze:]
    else:
        raise TypeError(f"layers_to_unfreeze must be an int or str, received: {type(layers_to_unfreeze)}")

    # We keep BatchNorm layers frozen.
    for layer in layers_to_process:
        if not isinstance(layer, layers.BatchNormalization):
            layer.trainable = True

    optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
    return model


def load_images_and_labels(rng, n):
    # Stands in for the Stanford Dogs download: RGB images of different sizes, as PIL decodes them.
    images = [rng.integers(0, 256, size=(int(rng.integers(28, 48)), int(rng.integers(28, 48)), 3), dtype=np.uint8)
              for _ in range(n)]
    return images, rng.integers(0, NUM_CLASSES, size=n)


def trainable_summary(model):
    return {"trainable_layers": [layer.name for layer in model.layers if layer.trainable and layer.weights],
            "num_trainable_weights": len(model.trainable_weights),
            "num_non_trainable_weights": len(model.non_trainable_weights)}


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(5)
    train_images, train_labels = load_images_and_labels(rng, 16)
    test_images, test_labels = load_images_and_labels(rng, 8)

    # Preview stream with resized images, and the augmentation of one image
    preview_train = ResizeOnlyDataset(train_images, train_labels, IMG_SIZE, batch_size=1)
    first_image, first_label = preview_train[0]
    aug_img = np.array(img_augmentation(np.expand_dims(np.array(first_image), axis=0)))

    ds_train = StanfordDogsDataset(train_images, train_labels, num_classes=NUM_CLASSES, img_size=IMG_SIZE,
                                   batch_size=BATCH_SIZE, augment=True, shuffle=True, workers=2,
                                   use_multiprocessing=False)
    ds_test = StanfordDogsDataset(test_images, test_labels, num_classes=NUM_CLASSES, img_size=IMG_SIZE,
                                  batch_size=BATCH_SIZE, augment=False, shuffle=False)

    # A model from scratch (built and compiled; the example trains it for 40 epochs)
    scratch = EfficientNetB0(include_top=True, weights=None, classes=NUM_CLASSES,
                             input_shape=(IMG_SIZE, IMG_SIZE, 3))
    scratch.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])

    # Transfer learning: the frozen base, then the last 20 layers unfrozen
    model = build_model(num_classes=NUM_CLASSES)
    frozen = trainable_summary(model)
    hist = model.fit(ds_train, epochs=1, validation_data=ds_test, verbose=0)
    model = unfreeze_model(model)
    unfrozen = trainable_summary(model)
    hist = model.fit(ds_train, epochs=1, validation_data=ds_test, verbose=0)

    x_test, y_test = ds_test[0]

    def probe(m):
        features = keras.Model(m.input, m.get_layer("top_activation").output)
        return {"top_activation": features.predict(x_test[:4], verbose=0)}

    return {
        "model": model,
        "loss": hist.history["loss"][-1],
        "inputs": x_test[:4],
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {
            "preview_image": first_image, "preview_label": first_label,
            "augmented_shape": list(aug_img.shape), "test_labels": y_test,
            "scratch_params": scratch.count_params(), "num_layers": len(model.layers),
            "frozen": frozen, "unfrozen": unfrozen, "history_keys": sorted(hist.history),
        },
    }


if __name__ == "__main__":
    print(main())
