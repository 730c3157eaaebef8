"""Supervised Contrastive Learning (keras-io examples/vision/supervised-contrastive-learning.py): a data
augmentation Sequential (Normalization adapted to the training images, RandomFlip, RandomRotation) shared by
every encoder, an encoder model (augmentation, then a ResNet-V2-style network with pooling="avg") reused in
three models: a baseline classifier trained end to end (experiment 1), the encoder with a projection head
trained with a SupervisedContrastiveLoss(temperature) that overrides Loss.__call__, then a classifier on the
same encoder frozen by setting `layer.trainable = False` on the encoder's layers (experiment 2), each compiled
and trained with fit and evaluated with evaluate.
Changes for Keras 3.15 without TensorFlow: the loss's tf.math.l2_normalize, tf.divide, tf.matmul, tf.transpose
and tf.squeeze are ops.normalize, ops.divide, ops.matmul, ops.transpose and ops.squeeze, and
tensorflow_addons' npairs_loss is written out with keras.ops as tfa defines it (the label-equality matrix,
normalized per row, as the targets of a softmax cross-entropy on the logits, averaged); RandomWidth and
RandomHeight, which Keras 3 no longer has, are left out of the augmentation. Smaller: keras.applications'
ResNet50V2 (23.5M weights) is a two-block pre-activation ResNet of the same construction (Conv2D stem,
BatchNormalization-ReLU-Conv2D residual blocks with an Add shortcut, a last BatchNormalization-ReLU, global
average pooling); 48 CIFAR-10-shaped training and 16 test images, batches of 16 (the example's 265), one
epoch, hidden_units 32 and projection_units 16 (the example's 512 and 128).
The probe reads the frozen encoder's features and the contrastive loss of them for the test labels."""
import keras
import numpy as np
from keras import layers, ops

num_classes = 10
input_shape = (32, 32, 3)

learning_rate = 0.001
batch_size = 16  # the example's 265
hidden_units = 32  # the example's 512
projection_units = 16  # the example's 128
num_epochs = 1  # the example's 50
dropout_rate = 0.5
temperature = 0.05

data_augmentation = None  # built in main(), shared by every encoder as in the example


def resnet_v2(input_shape, pooling="avg", filters=(8, 16)):
    """Stands in for keras.applications.ResNet50V2(include_top=False, weights=None, pooling="avg")."""
    inputs = keras.Input(shape=input_shape)
    x = layers.Conv2D(filters[0], 3, padding="same", name="conv1_conv")(inputs)
    for i, width in enumerate(filters):
        preact = layers.BatchNormalization(name=f"conv{i + 2}_preact_bn")(x)
        preact = layers.Activation("relu", name=f"conv{i + 2}_preact_relu")(preact)
        stride = 1 if i == 0 else 2
        shortcut = x if i == 0 else layers.Conv2D(width, 1, strides=stride, name=f"conv{i + 2}_0_conv")(preact)
        y = layers.Conv2D(width, 3, strides=stride, padding="same", use_bias=False, name=f"conv{i + 2}_1_conv")(preact)
        y = layers.BatchNormalization(name=f"conv{i + 2}_1_bn")(y)
        y = layers.Activation("relu", name=f"conv{i + 2}_1_relu")(y)
        y = layers.Conv2D(width, 3, padding="same", name=f"conv{i + 2}_2_conv")(y)
        x = layers.Add(name=f"conv{i + 2}_out")([shortcut, y])
    x = layers.BatchNormalization(name="post_bn")(x)
    x = layers.Activation("relu", name="post_relu")(x)
    if pooling == "avg":
        x = layers.GlobalAveragePooling2D(name="avg_pool")(x)
    return keras.Model(inputs, x, name="resnet50v2")


def create_encoder():
    resnet = resnet_v2(input_shape, pooling="avg")

    inputs = keras.Input(shape=input_shape)
    augmented = data_augmentation(inputs)
    outputs = resnet(augmented)
    model = keras.Model(inputs=inputs, outputs=outputs, name="cifar10-encoder")
    return model


def create_classifier(encoder, trainable=True):

    for layer in encoder.layers:
        layer.trainable = trainable

    inputs = keras.Input(shape=input_shape)
    features = encoder(inputs)
    features = layers.Dropout(dropout_rate)(features)
    features = layers.Dense(hidden_units, activation="relu")(features)
    features = layers.Dropout(dropout_rate)(features)
    outputs = layers.Dense(num_classes, activation="softmax")(features)

    model = keras.Model(inputs=inputs, outputs=outputs, name="cifar10-classifier")
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def npairs_loss(y_true, y_pred):
    """tensorflow_addons.losses.npairs_loss in keras.ops."""
    y_pred = ops.convert_to_tensor(y_pred)
    y_true = ops.cast(y_true, y_pred.dtype)
    # Expand to [batch_size, 1]
    y_true = ops.expand_dims(y_true, -1)
    y_true = ops.cast(ops.equal(y_true, ops.transpose(y_true)), y_pred.dtype)
    y_true /= ops.sum(y_true, 1, keepdims=True)
    loss = ops.categorical_crossentropy(y_true, y_pred, from_logits=True)
    return ops.mean(loss)


class SupervisedContrastiveLoss(keras.losses.Loss):
    def __init__(self, temperature=1, name=None):
        super().__init__(name=name)
        self.temperature = temperature

    def __call__(self, labels, feature_vectors, sample_weight=None):
        # Normalize feature vectors
        feature_vectors_normalized = ops.normalize(feature_vectors, axis=1)
        # Compute logits
        logits = ops.divide(
            ops.matmul(
                feature_vectors_normalized, ops.transpose(feature_vectors_normalized)
            ),
            self.temperature,
        )
        return npairs_loss(ops.squeeze(labels), logits)


def add_projection_head(encoder):
    inputs = keras.Input(shape=input_shape)
    features = encoder(inputs)
    outputs = layers.Dense(projection_units, activation="relu")(features)
    model = keras.Model(
        inputs=inputs, outputs=outputs, name="cifar-encoder_with_projection-head"
    )
    return model


def load_data(rng):
    """Stands in for keras.datasets.cifar10.load_data(): uint8 images, (n, 1) uint8 labels."""
    x_train = rng.integers(0, 256, size=(48, *input_shape), dtype=np.uint8)
    y_train = rng.integers(0, num_classes, size=(48, 1), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(16, *input_shape), dtype=np.uint8)
    y_test = rng.integers(0, num_classes, size=(16, 1), dtype=np.uint8)
    return (x_train, y_train), (x_test, y_test)


def main():
    global data_augmentation
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(81)

    (x_train, y_train), (x_test, y_test) = load_data(rng)
    print(f"x_train shape: {x_train.shape} - y_train shape: {y_train.shape}")

    data_augmentation = keras.Sequential([layers.Normalization(), layers.RandomFlip("horizontal"),
                                          layers.RandomRotation(0.02)])
    # Setting the state of the normalization layer.
    data_augmentation.layers[0].adapt(x_train)

    # Experiment 1: Train the baseline classification model
    encoder = create_encoder()
    classifier = create_classifier(encoder)
    classifier.summary()
    baseline = classifier.fit(x=x_train, y=y_train, batch_size=batch_size, epochs=num_epochs, verbose=0)
    accuracy = classifier.evaluate(x_test, y_test, verbose=0)[1]
    print(f"Test accuracy: {round(accuracy * 100, 2)}%")
    baseline_trainable = len(classifier.trainable_weights)

    # Experiment 2: pretrain the encoder with the supervised contrastive loss
    encoder = create_encoder()
    encoder_with_projection_head = add_projection_head(encoder)
    encoder_with_projection_head.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=SupervisedContrastiveLoss(temperature),
    )
    encoder_with_projection_head.summary()
    pretraining = encoder_with_projection_head.fit(x=x_train, y=y_train, batch_size=batch_size,
                                                   epochs=num_epochs, verbose=0)

    # Train the classifier with the frozen encoder
    classifier = create_classifier(encoder, trainable=False)
    moving_mean = ops.convert_to_numpy(encoder.get_layer("resnet50v2").get_layer("post_bn").moving_mean)
    history = classifier.fit(x=x_train, y=y_train, batch_size=batch_size, epochs=num_epochs, verbose=0)
    accuracy = classifier.evaluate(x_test, y_test, verbose=0)[1]
    print(f"Test accuracy: {round(accuracy * 100, 2)}%")
    moving_mean_after = ops.convert_to_numpy(encoder.get_layer("resnet50v2").get_layer("post_bn").moving_mean)

    loss_fn = SupervisedContrastiveLoss(temperature)
    fixed = np.random.default_rng(82)
    vectors = fixed.normal(size=(8, projection_units)).astype("float32")
    vector_labels = fixed.integers(0, 3, size=(8, 1)).astype("uint8")

    def probe(model):
        frozen_encoder = model.get_layer("cifar10-encoder")
        features = frozen_encoder.predict(x_test, verbose=0)
        return {"features": features, "contrastive_loss_of_features": loss_fn(y_test, features)}

    return {
        "model": classifier,
        "loss": history.history["loss"][-1],
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {
            "contrastive_loss": loss_fn(vector_labels, vectors),
            "npairs_loss": npairs_loss(np.squeeze(vector_labels), vectors @ vectors.T),
            "normalization": [data_augmentation.layers[0].mean, data_augmentation.layers[0].variance],
            "trainable_weights": [baseline_trainable, len(encoder_with_projection_head.trainable_weights),
                                  len(classifier.trainable_weights), len(classifier.non_trainable_weights)],
            "frozen_moving_mean_kept": bool(np.array_equal(moving_mean, moving_mean_after)),
            "history_keys": [sorted(baseline.history), sorted(pretraining.history), sorted(history.history)],
        },
    }


if __name__ == "__main__":
    print(main())
