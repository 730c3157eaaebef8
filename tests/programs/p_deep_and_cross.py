"""Structured data learning with Deep & Cross networks (keras-io examples/structured_data/
wide_deep_cross_networks.py, its third experiment): a dict of named scalar Inputs (shape=()), the numeric
features widened with keras.ops.expand_dims, each categorical feature embedded with an Embedding of
int(sqrt(vocabulary size)) dimensions, all joined with layers.concatenate; the cross part written as the
example writes it (for each hidden layer a Dense of the cross width, then `x0 * x + cross` on the symbolic
tensors) and a BatchNormalization, the deep part Dense/BatchNormalization/ReLU/Dropout blocks, both
concatenated into a softmax head, compiled with Adam, SparseCategoricalCrossentropy and
SparseCategoricalAccuracy, trained with fit and evaluated on a test set.
Changed to run on Keras 3.15 with torch: the example reads CSV files with tf.data and turns the categorical
strings into indices with StringLookup (only the TensorFlow backend takes string inputs); here the
Covertype-shaped data is synthetic, given as dicts of NumPy arrays, and each categorical feature arrives as its
integer index (an int32 Input) where the example's StringLookup(output_mode="int") would produce it.
Smaller: 48 training and 24 test rows instead of 506,011, batches of 16 instead of 265.
The probe reads the concatenated cross and deep features (the layer before the head) through a sub-model."""
import math

import keras
import numpy as np
from keras import layers

TARGET_FEATURE_NAME = "Cover_Type"

TARGET_FEATURE_LABELS = ["0", "1", "2", "3", "4", "5", "6"]

NUMERIC_FEATURE_NAMES = [
    "Aspect",
    "Elevation",
    "Hillshade_3pm",
    "Hillshade_9am",
    "Hillshade_Noon",
    "Horizontal_Distance_To_Fire_Points",
    "Horizontal_Distance_To_Hydrology",
    "Horizontal_Distance_To_Roadways",
    "Slope",
    "Vertical_Distance_To_Hydrology",
]

CATEGORICAL_FEATURES_WITH_VOCABULARY = {
    "Soil_Type": [f"soil_type_{idx+1}" for idx in range(40)],
    "Wilderness_Area": [f"area_type_{idx+1}" for idx in range(4)],
}

CATEGORICAL_FEATURE_NAMES = list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())

FEATURE_NAMES = NUMERIC_FEATURE_NAMES + CATEGORICAL_FEATURE_NAMES

NUM_CLASSES = len(TARGET_FEATURE_LABELS)

learning_rate = 0.001
dropout_rate = 0.1
batch_size = 16  # the example's 265
num_epochs = 1

hidden_units = [32, 32]


def make_data(rng, n):
    """Stands in for the Covertype CSV files: numeric columns on their original scales and categorical
    columns as the indices StringLookup would give their strings."""
    features = {}
    scales = {"Elevation": (1850, 3850), "Aspect": (0, 360), "Slope": (0, 66)}
    for name in NUMERIC_FEATURE_NAMES:
        low, high = scales.get(name, (0, 255) if name.startswith("Hillshade") else (-150, 7000))
        features[name] = rng.uniform(low, high, size=(n,)).astype("float32")
    for name, vocabulary in CATEGORICAL_FEATURES_WITH_VOCABULARY.items():
        features[name] = rng.integers(0, len(vocabulary), size=(n,)).astype("int32")
    target = rng.integers(0, NUM_CLASSES, size=(n,))
    return features, target


def create_model_inputs():
    inputs = {}
    for feature_name in FEATURE_NAMES:
        if feature_name in NUMERIC_FEATURE_NAMES:
            inputs[feature_name] = layers.Input(
                name=feature_name, shape=(), dtype="float32"
            )
        else:
            # The example's string Input, here the index its StringLookup would produce.
            inputs[feature_name] = layers.Input(
                name=feature_name, shape=(), dtype="int32"
            )
    return inputs


def encode_inputs(inputs, use_embedding=False):
    encoded_features = []
    for feature_name in inputs:
        if feature_name in CATEGORICAL_FEATURE_NAMES:
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
            encoded_feature = inputs[feature_name]
            embedding_dims = int(math.sqrt(len(vocabulary)))
            # Create an embedding layer with the specified dimensions.
            embedding = layers.Embedding(
                input_dim=len(vocabulary), output_dim=embedding_dims
            )
            # Convert the index values to embedding representations.
            encoded_feature = embedding(encoded_feature)
        else:
            # Use the numerical features as-is.
            encoded_feature = keras.ops.expand_dims(inputs[feature_name], -1)

        encoded_features.append(encoded_feature)

    all_features = layers.concatenate(encoded_features)
    return all_features


def create_deep_and_cross_model():
    inputs = create_model_inputs()
    x0 = encode_inputs(inputs, use_embedding=True)

    cross = x0
    for _ in hidden_units:
        units = cross.shape[-1]
        x = layers.Dense(units)(cross)
        cross = x0 * x + cross
    cross = layers.BatchNormalization()(cross)

    deep = x0
    for units in hidden_units:
        deep = layers.Dense(units)(deep)
        deep = layers.BatchNormalization()(deep)
        deep = layers.ReLU()(deep)
        deep = layers.Dropout(dropout_rate)(deep)

    merged = layers.concatenate([cross, deep])
    outputs = layers.Dense(units=NUM_CLASSES, activation="softmax")(merged)
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def run_experiment(model, train_data, test_data):
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
    )

    print("Start training the model...")
    history = model.fit(*train_data, batch_size=batch_size, epochs=num_epochs, verbose=0)
    print("Model training finished")

    _, accuracy = model.evaluate(*test_data, batch_size=batch_size, verbose=0)

    print(f"Test accuracy: {round(accuracy * 100, 2)}%")
    return history


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(61)
    train_data = make_data(rng, 48)
    test_data = make_data(rng, 24)

    deep_and_cross_model = create_deep_and_cross_model()
    history = run_experiment(deep_and_cross_model, train_data, test_data)

    x_test, y_test = test_data

    def probe(model):
        features = keras.Model(model.inputs, model.layers[-2].output)
        return {"merged_features": features.predict(x_test, verbose=0)}

    return {
        "model": deep_and_cross_model,
        "loss": history.history["loss"][-1],
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {"history_keys": sorted(history.history),
                   "weights": [list(w.shape) for w in deep_and_cross_model.get_weights()],
                   "input_names": [t.name for t in deep_and_cross_model.inputs]},
    }


if __name__ == "__main__":
    print(main())
