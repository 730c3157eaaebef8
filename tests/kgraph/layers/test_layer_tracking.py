"""Layer tracking as Keras 3's: layers put into list and dict attributes (also after they are set) are tracked in
attribute order, and a ``build(self)`` taking no shape is called with none."""
import numpy as np
import pytest

import kgraph
from kgraph import layers


def _holder(lib):
    class Holder(lib.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.by_name = {}
            self.by_name["a"] = lib.layers.Dense(2)
            self.stack = []
            self.stack.append(lib.layers.Dense(3))
            self.direct = [lib.layers.Dense(4)]

        def call(self, x):
            return self.by_name["a"](x) + self.stack[0](x)[:, :2] + self.direct[0](x)[:, :2]
    return Holder()


def test_layers_in_dicts_and_lists_filled_later_are_tracked_in_order():
    holder = _holder(kgraph)
    holder(np.ones((1, 5), "float32"))
    assert [tuple(w.shape) for w in holder.weights] == [(5, 2), (2,), (5, 3), (3,), (5, 4), (4,)]
    assert len(holder.trainable_weights) == 6


def test_the_weight_order_matches_keras():
    keras = pytest.importorskip("keras")
    ours, theirs = _holder(kgraph), _holder(keras)
    x = np.random.default_rng(0).normal(size=(2, 5)).astype("float32")
    ours(x)
    theirs(x)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(x), keras.ops.convert_to_numpy(theirs(x)), rtol=1e-5)


def test_a_build_without_a_shape_argument_is_called_without_one():
    class Doubler(layers.Layer):
        def build(self):
            self.scale = self.add_weight((), "ones", name="scale")

        def call(self, x):
            return x * 2 * self.scale

    layer = Doubler()
    np.testing.assert_allclose(layer(np.ones((1, 2), "float32")), [[2.0, 2.0]])
    assert len(layer.weights) == 1
