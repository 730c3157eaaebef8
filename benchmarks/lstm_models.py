"""The LSTM model of the training benchmark (32 timesteps x 64 features, LSTM(128), Dense(10) softmax) in
kgraph, Keras 3 and PyTorch, with its bare-matmul floor; and the same behind ``Masking`` (sequences of 16 to 32
steps, zero-padded at the end), in kgraph and Keras; and GRU(128) on the same data, in all three."""
import time

import numpy as np

import kgraph
from kgraph import layers

TIMESTEPS, FEATURES, UNITS, CLASSES = 32, 64, 128, 10
BATCH = 128


def lstm_data(n):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, TIMESTEPS, FEATURES)).astype("float32"), rng.integers(0, CLASSES, size=n)


def lstm_kgraph():
    inputs = kgraph.Input(shape=(TIMESTEPS, FEATURES))
    return kgraph.Model(inputs, layers.Dense(CLASSES, activation="softmax")(layers.LSTM(UNITS)(inputs)))


def lstm_masked_data(n):
    """``lstm_data`` with each sequence cut to 16..32 steps and zero-padded (what ``Masking(0.0)`` masks)."""
    x, y = lstm_data(n)
    lengths = np.random.default_rng(1).integers(TIMESTEPS // 2, TIMESTEPS + 1, size=n)
    x[np.arange(TIMESTEPS)[None, :] >= lengths[:, None]] = 0
    return x, y


def lstm_masked_kgraph():
    inputs = kgraph.Input(shape=(TIMESTEPS, FEATURES))
    h = layers.LSTM(UNITS)(layers.Masking(0.0)(inputs))
    return kgraph.Model(inputs, layers.Dense(CLASSES, activation="softmax")(h))


LSTM_MASKED_KERAS = f"""
def build():
    inputs = keras.Input(shape=({TIMESTEPS}, {FEATURES}))
    h = keras.layers.LSTM({UNITS})(keras.layers.Masking(0.0)(inputs))
    return keras.Model(inputs, keras.layers.Dense({CLASSES}, activation="softmax")(h))
"""


LSTM_KERAS = f"""
def build():
    inputs = keras.Input(shape=({TIMESTEPS}, {FEATURES}))
    h = keras.layers.LSTM({UNITS})(inputs)
    return keras.Model(inputs, keras.layers.Dense({CLASSES}, activation="softmax")(h))
"""


def _last_state_torch(kind):
    """``torch.nn.LSTM`` or ``GRU`` (batch first; the GRU's gates are Keras's reset_after=True) whose last hidden
    state feeds a Linear layer (logits)."""
    import torch

    class LastState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(FEATURES, UNITS, batch_first=True)
            self.head = torch.nn.Linear(UNITS, CLASSES)

        def forward(self, x):
            _, state = self.rnn(x)
            h = state[0] if kind == "LSTM" else state
            return self.head(h[-1])

    return LastState()


def lstm_torch():
    return _last_state_torch("LSTM")


def lstm_floor(x, gates=4):
    """Samples/s if a step cost only its matmuls: the input projection, 32 recurrent products forward and
    32 backward, and the two weight gradients (``gates`` 3: the GRU's)."""
    rng = np.random.default_rng(1)
    xb = x[:BATCH].reshape(-1, FEATURES)
    kernel = rng.normal(size=(FEATURES, gates * UNITS)).astype("float32")
    recurrent = rng.normal(size=(UNITS, gates * UNITS)).astype("float32")
    h = rng.normal(size=(BATCH, UNITS)).astype("float32")
    dz = rng.normal(size=(BATCH, gates * UNITS)).astype("float32")
    hidden = rng.normal(size=(TIMESTEPS * BATCH, UNITS)).astype("float32")
    d_all = rng.normal(size=(TIMESTEPS * BATCH, gates * UNITS)).astype("float32")
    steps = 10
    start = time.perf_counter()
    for _ in range(steps):
        _ = xb @ kernel
        for _ in range(TIMESTEPS):
            _ = h @ recurrent
            _ = dz @ recurrent.T
        _ = hidden.T @ d_all
        _ = xb.T @ d_all
    return steps * BATCH / (time.perf_counter() - start)


def gru_floor(x):
    return lstm_floor(x, gates=3)


def gru_kgraph():
    inputs = kgraph.Input(shape=(TIMESTEPS, FEATURES))
    return kgraph.Model(inputs, layers.Dense(CLASSES, activation="softmax")(layers.GRU(UNITS)(inputs)))


GRU_KERAS = f"""
def build():
    inputs = keras.Input(shape=({TIMESTEPS}, {FEATURES}))
    h = keras.layers.GRU({UNITS})(inputs)
    return keras.Model(inputs, keras.layers.Dense({CLASSES}, activation="softmax")(h))
"""


def gru_torch():
    return _last_state_torch("GRU")
