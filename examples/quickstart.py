"""Build a small functional model, print its summary and run it on random data."""
import numpy as np

import kgraph
from kgraph import layers

kgraph.utils.set_random_seed(0)
inputs = kgraph.Input(shape=(4,), name="features")
hidden = layers.Dense(8, activation="relu", name="hidden")(inputs)
outputs = layers.Dense(3, activation="softmax", name="probs")(hidden)
model = kgraph.Model(inputs, outputs, name="tiny")
model.summary()
batch = np.random.default_rng(0).normal(size=(2, 4)).astype("float32")
print(model.predict(batch, verbose=0))
