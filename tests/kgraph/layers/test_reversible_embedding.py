"""ReversibleEmbedding: forward lookups, reverse projections (tied or not, soft-capped), masks, gradients, saving,
Keras parity."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers
from tests.export.parity import assert_parity
from tests.gradcheck import check_gradients, check_variable_gradients

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")
RNG = np.random.default_rng(0)
IDS = np.array([[1, 4, 0, 7], [3, 3, 9, 0]])


@pytest.fixture
def float64():
    previous = backend.floatx()
    backend.set_floatx("float64")
    yield
    backend.set_floatx(previous)


def _built(**kwargs):
    layer = layers.ReversibleEmbedding(10, 6, **kwargs)
    layer(IDS)
    layer.set_weights([RNG.standard_normal(w.shape).astype(w.dtype) for w in layer.get_weights()])
    return layer


@pytest.mark.parametrize("tie_weights", [True, False])
def test_forward_is_a_lookup_and_reverse_projects_onto_the_vocabulary(tie_weights):
    layer = _built(tie_weights=tie_weights)
    table = layer.embeddings.numpy()
    hidden = layer(IDS)
    np.testing.assert_array_equal(hidden, table[IDS])
    kernel = table.T if tie_weights else layer.reverse_embeddings.numpy()
    logits = layer(hidden, reverse=True)
    assert logits.shape == (2, 4, 10)
    np.testing.assert_allclose(logits, hidden @ kernel, rtol=1e-6, atol=1e-6)
    assert [w.name for w in layer.weights] == ["embeddings"] + ([] if tie_weights else ["reverse_embeddings"])
    assert tie_weights or layer.reverse_embeddings.shape == (6, 10)


def test_soft_cap_bounds_the_logits_and_reverse_dtype_sets_their_precision():
    capped = _built(logit_soft_cap=1.5, reverse_dtype="float64")
    hidden = 2.0 * RNG.standard_normal((3, 6)).astype("float32")
    logits = capped(hidden, reverse=True)
    plain = hidden.astype("float64") @ capped.embeddings.numpy().T.astype("float64")
    assert logits.dtype == np.float64 and np.abs(plain).max() > 1.5
    np.testing.assert_allclose(logits, np.tanh(plain / 1.5) * 1.5, rtol=1e-12)
    assert np.abs(logits).max() <= 1.5


def test_masks_come_from_forward_calls_only():
    ids = kgraph.Input((4,), dtype="int32")
    layer = layers.ReversibleEmbedding(10, 6, mask_zero=True)
    hidden = layer(ids)
    logits = layer(layers.Dense(6)(hidden), reverse=True)
    assert hidden._keras_mask is not None and logits._keras_mask is None
    assert logits.shape == (None, 4, 10) and logits.dtype == "float32"
    pooled = layers.GlobalAveragePooling1D()(hidden)
    model = kgraph.Model(ids, [logits, pooled])
    out, mean = model.predict(IDS, verbose=0)
    table = layer.embeddings.numpy()
    keep = (IDS != 0)[..., None]
    np.testing.assert_allclose(mean, (table[IDS] * keep).sum(1) / keep.sum(1), rtol=1e-5)
    assert out.shape == (2, 4, 10)


@pytest.mark.parametrize("kwargs,match", [
    ({"tie_weights": "no"}, "tie_weights"), ({"logit_soft_cap": 0.0}, "logit_soft_cap"),
    ({"logit_soft_cap": "big"}, "logit_soft_cap"), ({"reverse_dtype": "float99"}, "reverse_dtype"),
    ({"input_dim": 0}, "input_dim")])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.ReversibleEmbedding(**{"input_dim": 10, "output_dim": 4, **kwargs})


@pytest.mark.parametrize("tie_weights,cap", [(True, None), (False, 2.0)])
def test_reverse_gradients_reach_inputs_and_weights(float64, tie_weights, cap):
    layer = _built(tie_weights=tie_weights, logit_soft_cap=cap)
    hidden = RNG.standard_normal((2, 3, 6))
    check_gradients(lambda xs: layer(xs[0], reverse=True), [hidden])
    check_variable_gradients(lambda: layer(hidden, reverse=True), layer.trainable_weights)


def test_a_tied_language_model_head_trains_through_both_directions(float64):
    ids = kgraph.Input((4,), dtype="int32")
    layer = layers.ReversibleEmbedding(10, 6, logit_soft_cap=3.0)
    model = kgraph.Model(ids, layer(layers.Dense(6, activation="tanh")(layer(ids)), reverse=True))
    # The tied table gets gradient from the lookup and from the projection: both paths are checked together.
    check_variable_gradients(lambda: model(IDS), model.trainable_weights)
    model.compile(optimizer=kgraph.optimizers.Adam(0.05),
                  loss=kgraph.losses.SparseCategoricalCrossentropy(from_logits=True))
    targets = np.roll(IDS, -1, axis=1)
    before = model.evaluate(IDS, targets, verbose=0)
    model.fit(IDS, targets, epochs=30, verbose=0)
    assert model.evaluate(IDS, targets, verbose=0) < 0.5 * before


def _language_model(tie_weights=True, cap=2.0):
    ids = kgraph.Input((5,), dtype="int32", name="ids")
    layer = layers.ReversibleEmbedding(12, 4, tie_weights=tie_weights, logit_soft_cap=cap)
    logits = layer(layers.Dense(4, activation="tanh")(layer(ids)), reverse=True)
    model = kgraph.Model(ids, logits, name="reversible_lm")
    model.set_weights([RNG.standard_normal(w.shape).astype(w.dtype) for w in model.get_weights()])
    return model


@pytest.mark.parametrize("tie_weights", [True, False])
def test_save_and_load_keep_predictions_and_config(tmp_path, tie_weights):
    model = _language_model(tie_weights)
    ids = RNG.integers(0, 12, (3, 5))
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(ids, verbose=0), model.predict(ids, verbose=0))
    assert loaded.layers[1].get_config() == model.layers[1].get_config()


def test_export_matches_in_both_directions_with_float_ids():
    ids = kgraph.Input((5,), name="ids")  # float ids: the traced lookup casts them to int64
    layer = layers.ReversibleEmbedding(12, 4, tie_weights=False, mask_zero=True)
    model = kgraph.Model(ids, layer(layers.Dense(4)(layer(ids)), reverse=True), name="reversible_float_ids")
    model.set_weights([RNG.standard_normal(w.shape).astype(w.dtype) for w in model.get_weights()])
    assert_parity(model, sampler=lambda name, shape, dtype, rng: rng.integers(0, 12, shape).astype(dtype))


@needs_keras
@pytest.mark.parametrize("kwargs", [{}, {"tie_weights": False}, {"logit_soft_cap": 1.5},
                                    {"tie_weights": False, "logit_soft_cap": 0.7, "mask_zero": True}])
def test_matches_keras_on_copied_weights(kwargs):
    import keras
    ours = _built(**kwargs)
    theirs = keras.layers.ReversibleEmbedding(10, 6, **kwargs)
    theirs(IDS)
    theirs.set_weights(ours.get_weights())
    assert [w.path.split("/")[-1] for w in theirs.weights] == [w.name for w in ours.weights]
    np.testing.assert_allclose(ours(IDS), keras.ops.convert_to_numpy(theirs(IDS)), rtol=0, atol=0)
    hidden = 3.0 * RNG.standard_normal((2, 4, 6)).astype("float32")
    # float32 matmuls of 6 terms, summed in different orders: a few ulps.
    np.testing.assert_allclose(ours(hidden, reverse=True),
                               keras.ops.convert_to_numpy(theirs(hidden, reverse=True)), rtol=1e-6, atol=1e-6)
    ours_config, keras_config = layers.serialize(ours)["config"], keras.layers.serialize(theirs)["config"]
    shared = set(ours_config) - {"name", "dtype", "trainable"}
    assert {k: ours_config[k] for k in shared} == {k: keras_config[k] for k in shared}
    # Keras's other arguments (constraint, LoRA, quantization) are at values that change nothing.
    assert all(not keras_config[k] for k in set(keras_config) - set(ours_config) - {"dtype"})
    assert layers.deserialize(keras.layers.serialize(theirs)).get_config() == \
        {**ours.get_config(), "name": theirs.name}


@needs_keras
def test_keras_files_carry_both_directions_between_kgraph_and_keras(tmp_path):
    import keras
    model = _language_model(tie_weights=False)
    ids = RNG.integers(0, 12, (3, 5))
    model.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    # float32 logits of size ~2 (soft-capped) through a Dense and a matmul, summed in other orders.
    np.testing.assert_allclose(theirs.predict(ids, verbose=0), model.predict(ids, verbose=0), rtol=1e-5, atol=1e-6)
    theirs.save(tmp_path / "theirs.keras")
    back = kgraph.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(back.predict(ids, verbose=0), model.predict(ids, verbose=0), rtol=1e-6, atol=1e-6)
    assert back.layers[1].get_config() == {**model.layers[1].get_config(), "name": back.layers[1].name}
