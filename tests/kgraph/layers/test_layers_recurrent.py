"""SimpleRNN, LSTM, GRU and Bidirectional: Keras equations, Keras parity, gradients, dropout, errors."""
import os

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers, ops
from tests.gradcheck import check_gradients, check_variable_gradients


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# ----- NumPy references written from Keras's cell equations ----------------------------
def _scan(x, go_backwards, step, state):
    """Run ``step(x_t, state) -> (h, state)`` over time; outputs in processing order, as Keras."""
    order = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outputs = []
    for t in order:
        h, state = step(x[:, t], state)
        outputs.append(h)
    return np.stack(outputs, axis=1), state


def simple_rnn_reference(x, kernel, recurrent_kernel, bias, go_backwards=False, mask=None):
    h0 = np.zeros((x.shape[0], recurrent_kernel.shape[0]))
    mask = 1 if mask is None else mask

    def step(x_t, h):
        h = np.tanh(x_t @ kernel + (h * mask) @ recurrent_kernel + bias)
        return h, h
    return _scan(x, go_backwards, step, h0)


def lstm_reference(x, kernel, recurrent_kernel, bias, go_backwards=False, masks=None):
    u = recurrent_kernel.shape[0]
    zeros = np.zeros((x.shape[0], u))
    masks = np.ones((4, 1, u)) if masks is None else masks

    def step(x_t, state):
        h, c = state
        z = x_t @ kernel + bias + np.concatenate(
            [(h * masks[k]) @ recurrent_kernel[:, k * u:(k + 1) * u] for k in range(4)], axis=1)
        i, f, g, o = _sigmoid(z[:, :u]), _sigmoid(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), _sigmoid(z[:, 3 * u:])
        c = f * c + i * g
        h = o * np.tanh(c)
        return h, (h, c)
    return _scan(x, go_backwards, step, (zeros, zeros))


def gru_reference(x, kernel, recurrent_kernel, bias, reset_after=True, go_backwards=False, masks=None):
    u = recurrent_kernel.shape[0]
    masks = np.ones((3, 1, u)) if masks is None else masks
    input_bias, recurrent_bias = (bias[0], bias[1]) if reset_after else (bias, np.zeros(3 * u))
    rk = [recurrent_kernel[:, k * u:(k + 1) * u] for k in range(3)]
    rb = [recurrent_bias[k * u:(k + 1) * u] for k in range(3)]

    def step(x_t, h):
        xp = x_t @ kernel + input_bias
        z = _sigmoid(xp[:, :u] + (h * masks[0]) @ rk[0] + rb[0])
        r = _sigmoid(xp[:, u:2 * u] + (h * masks[1]) @ rk[1] + rb[1])
        if reset_after:
            candidate = np.tanh(xp[:, 2 * u:] + r * ((h * masks[2]) @ rk[2] + rb[2]))
        else:
            candidate = np.tanh(xp[:, 2 * u:] + (r * (h * masks[2])) @ rk[2])
        h = z * h + (1 - z) * candidate
        return h, h
    return _scan(x, go_backwards, step, np.zeros((x.shape[0], u)))


def _randomize(layer, rng, scale=0.5):
    layer.set_weights([w + scale * rng.standard_normal(w.shape).astype(w.dtype) for w in layer.get_weights()])
    return [w.astype(np.float64) for w in layer.get_weights()]


CASES = [
    (layers.SimpleRNN, {}, "simple_rnn"),
    (layers.SimpleRNN, {"go_backwards": True, "return_sequences": True}, "simple_rnn"),
    (layers.LSTM, {}, "lstm"),
    (layers.LSTM, {"return_sequences": True, "go_backwards": True}, "lstm"),
    (layers.GRU, {"return_sequences": True}, "gru"),
    (layers.GRU, {"reset_after": False, "go_backwards": True, "return_sequences": True}, "gru"),
]


def _reference(kind, weights, x, kwargs):
    go = kwargs.get("go_backwards", False)
    if kind == "simple_rnn":
        return simple_rnn_reference(x, *weights, go_backwards=go)
    if kind == "lstm":
        return lstm_reference(x, *weights, go_backwards=go)
    return gru_reference(x, *weights, reset_after=kwargs.get("reset_after", True), go_backwards=go)


@pytest.mark.parametrize("cls,kwargs,kind", CASES)
def test_forward_matches_keras_equations(cls, kwargs, kind):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5, 4)).astype("float32")
    layer = cls(6, **kwargs)
    layer(x)
    weights = _randomize(layer, rng)
    sequence, _ = _reference(kind, weights, x.astype(np.float64), kwargs)
    expected = sequence if kwargs.get("return_sequences") else sequence[:, -1]
    np.testing.assert_allclose(layer(x), expected, rtol=1e-5, atol=1e-5)


def test_return_state_gives_last_output_and_states():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 3)).astype("float32")
    layer = layers.LSTM(5, return_sequences=True, return_state=True)
    layer(x)
    weights = _randomize(layer, rng)
    sequence, h, c = layer(x)
    ref_sequence, (ref_h, ref_c) = lstm_reference(x.astype(np.float64), *weights)
    np.testing.assert_allclose(sequence, ref_sequence, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h, ref_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, ref_c, rtol=1e-5, atol=1e-5)
    gru_out, gru_h = layers.GRU(5, return_state=True)(x)
    np.testing.assert_array_equal(gru_out, gru_h)


def test_weight_layout_and_initial_values():
    lstm = layers.LSTM(3, name="l")
    lstm.build((None, None, 2))
    assert [w.path for w in lstm.weights] == ["l/kernel", "l/recurrent_kernel", "l/bias"]
    assert [w.shape for w in lstm.weights] == [(2, 12), (3, 12), (12,)]
    np.testing.assert_array_equal(lstm.bias.numpy(), [0] * 3 + [1] * 3 + [0] * 6)
    rk = lstm.recurrent_kernel.numpy()
    np.testing.assert_allclose(rk @ rk.T, np.eye(3), atol=1e-5)
    assert not layers.LSTM(3, unit_forget_bias=False)(np.zeros((1, 2, 2), "float32")).any()
    gru = layers.GRU(3)
    gru.build((None, 4, 2))
    assert [w.shape for w in gru.weights] == [(2, 9), (3, 9), (2, 9)]
    gru = layers.GRU(3, reset_after=False, use_bias=False)
    gru.build((None, 4, 2))
    assert [w.shape for w in gru.weights] == [(2, 9), (3, 9)]


def test_symbolic_model_with_dynamic_time_trains():
    inputs = kgraph.Input(shape=(None, 3))
    sequence, h, c = layers.LSTM(4, return_sequences=True, return_state=True)(inputs)
    merged = layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="sum")(sequence)
    summary = layers.SimpleRNN(3, go_backwards=True)(merged)
    outputs = layers.Dense(1)(layers.Concatenate()([summary, h, c]))
    model = kgraph.Model(inputs, outputs)
    assert model.outputs[0].shape == (None, 1)
    rng = np.random.default_rng(3)
    for steps in (4, 7):
        assert model(rng.standard_normal((2, steps, 3)).astype("float32")).shape == (2, 1)
    x, y = rng.standard_normal((16, 5, 3)).astype("float32"), rng.standard_normal((16, 1)).astype("float32")
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_config_round_trip_keeps_outputs():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 2)).astype("float32")
    for layer in (layers.GRU(3, reset_after=False, activation="relu", go_backwards=True, dropout=0.2),
                  layers.Bidirectional(layers.LSTM(2, return_sequences=True), merge_mode="ave")):
        y = layer(x)
        clone = type(layer).from_config(layer.get_config())
        clone(x)
        clone.set_weights(layer.get_weights())
        np.testing.assert_allclose(clone(x), y, rtol=1e-6)


# ----- Bidirectional --------------------------------------------------------------------
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_matches_references(merge_mode):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 3)).astype("float32")
    layer = layers.Bidirectional(layers.LSTM(3, return_sequences=True, return_state=True), merge_mode=merge_mode)
    layer(x)
    # Keras's paths: "bidirectional/forward_lstm/..." (Keras has a cell layer below that; kgraph has none).
    prefixes = [w.path.split("/")[1].split("_")[0] for w in layer.weights]
    assert prefixes == ["forward"] * 3 + ["backward"] * 3 and layer.weights[0].path.startswith(layer.name + "/")
    weights = _randomize(layer, rng)
    forward, (fh, fc) = lstm_reference(x.astype(np.float64), *weights[:3])
    backward, (bh, bc) = lstm_reference(x.astype(np.float64), *weights[3:], go_backwards=True)
    backward = backward[:, ::-1]
    merged = {"concat": lambda a, b: [np.concatenate([a, b], -1)], "sum": lambda a, b: [a + b],
              "mul": lambda a, b: [a * b], "ave": lambda a, b: [(a + b) / 2], None: lambda a, b: [a, b]}
    expected = merged[merge_mode](forward, backward) + [fh, fc, bh, bc]
    outputs = layer(x)
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_bidirectional_output_shapes_and_errors():
    inputs = kgraph.Input(shape=(None, 3))
    assert layers.Bidirectional(layers.GRU(4))(inputs).shape == (None, 8)
    assert layers.Bidirectional(layers.GRU(4, return_sequences=True), merge_mode="mul")(inputs).shape == \
        (None, None, 4)
    with pytest.raises(ValueError, match="merge_mode"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="SimpleRNN, LSTM or GRU"):
        layers.Bidirectional(layers.Dense(2))
    with pytest.raises(ValueError, match="different `go_backwards`"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2))
    with pytest.raises(ValueError, match="same `return_sequences`"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2, go_backwards=True,
                                                                        return_sequences=True))


# ----- gradients --------------------------------------------------------------------------
@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


GRADIENT_CASES = [
    lambda: layers.SimpleRNN(2, return_sequences=True),
    lambda: layers.SimpleRNN(2, go_backwards=True, activation="relu"),
    lambda: layers.LSTM(2, return_sequences=True),
    lambda: layers.LSTM(2, go_backwards=True, return_state=True),
    lambda: layers.LSTM(2, use_bias=False, activation="softsign", recurrent_activation="hard_sigmoid"),
    lambda: layers.GRU(2, return_sequences=True),
    lambda: layers.GRU(2, reset_after=False, go_backwards=True, return_state=True),
    lambda: layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode="concat"),
    lambda: layers.Bidirectional(layers.LSTM(2), merge_mode="mul"),
    lambda: layers.Bidirectional(layers.SimpleRNN(2, return_sequences=True, return_state=True), merge_mode="ave"),
    lambda: layers.Bidirectional(layers.GRU(2, reset_after=False), merge_mode="sum"),
    lambda: layers.Bidirectional(layers.LSTM(2, return_sequences=True), merge_mode=None),
]


def _total(outputs):
    """A scalar mixing every output, so every output's cotangent path is exercised."""
    outputs = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    total = ops.sum(outputs[0])
    for k, out in enumerate(outputs[1:]):
        total = ops.add(total, ops.sum(ops.multiply(out, float(k + 2))))
    return total


@pytest.mark.parametrize("index", range(len(GRADIENT_CASES)))
def test_gradients_match_finite_differences(float64, index):
    layer = GRADIENT_CASES[index]()
    rng = np.random.default_rng(index)
    x = rng.standard_normal((2, 3, 2))
    layer(x)
    _randomize(layer, rng)
    check_variable_gradients(lambda: _total(layer(x)), layer.trainable_weights, rtol=1e-5, atol=1e-7)
    check_gradients(lambda xs: _total(layer(xs[0])), [x], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op,gates,extra", [(ops.simple_rnn, 1, {}), (ops.lstm, 4, {}),
                                            (ops.gru, 3, {}), (ops.gru, 3, {"reset_after": False})])
def test_op_gradients_with_recurrent_masks(op, gates, extra):
    rng = np.random.default_rng(7)
    masks = rng.uniform(0.0, 2.0, (gates, 2, 2))
    inputs = [rng.standard_normal((2, 3, gates * 2)), 0.7 * rng.standard_normal((2, gates * 2))]
    if op is ops.gru and extra.get("reset_after", True):
        inputs.append(rng.standard_normal(6))
    for go_backwards in (False, True):
        check_gradients(lambda xs: _total(op(*xs, recurrent_masks=masks, go_backwards=go_backwards, **extra)),
                        inputs)


# ----- dropout ----------------------------------------------------------------------------
@pytest.mark.parametrize("kind,gates", [("lstm", 4), ("gru", 3), ("simple_rnn", 1)])
def test_recurrent_masks_match_reference(kind, gates):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 4, 3))
    masks = rng.uniform(0.0, 2.0, (gates, 2, 5))
    kernel, rk = rng.standard_normal((3, gates * 5)), 0.5 * rng.standard_normal((5, gates * 5))
    if kind == "lstm":
        bias = rng.standard_normal(20)
        expected, _ = lstm_reference(x, kernel, rk, bias, masks=masks)
        actual = ops.lstm(x @ kernel + bias, rk, recurrent_masks=masks)[0]
    elif kind == "gru":
        bias = rng.standard_normal((2, 15))
        expected, _ = gru_reference(x, kernel, rk, bias, masks=masks)
        actual = ops.gru(x @ kernel + bias[0], rk, bias[1], recurrent_masks=masks)[0]
    else:
        bias = rng.standard_normal(5)
        expected, _ = simple_rnn_reference(x, kernel, rk, bias, mask=masks[0])
        actual = ops.simple_rnn(x @ kernel + bias, rk, recurrent_masks=masks)[0]
    np.testing.assert_allclose(actual, expected, rtol=1e-10)


def test_dropout_only_in_training_and_masks_fixed_across_time():
    steps = 6
    x = np.ones((4, steps, 3), "float32")
    layer = layers.SimpleRNN(3, activation="linear", dropout=0.5, return_sequences=True, seed=1)
    layer.build((None, steps, 3))
    layer.set_weights([np.eye(3, dtype="float32"), np.zeros((3, 3), "float32"), np.zeros(3, "float32")])
    np.testing.assert_array_equal(layer(x), x)
    dropped = layer(x, training=True)
    assert set(np.unique(dropped)) <= {0.0, 2.0} and 0.0 in dropped and 2.0 in dropped
    np.testing.assert_array_equal(dropped, np.repeat(dropped[:, :1], steps, axis=1))

    layer = layers.SimpleRNN(3, activation="linear", recurrent_dropout=0.5, return_sequences=True, seed=2)
    layer.build((None, steps, 3))
    layer.set_weights([np.zeros((3, 3), "float32"), np.eye(3, dtype="float32"), np.ones(3, "float32")])
    h = layer(x, training=True)
    mask = h[:, 1] - 1
    assert set(np.unique(mask)) <= {0.0, 2.0}
    np.testing.assert_allclose(h[:, 2], 1 + mask * h[:, 1])
    np.testing.assert_allclose(layer(x)[:, -1], np.full((4, 3), steps))

    for layer in (layers.LSTM(3, dropout=0.3, recurrent_dropout=0.3),
                  layers.GRU(3, dropout=0.3, recurrent_dropout=0.4)):
        layer(x)
        assert np.allclose(layer(x), layer(x, training=False))
        assert not np.allclose(layer(x, training=True), layer(x))


def test_training_with_dropout_updates_every_weight():
    inputs = kgraph.Input(shape=(None, 3))
    h = layers.LSTM(4, dropout=0.2, recurrent_dropout=0.3, return_sequences=True)(inputs)
    h = layers.GRU(3, dropout=0.2, recurrent_dropout=0.2, reset_after=False, return_sequences=True)(h)
    h = layers.Bidirectional(layers.GRU(2, dropout=0.1, recurrent_dropout=0.1))(h)
    model = kgraph.Model(inputs, layers.Dense(1)(layers.SimpleRNN(2, dropout=0.3)(layers.Reshape((2, 2))(h))))
    rng = np.random.default_rng(9)
    x, y = rng.standard_normal((16, 5, 3)).astype("float32"), rng.standard_normal((16, 1)).astype("float32")
    before = model.get_weights()
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert all(not np.allclose(a, b) for a, b in zip(before, model.get_weights()))


# ----- errors -----------------------------------------------------------------------------
def test_errors_name_the_layer_and_the_expectation():
    with pytest.raises(ValueError, match=r"layer \"lstm_bad\".*expected ndim=3, found ndim=2"):
        layers.LSTM(2, name="lstm_bad")(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=4"):
        layers.GRU(2)(kgraph.Input(shape=(3, 4, 5)))
    with pytest.raises(ValueError, match="positive integer.*units=0"):
        layers.SimpleRNN(0)
    with pytest.raises(ValueError, match="GRU layer 'g'.*`activation`.*'gelu'"):
        layers.GRU(2, activation="gelu", name="g")
    with pytest.raises(ValueError, match="known features"):
        layers.LSTM(2).build((None, 3, None))
    with pytest.raises(ValueError, match="recurrent_kernel of shape"):
        ops.lstm(np.zeros((1, 2, 8)), np.zeros((2, 4)))


# ----- Keras itself, when installed ------------------------------------------------------
@pytest.fixture(scope="module")
def keras():
    os.environ.setdefault("KERAS_BACKEND", "torch")
    return pytest.importorskip("keras")


KERAS_CASES = [
    ("SimpleRNN", {"go_backwards": True, "return_sequences": True}),
    ("LSTM", {"return_sequences": True, "return_state": True}),
    ("LSTM", {"go_backwards": True, "activation": "relu", "recurrent_activation": "hard_sigmoid"}),
    ("GRU", {"return_state": True}),
    ("GRU", {"reset_after": False, "go_backwards": True, "return_sequences": True}),
]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name,kwargs", KERAS_CASES)
def test_keras_weights_load_verbatim(keras, name, kwargs):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 5, 4)).astype("float32")
    reference = getattr(keras.layers, name)(6, **kwargs)
    reference(x)
    reference.set_weights([w + 0.3 * rng.standard_normal(w.shape).astype("float32")
                           for w in reference.get_weights()])
    layer = getattr(layers, name)(6, **kwargs)
    layer(x)
    layer.set_weights(reference.get_weights())
    expected = reference(x)
    expected = expected if isinstance(expected, (list, tuple)) else [expected]
    actual = layer(x)
    actual = actual if isinstance(actual, (list, tuple)) else [actual]
    for e, a in zip(expected, actual):
        np.testing.assert_allclose(a, keras.ops.convert_to_numpy(e), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("merge_mode", ["concat", "sum"])
def test_keras_bidirectional_weights_load_verbatim(keras, merge_mode):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 4, 3)).astype("float32")
    reference = keras.layers.Bidirectional(keras.layers.GRU(3, return_sequences=True), merge_mode=merge_mode)
    reference(x)
    reference.set_weights([w + 0.3 * rng.standard_normal(w.shape).astype("float32")
                           for w in reference.get_weights()])
    layer = layers.Bidirectional(layers.GRU(3, return_sequences=True), merge_mode=merge_mode)
    layer(x)
    layer.set_weights(reference.get_weights())
    np.testing.assert_allclose(layer(x), keras.ops.convert_to_numpy(reference(x)), rtol=1e-5, atol=1e-5)
