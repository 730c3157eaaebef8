"""Structured data classification from scratch
(keras-io examples/structured_data/structured_data_classification_from_scratch.py),
its numeric and integer-categorical part: the heart-disease columns as one named keras.Input each, numerical
features standardized by a Normalization layer adapted on the training column, integer categories one-hot
encoded by CategoryEncoding, all concatenated into a Dense/Dropout/sigmoid classifier trained on a dict of
arrays, and a prediction for one patient from keras.ops.convert_to_tensor. The example feeds tf.data
datasets; the same arrays are given to fit directly here."""
import keras
import numpy as np
from keras import layers


def make_dataframe(rng, n):
    """Stands in for heart.csv: the columns the model reads, with their dtypes."""
    return {
        "sex": rng.integers(0, 2, size=n),
        "cp": rng.integers(0, 5, size=n),
        "fbs": rng.integers(0, 2, size=n),
        "restecg": rng.integers(0, 3, size=n),
        "exang": rng.integers(0, 2, size=n),
        "ca": rng.integers(0, 4, size=n),
        "age": rng.integers(29, 78, size=n).astype("float32"),
        "trestbps": rng.integers(94, 200, size=n).astype("float32"),
        "chol": rng.integers(126, 564, size=n).astype("float32"),
        "thalach": rng.integers(71, 202, size=n).astype("float32"),
        "oldpeak": np.round(rng.random(size=n) * 6.2, 1).astype("float32"),
        "slope": rng.integers(1, 4, size=n).astype("float32"),
        "target": rng.integers(0, 2, size=n),
    }


NORMALIZERS = []


def encode_numerical_feature(feature, name, data):
    # Create a Normalization layer for our feature
    normalizer = layers.Normalization()
    NORMALIZERS.append(normalizer)

    # Prepare a dataset that only yields our feature
    feature_ds = np.expand_dims(data[name], -1)

    # Learn the statistics of the data
    normalizer.adapt(feature_ds)

    # Normalize the input feature
    encoded_feature = normalizer(feature)
    return encoded_feature


def encode_integer_categorical_feature(feature, name, num_tokens):
    encoder = layers.CategoryEncoding(num_tokens=num_tokens, output_mode="one_hot")
    return encoder(feature)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(36)
    NORMALIZERS.clear()

    train = make_dataframe(rng, 64)
    val = make_dataframe(rng, 16)
    train_labels = train.pop("target")
    val_labels = val.pop("target")

    # Categorical features encoded as integers
    sex = keras.Input(shape=(1,), name="sex", dtype="int64")
    cp = keras.Input(shape=(1,), name="cp", dtype="int64")
    fbs = keras.Input(shape=(1,), name="fbs", dtype="int64")
    restecg = keras.Input(shape=(1,), name="restecg", dtype="int64")
    exang = keras.Input(shape=(1,), name="exang", dtype="int64")
    ca = keras.Input(shape=(1,), name="ca", dtype="int64")

    # Numerical features
    age = keras.Input(shape=(1,), name="age")
    trestbps = keras.Input(shape=(1,), name="trestbps")
    chol = keras.Input(shape=(1,), name="chol")
    thalach = keras.Input(shape=(1,), name="thalach")
    oldpeak = keras.Input(shape=(1,), name="oldpeak")
    slope = keras.Input(shape=(1,), name="slope")

    all_inputs = [sex, cp, fbs, restecg, exang, ca, age, trestbps, chol, thalach, oldpeak, slope]

    # Integer categorical features
    sex_encoded = encode_integer_categorical_feature(sex, "sex", 2)
    cp_encoded = encode_integer_categorical_feature(cp, "cp", 5)
    fbs_encoded = encode_integer_categorical_feature(fbs, "fbs", 2)
    restecg_encoded = encode_integer_categorical_feature(restecg, "restecg", 3)
    exang_encoded = encode_integer_categorical_feature(exang, "exang", 2)
    ca_encoded = encode_integer_categorical_feature(ca, "ca", 4)

    # Numerical features
    age_encoded = encode_numerical_feature(age, "age", train)
    trestbps_encoded = encode_numerical_feature(trestbps, "trestbps", train)
    chol_encoded = encode_numerical_feature(chol, "chol", train)
    thalach_encoded = encode_numerical_feature(thalach, "thalach", train)
    oldpeak_encoded = encode_numerical_feature(oldpeak, "oldpeak", train)
    slope_encoded = encode_numerical_feature(slope, "slope", train)

    all_features = layers.concatenate(
        [
            sex_encoded, cp_encoded, fbs_encoded, restecg_encoded, exang_encoded, slope_encoded,
            ca_encoded, age_encoded, trestbps_encoded, chol_encoded, thalach_encoded, oldpeak_encoded,
        ]
    )
    x = layers.Dense(32, activation="relu")(all_features)
    x = layers.Dropout(0.5)(x)
    output = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(all_inputs, output)
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])

    x_train = {name: np.expand_dims(values, -1) for name, values in train.items()}
    x_val = {name: np.expand_dims(values, -1) for name, values in val.items()}
    history = model.fit(x_train, train_labels, epochs=2, batch_size=32, validation_data=(x_val, val_labels),
                        verbose=0)

    sample = {"age": 60, "sex": 1, "cp": 1, "fbs": 0, "restecg": 2, "exang": 0, "ca": 0,
              "trestbps": 145, "chol": 233, "thalach": 150, "oldpeak": 2.3, "slope": 3}
    input_dict = {name: keras.ops.convert_to_tensor([value]) for name, value in sample.items()}
    predictions = model.predict(input_dict, verbose=0)
    print(f"This particular patient had a {100 * predictions[0][0]:.1f} percent probability "
          "of having a heart disease, as evaluated by our model.")

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": predictions,
        "inputs": x_val,
        "evaluate": (x_val, val_labels),
        "values": {"adapted": [layer.get_weights() for layer in NORMALIZERS],
                   "normalized_age": NORMALIZERS[0](np.array([[29.0], [60.0]]))},
    }


if __name__ == "__main__":
    print(main())
