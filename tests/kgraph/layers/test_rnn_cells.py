"""RNN with cells, StackedRNNCells, user cells, TimeDistributed, stateful layers and initial states.

Cells computed step by step are compared with the fused layers at float32 rounding (rtol = atol = 1e-5);
gradient checks run in float64 (tests.gradcheck defaults).
"""
import numpy as np
import pytest

import kgraph
from kgraph import layers, ops
from tests.gradcheck import check_gradients, check_variable_gradients

RTOL = ATOL = 1e-5


def _data(batch=3, timesteps=5, features=4, seed=0, dtype="float32"):
    return np.random.default_rng(seed).standard_normal((batch, timesteps, features)).astype(dtype)


PAIRS = [
    (lambda: layers.LSTMCell(3), lambda **kw: layers.LSTM(3, **kw)),
    (lambda: layers.GRUCell(3), lambda **kw: layers.GRU(3, **kw)),
    (lambda: layers.GRUCell(3, reset_after=False), lambda **kw: layers.GRU(3, reset_after=False, **kw)),
    (lambda: layers.SimpleRNNCell(3), lambda **kw: layers.SimpleRNN(3, **kw)),
]


@pytest.mark.parametrize("pair", range(len(PAIRS)))
@pytest.mark.parametrize("options", [{}, {"return_sequences": True}, {"go_backwards": True, "return_state": True}])
def test_rnn_of_a_cell_equals_the_fused_layer(pair, options):
    make_cell, make_layer = PAIRS[pair]
    x = _data()
    fused = make_layer(**options)
    expected = fused(x)
    rnn = layers.RNN(make_cell(), **options)
    rnn(x)
    rnn.set_weights(fused.get_weights())
    for got, want in zip(*(o if isinstance(o, list) else [o] for o in (rnn(x), expected))):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_masked_rnn_of_a_cell_equals_the_masked_fused_layer():
    inp = kgraph.Input((None,), dtype="int32")
    e = layers.Embedding(10, 4, mask_zero=True)(inp)
    cell_model = kgraph.Model(inp, layers.RNN(layers.LSTMCell(3), return_sequences=True, name="r")(e))
    fused_model = kgraph.Model(inp, layers.LSTM(3, return_sequences=True, name="f")(e))
    fused_model.set_weights(cell_model.get_weights())
    tokens = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], "int32")
    np.testing.assert_allclose(cell_model.predict(tokens, verbose=0), fused_model.predict(tokens, verbose=0),
                               rtol=RTOL, atol=ATOL)


def test_stacked_cells_equal_stacked_layers():
    x = _data()
    stacked = layers.RNN([layers.LSTMCell(3), layers.GRUCell(2)], return_sequences=True)
    stacked(x)
    first, second = layers.LSTM(3, return_sequences=True), layers.GRU(2, return_sequences=True)
    second(first(x))
    first.set_weights(stacked.get_weights()[:3])
    second.set_weights(stacked.get_weights()[3:])
    np.testing.assert_allclose(stacked(x), second(first(x)), rtol=RTOL, atol=ATOL)


class MinimalRNNCell(layers.Layer):
    """The Keras guide's minimal cell: ``h = tanh(x @ kernel + h_prev @ recurrent_kernel)``."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units), name="recurrent_kernel")

    def call(self, inputs, states):
        prev = states[0]
        h = ops.matmul(inputs, self.kernel) + prev @ self.recurrent_kernel
        return ops.tanh(h), [ops.tanh(h)]

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_user_cell_trains_with_exact_gradients_and_saves(tmp_path):
    kgraph.utils.set_random_seed(0)
    inp = kgraph.Input((5, 4), dtype="float64")
    model = kgraph.Model(inp, layers.Dense(1, dtype="float64")(
        layers.RNN(MinimalRNNCell(3, dtype="float64"), dtype="float64")(inp)))
    x = _data(dtype="float64")
    check_variable_gradients(lambda: model(x), model.trainable_weights)
    model.compile(optimizer=kgraph.optimizers.Adam(0.05), loss="mse")
    target = np.sin(x.sum(axis=(1, 2)))[:, None]
    history = model.fit(x, target, epochs=30, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    model.save(tmp_path / "cell.pkl")
    np.testing.assert_array_equal(kgraph.load_model(tmp_path / "cell.pkl").predict(x, verbose=0),
                                  model.predict(x, verbose=0))


@pytest.mark.parametrize("make", [lambda: layers.LSTM(3, stateful=True),
                                  lambda: layers.RNN(layers.GRUCell(3), stateful=True)])
def test_stateful_layers_carry_states_between_calls(make):
    x = _data(timesteps=6)
    layer = make()
    whole = layer(x)
    layer.reset_states()
    layer(x[:, :3])
    np.testing.assert_allclose(layer(x[:, 3:]), whole, rtol=RTOL, atol=ATOL)
    layer.reset_states()
    np.testing.assert_allclose(layer(x), whole, rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="batch size 3"):
        layer(x[:2])


@pytest.mark.parametrize("make, count", [
    (lambda: layers.LSTM(2, return_sequences=True, dtype="float64"), 2),
    (lambda: layers.GRU(2, dtype="float64"), 1),
    (lambda: layers.SimpleRNN(2, dtype="float64"), 1),
    (lambda: layers.RNN(layers.LSTMCell(2, dtype="float64"), dtype="float64"), 2)])
def test_initial_state_gets_gradients(make, count):
    layer = make()
    x = _data(batch=2, timesteps=3, features=2, dtype="float64")
    states = [np.random.default_rng(i).standard_normal((2, 2)) for i in range(count)]
    check_gradients(lambda xs: layer(xs[0], initial_state=xs[1:]), [x] + states)


def test_time_distributed_applies_the_layer_to_every_step():
    x = _data()
    dense = layers.Dense(2)
    wrapped = layers.TimeDistributed(dense)
    out = wrapped(x)
    assert out.shape == (3, 5, 2)
    np.testing.assert_allclose(out, np.stack([dense(x[:, t]) for t in range(5)], axis=1), rtol=RTOL, atol=ATOL)
    inp = kgraph.Input((None, 4))
    assert layers.TimeDistributed(layers.Dense(7))(inp).shape == (None, None, 7)
    model = kgraph.Model(inp, layers.TimeDistributed(layers.Dense(2), name="td")(inp))
    rebuilt = kgraph.Model.from_config(model.get_config())
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_array_equal(rebuilt.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("make, shape", [
    (lambda: layers.ConvLSTM1D(2, 3, padding="same", return_sequences=True, dtype="float64"), (2, 3, 5, 2)),
    (lambda: layers.ConvLSTM2D(2, 2, strides=2, dtype="float64"), (1, 2, 4, 4, 1)),
])
def test_conv_lstm_gradients_and_config(make, shape):
    layer = make()
    x = np.random.default_rng(0).standard_normal(shape)
    out = layer(x)
    assert out.shape[1:] == tuple(layer.compute_output_shape((None,) + shape[1:])[1:])
    check_gradients(lambda xs: layer(xs[0]), [x])
    check_variable_gradients(lambda: layer(x), layer.weights)
    clone = type(layer).from_config(layer.get_config())
    clone(x)
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(clone(x), out)


def test_conv_lstm_model_saves_and_exports(tmp_path):
    from tests.export.parity import assert_parity
    inp = kgraph.Input((3, 6, 6, 2))
    model = kgraph.Model(inp, layers.Dense(2)(layers.Flatten()(layers.ConvLSTM2D(3, 3, padding="same")(inp))))
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6, 2)).astype("float32")
    model.save(tmp_path / "m.pkl")
    np.testing.assert_array_equal(kgraph.load_model(tmp_path / "m.pkl").predict(x, verbose=0),
                                  model.predict(x, verbose=0))
    assert_parity(model, rtol=1e-4, atol=1e-5)


class ListStateCell(layers.Layer):
    """A user cell that reads its state as Keras passes it: a list (``states[0]``)."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), initializer="ones", name="kernel")

    def call(self, inputs, states):
        assert isinstance(states, (list, tuple)), f"a cell's states must come as a list, got {type(states)}"
        output = ops.matmul(inputs, self.kernel) + 0.5 * states[0]
        return output, [output]


def test_stacked_cells_receive_their_states_as_lists_as_keras_passes_them():
    x = _data(batch=4)
    stacked = layers.RNN([ListStateCell(3), ListStateCell(2)])
    out = np.asarray(stacked(x))
    h1, h2 = np.zeros((4, 3), "float32"), np.zeros((4, 2), "float32")
    for t in range(x.shape[1]):
        h1 = x[:, t] @ np.ones((4, 3), "float32") + 0.5 * h1
        h2 = h1 @ np.ones((3, 2), "float32") + 0.5 * h2
    np.testing.assert_allclose(out, h2, rtol=RTOL, atol=ATOL)
