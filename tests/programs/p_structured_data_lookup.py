"""Structured data classification from scratch
(keras-io examples/structured_data/structured_data_classification_from_scratch.py),
its lookup part: categorical features encoded by StringLookup (the "thal" strings) and IntegerLookup (the
integer codes) with output_mode="one_hot", adapted on the training column, next to Normalization for the
numbers, in one classifier trained on a dict of arrays with a string input. In Keras 3, StringLookup and
IntegerLookup need TensorFlow, so the Keras comparison runs only where TensorFlow is installed."""
import keras
import numpy as np
from keras import layers


def make_dataframe(rng, n):
    return {
        "sex": rng.integers(0, 2, size=n),
        "cp": rng.integers(0, 5, size=n),
        "ca": rng.integers(0, 4, size=n),
        "thal": rng.choice(np.array(["fixed", "normal", "reversible"]), size=n),
        "age": rng.integers(29, 78, size=n).astype("float32"),
        "chol": rng.integers(126, 564, size=n).astype("float32"),
        "target": rng.integers(0, 2, size=n),
    }


def encode_numerical_feature(feature, name, data):
    normalizer = layers.Normalization()
    normalizer.adapt(np.expand_dims(data[name], -1))
    return normalizer(feature)


def encode_categorical_feature(feature, name, data, is_string):
    lookup_class = layers.StringLookup if is_string else layers.IntegerLookup
    # Create a lookup layer which will turn strings into integer indices
    lookup = lookup_class(output_mode="one_hot")

    # Prepare a dataset that only yields our feature
    feature_ds = np.expand_dims(data[name], -1)

    # Learn the set of possible string values and assign them a fixed integer index
    lookup.adapt(feature_ds)

    # Turn the string input into integer indices
    encoded_feature = lookup(feature)
    return encoded_feature


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(37)

    train = make_dataframe(rng, 64)
    val = make_dataframe(rng, 16)
    train_labels = train.pop("target")
    val_labels = val.pop("target")

    sex = keras.Input(shape=(1,), name="sex", dtype="int64")
    cp = keras.Input(shape=(1,), name="cp", dtype="int64")
    ca = keras.Input(shape=(1,), name="ca", dtype="int64")
    # Categorical feature encoded as string
    thal = keras.Input(shape=(1,), name="thal", dtype="string")
    age = keras.Input(shape=(1,), name="age")
    chol = keras.Input(shape=(1,), name="chol")
    all_inputs = [sex, cp, ca, thal, age, chol]

    sex_encoded = encode_categorical_feature(sex, "sex", train, False)
    cp_encoded = encode_categorical_feature(cp, "cp", train, False)
    ca_encoded = encode_categorical_feature(ca, "ca", train, False)
    thal_encoded = encode_categorical_feature(thal, "thal", train, True)
    age_encoded = encode_numerical_feature(age, "age", train)
    chol_encoded = encode_numerical_feature(chol, "chol", train)

    all_features = layers.concatenate([sex_encoded, cp_encoded, ca_encoded, thal_encoded, age_encoded, chol_encoded])
    x = layers.Dense(32, activation="relu")(all_features)
    x = layers.Dropout(0.5)(x)
    output = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(all_inputs, output)
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])

    x_train = {name: np.expand_dims(values, -1) for name, values in train.items()}
    x_val = {name: np.expand_dims(values, -1) for name, values in val.items()}
    history = model.fit(x_train, train_labels, epochs=2, batch_size=32, validation_data=(x_val, val_labels),
                        verbose=0)

    thal_lookup = layers.StringLookup(output_mode="one_hot")
    thal_lookup.adapt(np.expand_dims(train["thal"], -1))
    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_val, verbose=0)[:4],
        "inputs": x_val,
        "evaluate": (x_val, val_labels),
        "save": "the model takes strings through StringLookup, which stays in the client: kgraph refuses to "
                "export it by design (README, Exporting to ONNX: string layers)",
        "values": {"thal_vocabulary": thal_lookup.get_vocabulary(),
                   "thal_encoded": thal_lookup(np.array([["normal"], ["fixed"], ["unknown"]]))},
    }


if __name__ == "__main__":
    print(main())
