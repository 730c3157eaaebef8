"""--verify draws inputs the native model accepts: ids in range for float inputs read as ids (by an Embedding, a
CategoryEncoding or a user's layer), and lengths of the dynamic axis that strided convolutions can take."""
import numpy as np

import kgraph
from export import to_onnx
from export.verify import accepted_lengths, default_sampler, verify, working_inputs
from kgraph import layers, ops


def _check(model):
    report = verify(model, to_onnx(model), batches=(1, 3), print_fn=None)
    assert report.ok, [str(c) for c in report.failures]
    return report


def test_a_float_input_read_by_an_embedding_gets_ids_in_range():
    inp = kgraph.Input((None,))  # float32, as the guides declare token inputs
    model = kgraph.Model(inp, layers.GlobalAveragePooling1D()(layers.Embedding(7, 3)(inp)))
    x = default_sampler(model)(model.input_names[0], (4, 6), "float32", np.random.default_rng(0))
    assert x.dtype == np.float32 and x.min() >= 0 and x.max() < 7 and np.all(x == np.round(x))
    _check(model)


def test_a_float_input_read_by_category_encoding_gets_ids_below_num_tokens():
    inp = kgraph.Input((1,))
    model = kgraph.Model(inp, layers.Dense(2)(layers.CategoryEncoding(num_tokens=2, output_mode="one_hot")(inp)))
    _check(model)


class TokenAndPosition(layers.Layer):
    """A user's layer that reads its float input as ids (the transformer example's embedding)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.tokens = layers.Embedding(50, 4)
        self.positions = layers.Embedding(8, 4)

    def call(self, x):
        return self.tokens(x) + self.positions(ops.arange(0, ops.shape(x)[-1]))


def test_float_inputs_refused_as_normals_are_tried_as_small_ids():
    inp = kgraph.Input((8,))
    model = kgraph.Model(inp, layers.Flatten()(TokenAndPosition()(inp)))
    assert working_inputs(model)[1] == (None,)
    x = default_sampler(model, ids=True)(model.input_names[0], (2, 8), "float32", np.random.default_rng(0))
    assert x.min() >= 0 and np.all(x == np.round(x))
    _check(model)


def test_lengths_are_chosen_that_strided_convolutions_accept():
    inp = kgraph.Input((None, 2))
    x = layers.Conv1D(3, 7, strides=3)(layers.Conv1D(3, 7, strides=3)(inp))
    model = kgraph.Model(inp, layers.GlobalMaxPooling1D()(x))
    lengths = accepted_lengths(model)
    assert lengths[0] >= 25 and lengths[0] < lengths[1]
    report = _check(model)
    assert {c.steps for c in report.comparisons} == set(lengths)
    plain = kgraph.Input((None, 2))
    assert accepted_lengths(kgraph.Model(plain, layers.Dense(2)(plain))) == (5, 9)
