"""Point cloud classification with PointNet (keras-io examples/vision/pointnet.py): conv_bn and dense_bn blocks
(Conv1D with kernel_size=1 / Dense, BatchNormalization(momentum=0.0), ReLU), two T-Nets whose last Dense starts
at the identity (a Constant bias initializer of np.eye(k).flatten()) and carries a custom OrthogonalRegularizer
as activity_regularizer, the learned k x k transform applied with Dot(axes=(2, 1)), GlobalMaxPooling1D, Dropout
and a softmax head over ModelNet10's 10 classes, trained with fit on float64 point clouds.
The example's tf.* calls are Keras 3 ops here: OrthogonalRegularizer uses ops.eye, ops.reshape, ops.tensordot and
ops.sum for tf.eye, tf.reshape, tf.tensordot and tf.reduce_sum, and gets a get_config() (Keras serializes a
layer's activity_regularizer and needs it to save the model). The tf.data pipeline (trimesh-sampled meshes,
`augment` with tf.random.uniform jitter and tf.random.shuffle of the points, shuffle and batch) is NumPy here:
the same jitter and point shuffle from a seeded generator, then fit's own shuffle and batch_size. Smaller: 64
points per cloud instead of 2048, 32 training and 16 test clouds, one epoch.
The probe reads the first T-Net's 3 x 3 transforms, the activity regularization losses and the pooled global
feature."""
import keras
import numpy as np
from keras import layers, ops

NUM_POINTS = 64  # the example's 2048
NUM_CLASSES = 10
BATCH_SIZE = 32


def parse_dataset(rng, num_points=2048):
    """Stands in for sampling the ModelNet10 meshes with trimesh: float64 point clouds, one label per folder."""
    train_points = rng.normal(size=(32, num_points, 3))
    test_points = rng.normal(size=(16, num_points, 3))
    train_labels = rng.integers(0, NUM_CLASSES, size=(32,))
    test_labels = rng.integers(0, NUM_CLASSES, size=(16,))
    class_map = {i: name for i, name in enumerate(["bathtub", "bed", "chair", "desk", "dresser", "monitor",
                                                    "night_stand", "sofa", "table", "toilet"])}
    return train_points, test_points, train_labels, test_labels, class_map


def augment(rng, points):
    # jitter points
    points = points + rng.uniform(-0.005, 0.005, size=points.shape)
    # shuffle points
    return np.stack([rng.permutation(p) for p in points])


def conv_bn(x, filters):
    x = layers.Conv1D(filters, kernel_size=1, padding="valid")(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)


def dense_bn(x, filters):
    x = layers.Dense(filters)(x)
    x = layers.BatchNormalization(momentum=0.0)(x)
    return layers.Activation("relu")(x)


class OrthogonalRegularizer(keras.regularizers.Regularizer):
    def __init__(self, num_features, l2reg=0.001):
        self.num_features = num_features
        self.l2reg = l2reg
        self.eye = ops.eye(num_features)

    def __call__(self, x):
        x = ops.reshape(x, (-1, self.num_features, self.num_features))
        xxt = ops.tensordot(x, x, axes=(2, 2))
        xxt = ops.reshape(xxt, (-1, self.num_features, self.num_features))
        return ops.sum(self.l2reg * ops.square(xxt - self.eye))

    def get_config(self):
        return {"num_features": self.num_features, "l2reg": self.l2reg}


def tnet(inputs, num_features):
    # Initalise bias as the indentity matrix
    bias = keras.initializers.Constant(np.eye(num_features).flatten())
    reg = OrthogonalRegularizer(num_features)

    x = conv_bn(inputs, 32)
    x = conv_bn(x, 64)
    x = conv_bn(x, 512)
    x = layers.GlobalMaxPooling1D()(x)
    x = dense_bn(x, 256)
    x = dense_bn(x, 128)
    x = layers.Dense(
        num_features * num_features,
        kernel_initializer="zeros",
        bias_initializer=bias,
        activity_regularizer=reg,
    )(x)
    feat_T = layers.Reshape((num_features, num_features))(x)
    # Apply affine transformation to input features
    return layers.Dot(axes=(2, 1))([inputs, feat_T])


def build_model():
    inputs = keras.Input(shape=(NUM_POINTS, 3))

    x = tnet(inputs, 3)
    x = conv_bn(x, 32)
    x = conv_bn(x, 32)
    x = tnet(x, 32)
    x = conv_bn(x, 32)
    x = conv_bn(x, 64)
    x = conv_bn(x, 512)
    x = layers.GlobalMaxPooling1D()(x)
    x = dense_bn(x, 256)
    x = layers.Dropout(0.3)(x)
    x = dense_bn(x, 128)
    x = layers.Dropout(0.3)(x)

    outputs = layers.Dense(NUM_CLASSES, activation="softmax")(x)

    return keras.Model(inputs=inputs, outputs=outputs, name="pointnet")


def main():
    keras.utils.set_random_seed(1234)
    rng = np.random.default_rng(61)

    train_points, test_points, train_labels, test_labels, CLASS_MAP = parse_dataset(rng, NUM_POINTS)
    train_points = augment(rng, train_points)

    model = build_model()
    model.summary()

    model.compile(
        loss="sparse_categorical_crossentropy",
        optimizer=keras.optimizers.Adam(learning_rate=0.001),
        metrics=["sparse_categorical_accuracy"],
    )

    history = model.fit(train_points, train_labels, batch_size=BATCH_SIZE, epochs=1,
                        validation_data=(test_points, test_labels), verbose=0)

    points = test_points[:8, ...]
    # The example's first Dense of the second T-Net has no regularizer; the two regularized ones are the k*k ones.
    transform_layers = [layer for layer in model.layers
                        if isinstance(layer, layers.Dense) and layer.activity_regularizer is not None]
    pooled = [layer for layer in model.layers if isinstance(layer, layers.GlobalMaxPooling1D)][-1]
    regularizer = OrthogonalRegularizer(3)

    def probe(m):
        transforms = keras.Model(m.inputs, [transform_layers[0].output, pooled.output])
        first_transform, global_feature = transforms.predict(points, verbose=0)
        preds = m.predict(points, verbose=0)
        m(points[:2], training=False)
        return {
            "input_transform": first_transform.reshape(-1, 3, 3),
            "global_feature": global_feature,
            "predicted_classes": np.argmax(preds, -1),
            "activity_losses": [ops.convert_to_numpy(loss) for loss in m.losses],
        }

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": test_points,
        "evaluate": (test_points, test_labels),
        "probe": probe,
        "values": {
            "history_keys": sorted(history.history),
            "identity_regularization": regularizer(np.tile(np.eye(3).flatten(), (2, 1)).astype("float32")),
            "regularization": regularizer(np.random.default_rng(62).normal(size=(2, 9)).astype("float32")),
            "regularizer_config": sorted(regularizer.get_config().items()),
            "class_map": [CLASS_MAP[i] for i in range(NUM_CLASSES)],
            "weights": [list(w.shape) for w in model.get_weights()],
        },
    }


if __name__ == "__main__":
    print(main())
