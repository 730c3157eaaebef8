"""The small digits CNN of the training benchmark, for kgraph, Keras 3 and PyTorch, plus its GEMM floor.

28x28x1 input; Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2,
Flatten, Dense 128 relu, Dense 10 softmax.
"""
import time

import numpy as np

import kgraph
from kgraph import layers

BATCH = 128


def cnn_data(n):
    rng = np.random.default_rng(0)
    return rng.random(size=(n, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, size=n)


def cnn_kgraph():
    inputs = kgraph.Input(shape=(28, 28, 1))
    h = layers.Conv2D(32, 3, activation="relu")(inputs)
    h = layers.MaxPooling2D(2)(h)
    h = layers.Conv2D(64, 3, activation="relu")(h)
    h = layers.MaxPooling2D(2)(h)
    h = layers.Flatten()(h)
    h = layers.Dense(128, activation="relu")(h)
    return kgraph.Model(inputs, layers.Dense(10, activation="softmax")(h))


CNN_KERAS = """
def build():
    inputs = keras.Input(shape=(28, 28, 1))
    h = keras.layers.Conv2D(32, 3, activation="relu")(inputs)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.Conv2D(64, 3, activation="relu")(h)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.Flatten()(h)
    h = keras.layers.Dense(128, activation="relu")(h)
    return keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(h))
"""


def cnn_torch():
    import torch

    class ToChannelsFirst(torch.nn.Module):
        """The benchmark feeds channels-last batches; PyTorch convolutions want NCHW."""

        def forward(self, x):
            return x.permute(0, 3, 1, 2)

    return torch.nn.Sequential(ToChannelsFirst(), torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Flatten(), torch.nn.Linear(1600, 128), torch.nn.ReLU(),
                               torch.nn.Linear(128, 10))


def cnn_floor(x):
    """Samples/s if a step cost only its im2col GEMMs (forward, weight and input gradients back).

    kgraph runs the second convolution as Winograd F(4x4, 3x3), a quarter of those multiplications, so
    this floor is what a plain im2col engine could reach, not a bound on kgraph.
    """
    rng = np.random.default_rng(1)
    n = len(x)
    shapes = [(n * 26 * 26, 9, 32), (n * 11 * 11, 288, 64), (n, 1600, 128), (n, 128, 10)]
    operands = [(rng.random((m, k), dtype=np.float32), rng.random((k, f), dtype=np.float32),
                 rng.random((m, f), dtype=np.float32)) for m, k, f in shapes]
    steps = 10
    start = time.perf_counter()
    for _ in range(steps):
        for i, (a, w, g) in enumerate(operands):
            _ = a @ w
            _ = a.T @ g
            if i:  # the first convolution's input needs no gradient
                _ = g @ w.T
    return steps * n / (time.perf_counter() - start)
