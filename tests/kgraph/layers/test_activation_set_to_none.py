"""``layer.activation = None`` after construction means no activation (keras-io's Grad-CAM drops a softmax so), as
Keras's layers skip a None activation."""
import numpy as np
import pytest

import kgraph
from kgraph import layers


@pytest.mark.parametrize("make,shape", [
    (lambda: layers.Dense(2, activation="softmax"), (1, 3)),
    (lambda: layers.Conv2D(2, 3, activation="relu"), (1, 5, 5, 2)),
    (lambda: layers.Conv2DTranspose(2, 3, activation="relu"), (1, 3, 3, 2)),
    (lambda: layers.SeparableConv2D(2, 3, activation="relu"), (1, 5, 5, 2)),
    (lambda: layers.EinsumDense("ab,bc->ac", output_shape=2, activation="relu"), (1, 3)),
])
def test_a_none_activation_is_the_identity(make, shape):
    x = np.random.default_rng(0).normal(size=shape).astype("float32")
    layer = make()
    layer(x)
    layer.activation = None
    plain = make()
    plain.activation = kgraph.activations.linear
    plain(x)
    plain.set_weights(layer.get_weights())
    np.testing.assert_allclose(layer(x), plain(x), rtol=1e-6)


def test_a_model_whose_head_lost_its_softmax_predicts_logits():
    inputs = kgraph.Input((3,))
    model = kgraph.Model(inputs, layers.Dense(4, activation="softmax")(inputs))
    x = np.ones((2, 3), "float32")
    model.layers[-1].activation = None
    logits = model.predict(x, verbose=0)
    assert not np.allclose(logits.sum(-1), 1.0)
    np.testing.assert_allclose(logits, x @ model.layers[-1].kernel.numpy() + model.layers[-1].bias.numpy(),
                               rtol=1e-5)
