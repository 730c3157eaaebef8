"""Working with RNNs (keras-io guides/working_with_rnns.py, "RNN layers and RNN cells") and the RNN layer's
documented cell contract: a cell of one's own (MinimalRNNCell: state_size, build, call(inputs, states)) in
keras.layers.RNN, a list of cells (stacked), the built-in cells (SimpleRNNCell, GRUCell), return_sequences
with TimeDistributed, trained."""
import keras
import numpy as np
from keras import layers, ops


class MinimalRNNCell(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="uniform", name="kernel")
        self.recurrent_kernel = self.add_weight(
            shape=(self.units, self.units), initializer="uniform", name="recurrent_kernel"
        )
        self.built = True

    def call(self, inputs, states):
        prev_output = states[0]
        h = ops.matmul(inputs, self.kernel)
        output = h + ops.matmul(prev_output, self.recurrent_kernel)
        return output, [output]

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


def main():
    keras.utils.set_random_seed(1337)
    rng = np.random.default_rng(18)

    # Let's use this cell in a RNN layer:
    cell = MinimalRNNCell(32)
    x = keras.Input((None, 5))
    layer = layers.RNN(cell)
    y = layer(x)

    # Here's how to use the cell to build a stacked RNN:
    cells = [MinimalRNNCell(32), MinimalRNNCell(64)]
    x = keras.Input((None, 5))
    layer = layers.RNN(cells)
    y = layer(x)
    stacked_shape = list(y.shape)

    inputs = keras.Input((None, 5))
    x = layers.RNN([MinimalRNNCell(16), MinimalRNNCell(8)], return_sequences=True)(inputs)
    x = layers.TimeDistributed(layers.Dense(4, activation="tanh"))(x)
    x = layers.RNN(layers.GRUCell(8))(x)
    outputs = layers.Dense(1)(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="mse")

    x_train = rng.normal(size=(40, 6, 5)).astype("float32")
    y_train = rng.normal(size=(40, 1)).astype("float32")
    history = model.fit(x_train, y_train, batch_size=16, epochs=2, verbose=0)

    simple = keras.Sequential([keras.Input((None, 5)), layers.RNN(layers.SimpleRNNCell(8), return_sequences=True),
                               layers.RNN(layers.StackedRNNCells([layers.SimpleRNNCell(4), layers.GRUCell(3)]))])

    def probe(model):
        fixed = np.random.default_rng(19)
        simple.set_weights([fixed.normal(size=w.shape).astype("float32") * 0.3 for w in simple.get_weights()])
        return {"simple": simple.predict(x_train[:3], verbose=0), "longer": model.predict(
            fixed.normal(size=(2, 11, 5)).astype("float32"), verbose=0)}

    return {
        "model": model,
        "loss": history.history["loss"][-1],
        "predictions": model.predict(x_train[:4], verbose=0),
        "inputs": x_train,
        "evaluate": (x_train, y_train),
        "probe": probe,
        "values": {"stacked_shape": stacked_shape,
                   "weights": [list(w.shape) for w in model.get_weights()],
                   "simple_weights": [list(w.shape) for w in simple.get_weights()]},
    }


if __name__ == "__main__":
    print(main())
