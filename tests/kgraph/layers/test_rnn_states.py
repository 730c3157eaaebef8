"""`states` of the recurrent layers, as Keras 3 exposes them."""
import numpy as np

from kgraph import layers


def test_stateful_layer_exposes_its_carried_states_and_zeros_after_reset():
    x = np.random.default_rng(0).random((3, 5, 2)).astype("float32")
    lstm = layers.LSTM(4, stateful=True)
    assert lstm.states is None  # before the first call, as Keras's
    last = lstm(x)
    h, c = lstm.states
    np.testing.assert_allclose(h, last)
    assert h.shape == c.shape == (3, 4)
    lstm.reset_states()
    assert all(not np.any(s) and s.shape == (3, 4) for s in lstm.states)
    # The carried states start another layer where this one stopped, as Keras's guide does with initial_state.
    lstm(x)
    follow = layers.LSTM(4)
    follow(x, initial_state=lstm.states)
    assert layers.GRU(3).states is None
