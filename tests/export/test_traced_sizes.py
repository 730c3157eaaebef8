"""Sizes read with ``ops.shape`` inside a layer's ``call``: a position range (``ops.arange`` up to the sequence
length) and a causal mask tiled to the batch size (``ops.tile`` with a traced repeat count), as keras-io's
Transformer and GPT examples write them, build symbolically and export with parity (onnxruntime)."""
import numpy as np

import kgraph
from kgraph import layers, ops
from tests.export.parity import assert_parity


class PositionalEmbedding(layers.Layer):
    def __init__(self, length, dim, **kwargs):
        super().__init__(**kwargs)
        self.length, self.dim = length, dim
        self.positions = layers.Embedding(length, dim)

    def call(self, x):
        positions = ops.arange(0, ops.shape(x)[-1], 1)
        return ops.expand_dims(ops.cast(x, "float32"), -1) + self.positions(positions)

    def get_config(self):
        return {**super().get_config(), "length": self.length, "dim": self.dim}


class CausalMixer(layers.Layer):
    """Adds a causal mask tiled to the batch: ``tile(mask, [batch, 1, 1])`` with the batch read at run time."""

    def call(self, x):
        batch, steps = ops.shape(x)[0], ops.shape(x)[1]
        i = ops.arange(steps)[:, None]
        j = ops.arange(steps)
        mask = ops.reshape(ops.cast(i >= j, "float32"), [1, steps, steps])
        mult = ops.concatenate([ops.expand_dims(batch, -1), ops.convert_to_tensor([1, 1])], 0)
        return ops.matmul(ops.tile(mask, mult), x)


def test_a_position_range_up_to_the_traced_length_builds_and_exports():
    tokens = kgraph.Input(shape=(None,), dtype="int32")
    out = PositionalEmbedding(16, 4)(tokens)
    assert out.shape == (None, None, 4)  # a fixed-size Embedding of the positions: no placeholder index checked
    model = kgraph.Model(tokens, layers.Dense(2)(out))
    x = np.random.default_rng(0).integers(0, 5, size=(3, 7)).astype("int32")
    assert model.predict(x, verbose=0).shape == (3, 7, 2)
    assert_parity(model)


def test_a_mask_tiled_to_the_traced_batch_exports():
    x = kgraph.Input(shape=(5, 3))
    model = kgraph.Model(x, CausalMixer()(x))
    assert model.output_shape[0] is None and model.output_shape[-1] == 3
    assert model.predict(np.ones((2, 5, 3), "float32"), verbose=0).shape == (2, 5, 3)
    assert_parity(model)


def test_a_sub_model_built_by_a_call_on_placeholders_keeps_unknown_sizes():
    class Block(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.proj = kgraph.Sequential([layers.Dense(4)])

        def call(self, x):
            n = ops.shape(x)[1]
            causal = ops.cast(ops.arange(n)[:, None] >= ops.arange(n), "float32")
            return self.proj(x) + ops.sum(causal)

    out = Block()(kgraph.Input(shape=(None, 4)))
    assert out.shape == (None, None, 4)


def test_an_unknown_size_broadcasts_to_a_known_one_as_in_keras():
    a = kgraph.Input(shape=(3, 3))
    b = kgraph.Input(batch_shape=(None, None, None))
    assert (a + b).shape == (None, 3, 3)
    assert ops.multiply(b, a).shape == (None, 3, 3)
    assert ops.matmul(b, kgraph.Input(shape=(3, 2))).shape == (None, None, 2)


class BroadcastToInput(layers.Layer):
    def call(self, x):
        return x + ops.broadcast_to(ops.ones((4, 3)), ops.shape(x))


def test_broadcast_to_a_traced_shape_builds_and_exports():
    inputs = kgraph.Input((4, 3))
    model = kgraph.Model(inputs, BroadcastToInput()(inputs))
    assert model.output_shape == (None, 4, 3)
    assert_parity(model)
