"""The Functional API (keras-io guides/functional_api.py), "Models with multiple inputs and outputs": the
ticket-ranking model (title, body and tags in; priority and department out), losses and loss weights given
by output name, trained on dicts of arrays."""
import keras
import numpy as np
from keras import layers


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(2)

    num_tags = 12  # Number of unique issue tags
    num_words = 10000  # Size of vocabulary obtained when preprocessing text data
    num_departments = 4  # Number of departments for predictions

    title_input = keras.Input(shape=(None,), name="title")  # Variable-length sequence of ints
    body_input = keras.Input(shape=(None,), name="body")  # Variable-length sequence of ints
    tags_input = keras.Input(shape=(num_tags,), name="tags")  # Binary vectors of size `num_tags`

    # Embed each word in the title into a 64-dimensional vector
    title_features = layers.Embedding(num_words, 64)(title_input)
    # Embed each word in the text into a 64-dimensional vector
    body_features = layers.Embedding(num_words, 64)(body_input)

    # Reduce sequence of embedded words in the title into a single 128-dimensional vector
    title_features = layers.LSTM(128)(title_features)
    # Reduce sequence of embedded words in the body into a single 32-dimensional vector
    body_features = layers.LSTM(32)(body_features)

    # Merge all available features into a single large vector via concatenation
    x = layers.concatenate([title_features, body_features, tags_input])

    # Stick a logistic regression for priority prediction on top of the features
    priority_pred = layers.Dense(1, name="priority")(x)
    # Stick a department classifier on top of the features
    department_pred = layers.Dense(num_departments, name="department")(x)

    # Instantiate an end-to-end model predicting both priority and department
    model = keras.Model(
        inputs=[title_input, body_input, tags_input],
        outputs={"priority": priority_pred, "department": department_pred},
    )

    model.compile(
        optimizer=keras.optimizers.RMSprop(1e-3),
        loss={
            "priority": keras.losses.BinaryCrossentropy(from_logits=True),
            "department": keras.losses.CategoricalCrossentropy(from_logits=True),
        },
        loss_weights={"priority": 1.0, "department": 0.2},
    )

    # Dummy input data
    n = 48
    title_data = rng.integers(num_words, size=(n, 10))
    body_data = rng.integers(num_words, size=(n, 30))
    tags_data = rng.integers(2, size=(n, num_tags)).astype("float32")

    # Dummy target data
    priority_targets = rng.random(size=(n, 1))
    dept_targets = rng.integers(2, size=(n, num_departments))

    history = model.fit(
        {"title": title_data, "body": body_data, "tags": tags_data},
        {"priority": priority_targets, "department": dept_targets},
        epochs=2,
        batch_size=32,
        verbose=0,
    )

    x_fixed = {"title": title_data[:8], "body": body_data[:8], "tags": tags_data[:8]}
    y_fixed = {"priority": priority_targets[:8], "department": dept_targets[:8]}
    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_fixed, verbose=0),
        "inputs": x_fixed,
        "evaluate": (x_fixed, y_fixed),
        "values": {"history_keys": sorted(history.history), "output_names": sorted(model.output_names)},
    }


if __name__ == "__main__":
    print(main())
