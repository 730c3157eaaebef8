"""Bidirectional LSTM on IMDB (keras-io examples/nlp/bidirectional_lstm_imdb.py): variable-length int32 input,
Embedding(20000, 128), two stacked Bidirectional(LSTM(64)) (the first returning sequences), a sigmoid Dense,
binary_crossentropy with Adam, sequences padded to 200 with keras.utils.pad_sequences."""
import keras
import numpy as np
from keras import layers


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(31)

    max_features = 20000  # Only consider the top 20k words
    maxlen = 200  # Only consider the first 200 words of each movie review

    # Input for variable-length sequences of integers
    inputs = keras.Input(shape=(None,), dtype="int32")
    # Embed each integer in a 128-dimensional vector
    x = layers.Embedding(max_features, 128)(inputs)
    # Add 2 bidirectional LSTMs
    x = layers.Bidirectional(layers.LSTM(64, return_sequences=True))(x)
    x = layers.Bidirectional(layers.LSTM(64))(x)
    # Add a classifier
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    model.summary()

    # Stands in for keras.datasets.imdb.load_data(num_words=max_features).
    x_train = [list(rng.integers(1, max_features, size=rng.integers(20, 260))) for _ in range(24)]
    y_train = rng.integers(0, 2, size=(24,))
    x_val = [list(rng.integers(1, max_features, size=rng.integers(20, 260))) for _ in range(8)]
    y_val = rng.integers(0, 2, size=(8,))
    # Use pad_sequence to standardize sequence length:
    # this will truncate sequences longer than 200 words and zero-pad sequences shorter than 200 words.
    x_train = keras.utils.pad_sequences(x_train, maxlen=maxlen)
    x_val = keras.utils.pad_sequences(x_val, maxlen=maxlen)

    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=1, validation_data=(x_val, y_val), verbose=0)

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_val[:2], verbose=0),
        "inputs": x_val,
        "evaluate": (x_val, y_val),
        "values": {"params": model.count_params()},
    }


if __name__ == "__main__":
    print(main())
