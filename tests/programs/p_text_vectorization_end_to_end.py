"""Text classification from scratch (keras-io examples/nlp/text_classification_from_scratch.py): a
TextVectorization layer (max_tokens=20000, output_mode="int", output_sequence_length=500) adapted on the raw
texts, an Embedding + Conv1D (strides=3) + GlobalMaxPooling1D classifier trained on the vectorized integers,
then the end-to-end model that takes raw strings (keras.Input(shape=(1,), dtype="string")) and evaluates on
them. The example's custom_standardization is written with tf.strings (TensorFlow only); the layer's default
standardization ("lower_and_strip_punctuation") is used instead. In Keras 3, TextVectorization itself needs
TensorFlow, so the Keras comparison runs only where TensorFlow is installed."""
import keras
import numpy as np
from keras import layers

WORDS = ["movie", "film", "great", "terrible", "plot", "actors", "boring", "brilliant", "the", "a", "and",
         "was", "is", "not", "very", "story", "ending", "scene", "music", "I", "loved", "hated", "it", "this"]


def make_texts(rng, n):
    texts = []
    for _ in range(n):
        words = list(rng.choice(WORDS, size=rng.integers(5, 30)))
        words[rng.integers(len(words))] += rng.choice([".", "!", ",", "<br />"])
        texts.append(" ".join(words).capitalize())
    return np.array(texts)


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(32)

    raw_train = make_texts(rng, 40)
    y_train = rng.integers(0, 2, size=(40, 1))
    raw_test = make_texts(rng, 12)
    y_test = rng.integers(0, 2, size=(12, 1))

    # Model constants.
    max_features = 20000
    embedding_dim = 128
    sequence_length = 500

    vectorize_layer = keras.layers.TextVectorization(
        max_tokens=max_features,
        output_mode="int",
        output_sequence_length=sequence_length,
    )
    # Let's make a text-only dataset (no labels):
    # Let's call `adapt`:
    vectorize_layer.adapt(raw_train)

    def vectorize_text(text, label):
        text = np.expand_dims(text, -1)
        return vectorize_layer(text), label

    x_train, y_train = vectorize_text(raw_train, y_train)
    x_test, _ = vectorize_text(raw_test, y_test)
    x_train = keras.ops.convert_to_numpy(x_train)
    x_test = keras.ops.convert_to_numpy(x_test)

    # A integer input for vocab indices.
    inputs = keras.Input(shape=(None,), dtype="int64")

    # Next, we add a layer to map those vocab indices into a space of dimensionality
    # 'embedding_dim'.
    x = layers.Embedding(max_features, embedding_dim)(inputs)
    x = layers.Dropout(0.5)(x)

    # Conv1D + global max pooling
    x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.Conv1D(128, 7, padding="valid", activation="relu", strides=3)(x)
    x = layers.GlobalMaxPooling1D()(x)

    # We add a vanilla hidden layer:
    x = layers.Dense(128, activation="relu")(x)
    x = layers.Dropout(0.5)(x)

    # We project onto a single unit output layer, and squash it with a sigmoid:
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

    model = keras.Model(inputs, predictions)

    # Compile the model with binary crossentropy loss and an adam optimizer.
    model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
    epochs = 1
    history = model.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=0)

    # A string input
    inputs = keras.Input(shape=(1,), dtype="string")
    # Turn strings into vocab indices
    indices = vectorize_layer(inputs)
    # Turn vocab indices into predictions
    outputs = model(indices)

    # Our end to end model
    end_to_end_model = keras.Model(inputs, outputs)
    end_to_end_model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

    # Test it with `raw_test_ds`, which yields raw strings
    end_to_end_model.evaluate(np.expand_dims(raw_test, -1), y_test, verbose=0)

    def probe(model):
        texts = np.expand_dims(raw_test, -1)
        return {"end_to_end": end_to_end_model.predict(texts, verbose=0),
                "end_to_end_evaluate": end_to_end_model.evaluate(texts, y_test, verbose=0, return_dict=True)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_test[:4], verbose=0),
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {"vocabulary": vectorize_layer.get_vocabulary()[:12],
                   "vocabulary_size": vectorize_layer.vocabulary_size(),
                   "vectorized": x_test[:3, :20]},
    }


if __name__ == "__main__":
    print(main())
