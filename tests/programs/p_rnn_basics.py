"""Working with RNNs (keras-io guides/working_with_rnns.py): LSTM, GRU (return_sequences) and SimpleRNN in
Sequential models, return_state and initial_state in an encoder-decoder, Bidirectional, and the MNIST
sequence model trained, then rebuilt as RNN(LSTMCell) taking the LSTM's weights."""
import keras
import numpy as np
from keras import layers

batch_size = 64
# Each MNIST image batch is a tensor of shape (batch_size, 28, 28).
# Each input sequence will be of size (28, 28) (height is treated like time).
input_dim = 28
units = 64
output_size = 10  # labels are from 0 to 9


# Build the RNN model
def build_model(allow_cudnn_kernel=True):
    # CuDNN is only available at the layer level, and not at the cell level.
    # This means `LSTM(units)` will use the CuDNN kernel,
    # while RNN(LSTMCell(units)) will run on non-CuDNN kernel.
    if allow_cudnn_kernel:
        # The LSTM layer with default options uses CuDNN.
        lstm_layer = keras.layers.LSTM(units, input_shape=(None, input_dim))
    else:
        # Wrapping a LSTMCell in a RNN layer will not use CuDNN.
        lstm_layer = keras.layers.RNN(keras.layers.LSTMCell(units), input_shape=(None, input_dim))
    model = keras.models.Sequential(
        [
            lstm_layer,
            keras.layers.BatchNormalization(),
            keras.layers.Dense(output_size),
        ]
    )
    return model


def fix_weights(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(size=w.shape).astype("float32") * 0.2 for w in model.get_weights()])


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(15)

    model = keras.Sequential()
    # Add an Embedding layer expecting input vocab of size 1000, and
    # output embedding dimension of size 64.
    model.add(layers.Embedding(input_dim=1000, output_dim=64))
    # Add a LSTM layer with 128 internal units.
    model.add(layers.LSTM(128))
    # Add a Dense layer with 10 units.
    model.add(layers.Dense(10))
    lstm_model = model

    model = keras.Sequential()
    model.add(layers.Embedding(input_dim=1000, output_dim=64))
    # The output of GRU will be a 3D tensor of shape (batch_size, timesteps, 256)
    model.add(layers.GRU(256, return_sequences=True))
    # The output of SimpleRNN will be a 2D tensor of shape (batch_size, 128)
    model.add(layers.SimpleRNN(128))
    model.add(layers.Dense(10))
    gru_model = model

    encoder_vocab = 1000
    decoder_vocab = 2000
    encoder_input = layers.Input(shape=(None,))
    encoder_embedded = layers.Embedding(input_dim=encoder_vocab, output_dim=64)(encoder_input)
    # Return states in addition to output
    output, state_h, state_c = layers.LSTM(64, return_state=True, name="encoder")(encoder_embedded)
    encoder_state = [state_h, state_c]
    decoder_input = layers.Input(shape=(None,))
    decoder_embedded = layers.Embedding(input_dim=decoder_vocab, output_dim=64)(decoder_input)
    # Pass the 2 states to a new LSTM layer, as initial state
    decoder_output = layers.LSTM(64, name="decoder")(decoder_embedded, initial_state=encoder_state)
    output = layers.Dense(10)(decoder_output)
    seq2seq = keras.Model([encoder_input, decoder_input], output)

    model = keras.Sequential()
    model.add(keras.Input(shape=(5, 10)))
    model.add(layers.Bidirectional(layers.LSTM(64, return_sequences=True)))
    model.add(layers.Bidirectional(layers.LSTM(32)))
    model.add(layers.Dense(10))
    bidirectional = model

    # MNIST as sequences: stands in for keras.datasets.mnist.load_data().
    x_train = rng.integers(0, 256, size=(64, 28, 28)).astype("float32") / 255.0
    y_train = rng.integers(0, 10, size=(64,))
    x_test = rng.integers(0, 256, size=(16, 28, 28)).astype("float32") / 255.0
    y_test = rng.integers(0, 10, size=(16,))
    model = build_model(allow_cudnn_kernel=True)
    model.compile(
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer="sgd",
        metrics=["accuracy"],
    )
    history = model.fit(x_train, y_train, validation_data=(x_test, y_test), batch_size=batch_size, epochs=1,
                        verbose=0)

    def probe(model):
        noncudnn_model = build_model(allow_cudnn_kernel=False)
        noncudnn_model.set_weights(model.get_weights())
        tokens = np.random.default_rng(16).integers(1, 1000, size=(3, 7))
        out = {"rnn_cell_model": noncudnn_model.predict(x_test[:4], verbose=0)}
        for i, m in enumerate([lstm_model, gru_model, seq2seq, bidirectional]):
            if i < 2:
                m(tokens)  # builds it
            fix_weights(m, 20 + i)
        out["lstm"] = lstm_model.predict(tokens, verbose=0)
        out["gru_simple_rnn"] = gru_model.predict(tokens, verbose=0)
        out["seq2seq"] = seq2seq.predict([tokens, tokens[:, :5]], verbose=0)
        out["bidirectional"] = bidirectional.predict(
            np.random.default_rng(17).normal(size=(3, 5, 10)).astype("float32"), verbose=0)
        return out

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_test[:4], verbose=0),
        "inputs": x_test,
        "evaluate": (x_test, y_test),
        "probe": probe,
        "values": {"gru_weights": [list(w.shape) for w in gru_model.get_weights()] if gru_model.built else [],
                   "seq2seq_weights": [list(w.shape) for w in seq2seq.get_weights()],
                   "bidirectional_weights": [list(w.shape) for w in bidirectional.get_weights()],
                   "bidirectional_output": list(bidirectional.output_shape)},
    }


if __name__ == "__main__":
    print(main())
