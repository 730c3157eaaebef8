"""Working with RNNs (keras-io guides/working_with_rnns.py), "Cross-batch statefulness" and "RNN State
Reuse": a stateful LSTM fed three paragraphs in turn, reset_states(), and a new LSTM started from
lstm_layer.states through initial_state; with a stateless LSTM model trained on the same kind of data."""
import keras
import numpy as np
from keras import layers


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(21)

    paragraph1 = rng.random((20, 10, 50)).astype(np.float32)
    paragraph2 = rng.random((20, 10, 50)).astype(np.float32)
    paragraph3 = rng.random((20, 10, 50)).astype(np.float32)

    lstm_layer = layers.LSTM(64, stateful=True)
    output = lstm_layer(paragraph1)
    output = lstm_layer(paragraph2)
    output = lstm_layer(paragraph3)

    # reset_states() will reset the cached state to the original initial_state.
    # If no initial_state was provided, zero-states will be used by default.
    lstm_layer.reset_states()

    model = keras.Sequential([keras.Input((10, 50)), layers.LSTM(64), layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    targets = rng.random((20, 1)).astype("float32")
    history = model.fit(paragraph1, targets, batch_size=10, epochs=2, verbose=0)

    def probe(model):
        weights = model.layers[0].get_weights()
        lstm_layer = layers.LSTM(64, stateful=True)
        lstm_layer(paragraph1)
        lstm_layer.set_weights(weights)
        lstm_layer.reset_states()
        out1 = lstm_layer(paragraph1)
        out2 = lstm_layer(paragraph2)
        existing_state = lstm_layer.states
        states_now = [keras.ops.convert_to_numpy(s) for s in existing_state]
        new_lstm_layer = layers.LSTM(64)
        new_output = new_lstm_layer(paragraph3, initial_state=existing_state)
        new_lstm_layer.set_weights(weights)
        new_output = new_lstm_layer(paragraph3, initial_state=existing_state)
        lstm_layer.reset_states()
        out_reset = lstm_layer(paragraph1)
        return {"out1": out1, "out2": out2, "states": states_now, "new_output": new_output,
                "out_reset": out_reset}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(paragraph1[:4], verbose=0),
        "inputs": paragraph2,
        "evaluate": (paragraph1, targets),
        "probe": probe,
        "values": {"stateful_output_shape": list(output.shape), "n_states": len(lstm_layer.states)},
    }


if __name__ == "__main__":
    print(main())
