"""Image similarity estimation using a Siamese Network with a contrastive loss (keras-io
examples/vision/siamese_contrastive.py, its Keras 3 form): pairs of MNIST-shaped images made with Python's
`random` (a matching pair labelled 0, a non-matching one 1), a functional embedding network (BatchNormalization,
tanh Conv2D, AveragePooling2D, Flatten, BatchNormalization, a tanh Dense) shared by two towers, a Lambda of the
euclidean distance (ops.sum, ops.square, ops.sqrt of ops.maximum with keras.backend.epsilon(), output_shape=(1,)),
BatchNormalization and a sigmoid Dense, compiled with the example's contrastive loss (a closure over its margin
argument, written with ops.square, ops.maximum and ops.mean), RMSprop and accuracy, trained on two inputs with
validation data; then evaluate and predict on the test pairs. As the example, the (n, 28, 28) images go to
Input((28, 28, 1)) without a channel axis.
Smaller: 40 training, 20 validation and 20 test images (80, 40 and 40 pairs), one epoch (the example's 10).
The probe reads the shared embedding network and the Lambda's distance through a sub-model.
The shared embedding network is what is saved and exported: the siamese model holds a Lambda of a Python
function, which Keras 3.15 saves by name only and cannot load back (load_model fails, safe_mode=False too,
unless the function is passed in custom_objects), and which kgraph refuses to save by design (README, Lambda)."""
import random

import keras
import numpy as np
from keras import ops

epochs = 1  # the example's 10
batch_size = 16
margin = 1  # Margin for contrastive loss.


def make_pairs(x, y):
    """Creates a tuple containing image pairs with corresponding label.

    Arguments:
        x: List containing images, each index in this list corresponds to one image.
        y: List containing labels, each label with datatype of `int`.

    Returns:
        Tuple containing two numpy arrays as (pairs_of_samples, labels),
        where pairs_of_samples' shape is (2len(x), 2,n_features_dims) and
        labels are a binary array of shape (2len(x)).
    """

    num_classes = max(y) + 1
    digit_indices = [np.where(y == i)[0] for i in range(num_classes)]

    pairs = []
    labels = []

    for idx1 in range(len(x)):
        # add a matching example
        x1 = x[idx1]
        label1 = y[idx1]
        idx2 = random.choice(digit_indices[label1])
        x2 = x[idx2]

        pairs += [[x1, x2]]
        labels += [0]

        # add a non-matching example
        label2 = random.randint(0, num_classes - 1)
        while label2 == label1:
            label2 = random.randint(0, num_classes - 1)

        idx2 = random.choice(digit_indices[label2])
        x2 = x[idx2]

        pairs += [[x1, x2]]
        labels += [1]

    return np.array(pairs), np.array(labels).astype("float32")


# Provided two tensors t1 and t2
# Euclidean distance = sqrt(sum(square(t1-t2)))
def euclidean_distance(vects):
    """Find the Euclidean distance between two vectors.

    Arguments:
        vects: List containing two tensors of same length.

    Returns:
        Tensor containing euclidean distance
        (as floating point value) between vectors.
    """

    x, y = vects
    sum_square = ops.sum(ops.square(x - y), axis=1, keepdims=True)
    return ops.sqrt(ops.maximum(sum_square, keras.backend.epsilon()))


def loss(margin=1):
    """Provides 'contrastive_loss' an enclosing scope with variable 'margin'.

    Arguments:
        margin: Integer, defines the baseline for distance for which pairs
                should be classified as dissimilar. - (default is 1).

    Returns:
        'contrastive_loss' function with data ('margin') attached.
    """

    # Contrastive loss = mean( (1-true_value) * square(prediction) +
    #                         true_value * square( max(margin-prediction, 0) ))
    def contrastive_loss(y_true, y_pred):
        """Calculates the contrastive loss.

        Arguments:
            y_true: List of labels, each label is of type float32.
            y_pred: List of predictions of same length as of y_true,
                    each label is of type float32.

        Returns:
            A tensor containing contrastive loss as floating point value.
        """

        square_pred = ops.square(y_pred)
        margin_square = ops.square(ops.maximum(margin - (y_pred), 0))
        return ops.mean((1 - y_true) * square_pred + (y_true) * margin_square)

    return contrastive_loss


def build_siamese():
    input = keras.layers.Input((28, 28, 1))
    x = keras.layers.BatchNormalization()(input)
    x = keras.layers.Conv2D(4, (5, 5), activation="tanh")(x)
    x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Conv2D(16, (5, 5), activation="tanh")(x)
    x = keras.layers.AveragePooling2D(pool_size=(2, 2))(x)
    x = keras.layers.Flatten()(x)

    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Dense(10, activation="tanh")(x)
    embedding_network = keras.Model(input, x)

    input_1 = keras.layers.Input((28, 28, 1))
    input_2 = keras.layers.Input((28, 28, 1))

    # As mentioned above, Siamese Network share weights between
    # tower networks (sister networks). To allow this, we will use
    # same embedding network for both tower networks.
    tower_1 = embedding_network(input_1)
    tower_2 = embedding_network(input_2)

    merge_layer = keras.layers.Lambda(euclidean_distance, output_shape=(1,))(
        [tower_1, tower_2]
    )
    normal_layer = keras.layers.BatchNormalization()(merge_layer)
    output_layer = keras.layers.Dense(1, activation="sigmoid")(normal_layer)
    siamese = keras.Model(inputs=[input_1, input_2], outputs=output_layer)
    return embedding_network, siamese


def load_data(rng, *parts):
    """Stands in for keras.datasets.mnist.load_data(): uint8 images and uint8 digits, every digit in each part."""
    x = rng.integers(0, 256, size=(sum(parts), 28, 28), dtype=np.uint8)
    y = np.concatenate([rng.permutation(np.arange(n) % 10) for n in parts]).astype(np.uint8)
    return x, y


def make_probe(x_1, x_2):
    def probe(model):
        embedding = next(layer for layer in model.layers if isinstance(layer, keras.Model))
        distance = next(layer for layer in model.layers if isinstance(layer, keras.layers.Lambda))
        towers = keras.Model(model.inputs, [distance.input[0], distance.input[1], distance.output])
        tower_a, tower_b, dist = towers.predict([x_1, x_2], verbose=0)
        return {"embedding": embedding.predict(x_1, verbose=0), "towers": [tower_a, tower_b], "distance": dist}

    return probe


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(49)

    x_train_val, y_train_val = load_data(rng, 40, 20)
    x_test, y_test = load_data(rng, 20)

    # Change the data type to a floating point format
    x_train_val = x_train_val.astype("float32")
    x_test = x_test.astype("float32")

    # Keep a third of train_val in validation set (the example keeps 50%)
    x_train, x_val = x_train_val[:40], x_train_val[40:]
    y_train, y_val = y_train_val[:40], y_train_val[40:]
    del x_train_val, y_train_val

    # make train pairs
    pairs_train, labels_train = make_pairs(x_train, y_train)

    # make validation pairs
    pairs_val, labels_val = make_pairs(x_val, y_val)

    # make test pairs
    pairs_test, labels_test = make_pairs(x_test, y_test)

    x_train_1 = pairs_train[:, 0]  # x_train_1.shape is (80, 28, 28)
    x_train_2 = pairs_train[:, 1]
    x_val_1 = pairs_val[:, 0]
    x_val_2 = pairs_val[:, 1]
    x_test_1 = pairs_test[:, 0]
    x_test_2 = pairs_test[:, 1]

    embedding_network, siamese = build_siamese()

    siamese.compile(loss=loss(margin=margin), optimizer="RMSprop", metrics=["accuracy"])
    siamese.summary()

    history = siamese.fit(
        [x_train_1, x_train_2],
        labels_train,
        validation_data=([x_val_1, x_val_2], labels_val),
        batch_size=batch_size,
        epochs=epochs,
        verbose=0,
    )

    results = siamese.evaluate([x_test_1, x_test_2], labels_test, verbose=0)
    print("test loss, test acc:", results)

    predictions = siamese.predict([x_test_1, x_test_2], verbose=0)
    print("True: {} | Pred: {:.5f}".format(labels_test[0], predictions[0][0]))

    fixed_true = ops.convert_to_tensor(labels_test[:8, None])
    fixed_pred = ops.convert_to_tensor(np.random.default_rng(50).uniform(0.0, 1.5, size=(8, 1)).astype("float32"))

    return {
        "model": siamese,
        "saved_model": embedding_network,
        "loss": history.history["loss"][-1],
        "inputs": [x_test_1[:6], x_test_2[:6]],
        "evaluate": ([x_test_1, x_test_2], labels_test),
        "probe": make_probe(x_test_1[:4], x_test_2[:4]),
        "values": {
            "pairs_train_shape": list(pairs_train.shape),
            "labels_train": labels_train,
            "contrastive_loss": loss(margin=margin)(fixed_true, fixed_pred),
            "contrastive_loss_margin_2": loss(margin=2)(fixed_true, fixed_pred),
            "history_keys": sorted(history.history),
            "params": siamese.count_params(),
            "layer_types": [type(layer).__name__ for layer in siamese.layers],
        },
    }


if __name__ == "__main__":
    print(main())
