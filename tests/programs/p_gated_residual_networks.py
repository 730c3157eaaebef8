"""Classification with Gated Residual and Variable Selection Networks (keras-io
examples/structured_data/classification_with_grn_and_vsn.py, its Keras 3 form): one Input of shape () per
feature (float32 for the 7 numeric census features, int64 indices for the categorical ones), a
VariableSelection layer (an Embedding per categorical feature with clipped indices, a Dense projection per
numeric feature, both held in dicts, a GatedResidualNetwork per feature and one on their concatenation, whose
softmax weights the stacked per-feature outputs; `build()` takes no input shape and only sets `built`), each
GatedResidualNetwork an ELU Dense, a Dense, Dropout, a projection Dense used only where the width differs (left
unbuilt otherwise), a GatedLinearUnit (a Dense times a sigmoid Dense) and LayerNormalization; a sigmoid head,
compiled with BinaryCrossentropy and BinaryAccuracy(name="accuracy") and trained with fit on the census
instance weights as sample weights, EarlyStopping on val_loss, then evaluated.
Changes: the CSV files read with pandas and tf.data.experimental.make_csv_dataset, and the StringLookup of
`process` (TensorFlow-only under Keras 3), are NumPy here: seeded columns, each categorical value looked up in
its sorted vocabulary (StringLookup with mask_token=None and num_oov_indices=0 gives the same indices), batches
by fit's batch_size; the per-backend weighted sum at the end of VariableSelection.call (jnp.sum, torch.sum or
tf.matmul with transpose_a, by keras.backend.backend()) is its backend-agnostic form ops.sum(v * x, axis=1), which
is what the jax and torch branches compute; keras.utils.plot_model (a picture) is left out. Smaller: 6 of the 34
categorical columns (with vocabularies of 2 to 9 values), 48 training, 16 validation and 16 test rows, batches of
16 (the example's 265), encoding_size 8 (the example's 16), one epoch.
The example's layers define no get_config(), so the model is not saved (a .keras file of it cannot be loaded).
The probe reads the feature weights of the variable selection (its softmax) and its output."""
import keras
import numpy as np
from keras import layers

# Column names (the census file's 42, less 28 of its categorical columns).
CSV_HEADER = [
    "age",
    "class_of_worker",
    "education",
    "wage_per_hour",
    "marital_stat",
    "race",
    "sex",
    "capital_gains",
    "capital_losses",
    "dividends_from_stocks",
    "instance_weight",
    "citizenship",
    "num_persons_worked_for_employer",
    "weeks_worked_in_year",
    "income_level",
]

# Target feature name.
TARGET_FEATURE_NAME = "income_level"
# Weight column name.
WEIGHT_COLUMN_NAME = "instance_weight"
# Numeric feature names.
NUMERIC_FEATURE_NAMES = [
    "age",
    "wage_per_hour",
    "capital_gains",
    "capital_losses",
    "dividends_from_stocks",
    "num_persons_worked_for_employer",
    "weeks_worked_in_year",
]
CATEGORICAL_VALUES = {
    "class_of_worker": [" Federal government", " Local government", " Never worked", " Private",
                        " Self-employed-incorporated", " State government", " Without pay"],
    "education": [" 10th grade", " Associates degree", " Bachelors degree", " High school graduate",
                  " Masters degree", " Some college but no degree", " Doctorate degree", " Children",
                  " Prof school degree"],
    "marital_stat": [" Divorced", " Married-civilian spouse present", " Never married", " Widowed"],
    "race": [" Amer Indian Aleut or Eskimo", " Asian or Pacific Islander", " Black", " Other", " White"],
    "sex": [" Female", " Male"],
    "citizenship": [" Foreign born- Not a citizen of U S", " Native- Born in the United States"],
}

CATEGORICAL_FEATURES_WITH_VOCABULARY = {}
FEATURE_NAMES = []

learning_rate = 0.001
dropout_rate = 0.15
batch_size = 16  # the example's 265
num_epochs = 1  # maybe adjusted to a desired value
encoding_size = 8  # the example's 16


def make_data(rng, n):
    """Stands in for the census CSV rows: numeric columns, categorical strings, the weight and the target."""
    data = {}
    for name in CSV_HEADER:
        if name in CATEGORICAL_VALUES:
            data[name] = rng.choice(CATEGORICAL_VALUES[name], size=n)
        elif name == TARGET_FEATURE_NAME:
            data[name] = rng.choice([" - 50000.", " 50000+."], size=n, p=[0.8, 0.2])
        else:
            data[name] = np.round(rng.gamma(2.0, 20.0, size=n), 1)
    return data


def process(features, target):
    """The example's `process`: categorical values to vocabulary indices; the instance weight apart."""
    features = dict(features)
    for feature_name in features:
        if feature_name in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[feature_name]
            features[feature_name] = np.searchsorted(vocabulary, features[feature_name].astype(str)).astype("int64")
        else:
            features[feature_name] = features[feature_name].astype("float32")
    # Get the instance weight.
    weight = features.pop(WEIGHT_COLUMN_NAME)
    return features, target, weight


def get_dataset(data):
    features = {name: data[name] for name in CSV_HEADER if name != TARGET_FEATURE_NAME}
    target = np.array([0 if x == " - 50000." else 1 for x in data[TARGET_FEATURE_NAME]], dtype="float32")
    return process(features, target)


def create_model_inputs():
    inputs = {}
    for feature_name in FEATURE_NAMES:
        if feature_name in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            # Make them int64, they are Categorical (whole units)
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="int64")
        else:
            # Make them float32, they are Real numbers
            inputs[feature_name] = layers.Input(name=feature_name, shape=(), dtype="float32")
    return inputs


class GatedLinearUnit(layers.Layer):
    def __init__(self, units):
        super().__init__()
        self.linear = layers.Dense(units)
        self.sigmoid = layers.Dense(units, activation="sigmoid")

    def call(self, inputs):
        return self.linear(inputs) * self.sigmoid(inputs)


class GatedResidualNetwork(layers.Layer):
    def __init__(self, units, dropout_rate):
        super().__init__()
        self.units = units
        self.elu_dense = layers.Dense(units, activation="elu")
        self.linear_dense = layers.Dense(units)
        self.dropout = layers.Dropout(dropout_rate)
        self.gated_linear_unit = GatedLinearUnit(units)
        self.layer_norm = layers.LayerNormalization()
        self.project = layers.Dense(units)

    def call(self, inputs):
        x = self.elu_dense(inputs)
        x = self.linear_dense(x)
        x = self.dropout(x)
        if inputs.shape[-1] != self.units:
            inputs = self.project(inputs)
        x = inputs + self.gated_linear_unit(x)
        x = self.layer_norm(x)
        return x


class VariableSelection(layers.Layer):
    def __init__(self, num_features, units, dropout_rate):
        super().__init__()
        self.units = units
        # Create an embedding layers with the specified dimensions
        self.embeddings = dict()
        for input_ in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            vocabulary = CATEGORICAL_FEATURES_WITH_VOCABULARY[input_]
            embedding_encoder = layers.Embedding(input_dim=len(vocabulary), output_dim=self.units, name=input_)
            self.embeddings[input_] = embedding_encoder

        # Projection layers for numeric features
        self.proj_layer = dict()
        for input_ in NUMERIC_FEATURE_NAMES:
            proj_layer = layers.Dense(units=self.units)
            self.proj_layer[input_] = proj_layer

        self.grns = list()
        # Create a GRN for each feature independently
        for idx in range(num_features):
            grn = GatedResidualNetwork(units, dropout_rate)
            self.grns.append(grn)
        # Create a GRN for the concatenation of all the features
        self.grn_concat = GatedResidualNetwork(units, dropout_rate)
        self.softmax = layers.Dense(units=num_features, activation="softmax")

    def call(self, inputs):
        concat_inputs = []
        for input_ in inputs:
            if input_ in CATEGORICAL_FEATURES_WITH_VOCABULARY:
                max_index = self.embeddings[input_].input_dim - 1  # Clamp the indices
                # torch had some index errors during embedding hence the clip function
                embedded_feature = self.embeddings[input_](keras.ops.clip(inputs[input_], 0, max_index))
                concat_inputs.append(embedded_feature)
            else:
                # Project the numeric feature to encoding_size using linear transformation.
                proj_feature = keras.ops.expand_dims(inputs[input_], -1)
                proj_feature = self.proj_layer[input_](proj_feature)
                concat_inputs.append(proj_feature)

        v = layers.concatenate(concat_inputs)
        v = self.grn_concat(v)
        v = keras.ops.expand_dims(self.softmax(v), axis=-1)
        x = []
        for idx, input in enumerate(concat_inputs):
            x.append(self.grns[idx](input))
        x = keras.ops.stack(x, axis=1)
        return keras.ops.sum(v * x, axis=1)

    # to remove the build warnings
    def build(self):
        self.built = True


def feature_weights(selection, inputs):
    """The softmax weights VariableSelection.call gives each feature, from the layer's own sublayers."""
    concat_inputs = []
    for input_ in inputs:
        if input_ in CATEGORICAL_FEATURES_WITH_VOCABULARY:
            embedding = selection.embeddings[input_]
            concat_inputs.append(embedding(keras.ops.clip(inputs[input_], 0, embedding.input_dim - 1)))
        else:
            concat_inputs.append(selection.proj_layer[input_](keras.ops.expand_dims(inputs[input_], -1)))
    return selection.softmax(selection.grn_concat(layers.concatenate(concat_inputs)))


def create_model(encoding_size):
    inputs = create_model_inputs()
    num_features = len(inputs)
    features = VariableSelection(num_features, encoding_size, dropout_rate)(inputs)
    outputs = layers.Dense(units=1, activation="sigmoid")(features)
    # Functional model
    model = keras.Model(inputs=inputs, outputs=outputs)
    return model


def main():
    keras.utils.set_random_seed(42)
    rng = np.random.default_rng(91)

    data = make_data(rng, 64)
    CATEGORICAL_FEATURES_WITH_VOCABULARY.clear()
    CATEGORICAL_FEATURES_WITH_VOCABULARY.update({
        feature_name: sorted([str(value) for value in list(np.unique(data[feature_name]))])
        for feature_name in CSV_HEADER
        if feature_name not in list(NUMERIC_FEATURE_NAMES + [WEIGHT_COLUMN_NAME, TARGET_FEATURE_NAME])
    })
    FEATURE_NAMES[:] = NUMERIC_FEATURE_NAMES + list(CATEGORICAL_FEATURES_WITH_VOCABULARY.keys())

    random_selection = np.arange(64) < 48
    train_data = {k: v[random_selection] for k, v in data.items()}
    valid_data = {k: v[~random_selection] for k, v in data.items()}
    test_data = make_data(rng, 16)

    model = create_model(encoding_size)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss=keras.losses.BinaryCrossentropy(),
        metrics=[keras.metrics.BinaryAccuracy(name="accuracy")],
    )

    # Create an early stopping callback.
    early_stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=True)

    print("Start training the model...")
    x_train, y_train, w_train = get_dataset(train_data)
    x_valid, y_valid, w_valid = get_dataset(valid_data)
    history = model.fit(x_train, y_train, sample_weight=w_train, batch_size=batch_size, epochs=num_epochs,
                        validation_data=(x_valid, y_valid, w_valid), callbacks=[early_stopping], verbose=0)
    print("Model training finished.")

    print("Evaluating model performance...")
    x_test, y_test, _ = get_dataset(test_data)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"Test accuracy: {round(accuracy * 100, 2)}%")

    def probe(m):
        selection = m.layers[-2]
        return {"feature_weights": feature_weights(selection, x_test), "selected": selection(x_test)}

    grns = model.layers[-2].grns
    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "save": "GatedLinearUnit, GatedResidualNetwork and VariableSelection take required __init__ arguments "
                "without get_config(), so their .keras file cannot be loaded again (Keras cannot either)",
        "values": {
            "history_keys": sorted(history.history),
            "train_features": x_train, "train_weights": w_train,
            "vocabularies": [CATEGORICAL_FEATURES_WITH_VOCABULARY[k] for k in sorted(CATEGORICAL_FEATURES_WITH_VOCABULARY)],
            "weights": [list(w.shape) for w in model.get_weights()],
            "projections_built": [grn.project.built for grn in grns],
        },
    }


if __name__ == "__main__":
    print(main())
