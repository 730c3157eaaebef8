"""Custom layers as the Keras guide "Making new layers and models via subclassing" writes them.

None defines ``compute_output_shape`` and none has an ONNX converter: kgraph
traces their ``call`` for symbolic calls and for export. The export CLI tests
load models made of them with ``python -m export ... --import tests.custom_layers``.
"""
import numpy as np

import kgraph
from kgraph import ops


class Linear(kgraph.layers.Layer):
    """``inputs @ w + b`` with weights made by ``add_weight`` in ``build``."""

    def __init__(self, units=32, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units), initializer="random_normal", name="w")
        self.b = self.add_weight(shape=(self.units,), initializer="random_normal", name="b")

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class NormalizedProjection(kgraph.layers.Layer):
    """``ops.matmul`` divided by a row norm from ``ops.sqrt``, times a broadcast per-feature scale."""

    def __init__(self, units=4, epsilon=1e-3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.epsilon = epsilon

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units), name="kernel")
        self.scale = self.add_weight(shape=(self.units,), initializer="ones", name="scale")

    def call(self, inputs):
        norm = ops.sqrt(ops.sum(ops.square(inputs), axis=-1, keepdims=True) + self.epsilon)
        return ops.matmul(inputs, self.kernel) / norm * self.scale

    def get_config(self):
        return {**super().get_config(), "units": self.units, "epsilon": self.epsilon}


class ActivityRegularizer(kgraph.layers.Layer):
    """Passes its input through and adds ``rate * mean(x ** 2)`` to the model's losses."""

    def __init__(self, rate=1e-2, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(ops.square(inputs)))
        return inputs

    def get_config(self):
        return {**super().get_config(), "rate": self.rate}


class OperatorMix(kgraph.layers.Layer):
    """Python operators and NumPy functions on the arrays ``call`` receives: ``* 2.0``, ``[:, 0]``, ``-x``,
    ``@``, ``**``, ``np.tanh``, ``.sum()``."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="w")

    def call(self, inputs):
        y = ops.multiply(inputs, self.w) * 2.0
        first = y[:, 0:1]
        return ops.concatenate([-y, first ** 2, np.tanh(y).sum(axis=-1, keepdims=True), inputs @ self.w[:, None]],
                               axis=-1)


class SortsWithNumPy(kgraph.layers.Layer):
    """Uses ``np.sort``, which is no kgraph op: it runs eagerly, but has no gradient and cannot be traced."""

    def call(self, inputs):
        return np.sort(inputs, axis=-1)


class ResidualBlock(kgraph.layers.Layer):
    """Sub-layers kept in attributes: one layer, a list of layers and a Sequential (weights saved by attribute)."""

    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.proj = kgraph.layers.Dense(units)
        self.norms = [kgraph.layers.LayerNormalization(), kgraph.layers.LayerNormalization()]
        self.ffn = kgraph.Sequential([kgraph.layers.Dense(units, activation="relu"), kgraph.layers.Dense(units)])

    def call(self, x):
        h = self.norms[0](x + self.proj(x))
        return self.norms[1](h + self.ffn(h))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "units": self.units}
