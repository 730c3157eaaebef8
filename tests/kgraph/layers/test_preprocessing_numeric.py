"""Normalization, Discretization and CategoryEncoding: adapt against NumPy, encodings, configs, Keras 3 parity."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L

HAS_KERAS = importlib.util.find_spec("keras") is not None
needs_keras = pytest.mark.skipif(not HAS_KERAS, reason="keras is not installed")


def _data(shape=(200, 3), seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) * np.arange(1, shape[-1] + 1) + np.arange(shape[-1])).astype(np.float32)


def test_normalization_adapt_matches_numpy_over_arrays_batches_and_generators():
    x = _data()
    whole = L.Normalization()
    whole.adapt(x)
    mean, variance, count = whole.get_weights()
    # float32 weights from float64 statistics: 1e-6 relative is float32 rounding.
    np.testing.assert_allclose(mean, x.mean(0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(variance, x.var(0), rtol=1e-6)
    assert count == 0  # as Keras 3: the weight exists for its file layout, adapt never assigns it
    batched = L.Normalization()
    batched.adapt(x, batch_size=7)
    from_generator = L.Normalization()
    from_generator.adapt((x[i:i + 16] for i in range(0, 200, 16)), steps=5)  # the first 80 rows only
    np.testing.assert_allclose(batched.get_weights()[1], x.var(0), rtol=1e-5)
    np.testing.assert_allclose(from_generator.get_weights()[0], x[:80].mean(0), rtol=1e-5, atol=1e-6)
    out = whole(x)
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(out.std(0), 1, rtol=1e-5)


class Batches(kgraph.utils.PyDataset):
    """``(x, y)`` batches of 32 rows of an array."""

    def __init__(self, x):
        super().__init__()
        self.x = x

    def __len__(self):
        return -(-len(self.x) // 32)

    def __getitem__(self, index):
        rows = self.x[index * 32:(index + 1) * 32]
        return rows, rows[:, :1]


def test_adapt_reads_a_py_dataset():
    x = _data()
    layer = L.Normalization()
    layer.adapt(Batches(x))
    np.testing.assert_allclose(layer.get_weights()[1], x.var(0), rtol=1e-5)
    bins = L.Discretization(num_bins=2)
    bins.adapt(Batches(x[:, :1]), steps=2)
    assert len(bins.bin_boundaries) == 1


def test_normalization_axes_given_statistics_and_invert():
    x = _data((40, 4, 3))
    per_cell = L.Normalization(axis=(1, 2))
    per_cell.adapt(x)
    np.testing.assert_allclose(per_cell.get_weights()[0], x.mean(0), rtol=1e-5, atol=1e-6)
    scalar = L.Normalization(axis=None)
    scalar.adapt(x)
    np.testing.assert_allclose(scalar.get_weights()[1], x.var(), rtol=1e-5)
    given = L.Normalization(mean=[0.0, 1.0, 2.0], variance=[1.0, 4.0, 9.0])
    np.testing.assert_allclose(given(x), (x - [0, 1, 2]) / [1, 2, 3], rtol=1e-6, atol=1e-6)
    inverse = L.Normalization(mean=[0.0, 1.0, 2.0], variance=[1.0, 4.0, 9.0], invert=True)
    np.testing.assert_allclose(inverse(given(x)), x, rtol=1e-5, atol=1e-5)
    assert given.get_weights() == []
    with pytest.raises(ValueError, match="both `mean` and `variance` must be set"):
        L.Normalization(mean=1.0)
    with pytest.raises(ValueError, match="must be in the range"):
        L.Normalization(axis=3).build((None, 2))


def test_normalization_in_a_model_trains_saves_and_loads(tmp_path):
    x = _data()
    norm = L.Normalization()
    norm.adapt(x)
    inputs = kgraph.Input((3,))
    model = kgraph.Model(inputs, L.Dense(1)(norm(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, x[:, :1], epochs=1, batch_size=50, verbose=0)
    np.testing.assert_allclose(norm.get_weights()[0], x.mean(0), rtol=1e-6, atol=1e-6)  # not trainable
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.layers[1].get_config() == norm.get_config()


def test_discretization_boundaries_encodings_and_quantile_adapt():
    layer = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0])
    x = np.array([[-1.5, 0.0, 0.5], [1.0, 2.0, 9.0]], np.float32)
    np.testing.assert_array_equal(layer(x), np.digitize(x, [0.0, 1.0, 2.0]))
    assert layer(x).dtype == np.int32
    one_hot = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0], output_mode="one_hot")(x)
    np.testing.assert_array_equal(one_hot, np.eye(4)[np.digitize(x, [0.0, 1.0, 2.0])])
    counts = L.Discretization(bin_boundaries=[0.0, 1.0, 2.0], output_mode="count")(x)
    np.testing.assert_array_equal(counts, [[1, 2, 0, 0], [0, 0, 1, 2]])
    values = np.random.default_rng(0).uniform(0, 100, size=10_000).astype(np.float32)
    adapted = L.Discretization(num_bins=4)
    adapted.adapt(values.reshape(100, 100), batch_size=10)
    # The summary is approximate (epsilon=0.01): boundaries within 2% of the value range of NumPy's quantiles.
    np.testing.assert_allclose(adapted.bin_boundaries, np.quantile(values, [0.25, 0.5, 0.75]), atol=2.0)
    restored = L.Discretization.from_config(adapted.get_config())
    assert restored.bin_boundaries == adapted.bin_boundaries and restored.num_bins == 4
    with pytest.raises(ValueError, match="either `num_bins` or `bin_boundaries`"):
        L.Discretization()
    with pytest.raises(ValueError, match="Cannot adapt a Discretization layer"):
        layer.adapt(values)


def test_category_encoding_modes_shapes_and_range_check():
    x = np.array([[1, 2, 2], [0, 0, 3]])
    np.testing.assert_array_equal(L.CategoryEncoding(4)(x), [[0, 1, 1, 0], [1, 0, 0, 1]])
    np.testing.assert_array_equal(L.CategoryEncoding(4, "count")(x), [[0, 1, 2, 0], [2, 0, 0, 1]])
    np.testing.assert_array_equal(L.CategoryEncoding(4, "one_hot")(x[:, :1]), np.eye(4)[[1, 0]])
    weights = np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 1.0]], np.float32)
    np.testing.assert_array_equal(L.CategoryEncoding(4, "count")(x, count_weights=weights),
                                  [[0, 0.5, 3.0, 0], [2, 0, 0, 1]])
    inputs = kgraph.Input((3,), dtype="int64")
    assert L.CategoryEncoding(5, "one_hot")(inputs).shape == (None, 3, 5)
    with pytest.raises(ValueError, match="0 <= values < num_tokens with num_tokens=4"):
        L.CategoryEncoding(4)(np.array([[4]]))
    with pytest.raises(ValueError, match="Unknown value for `output_mode`"):
        L.CategoryEncoding(4, output_mode="tf_idf")


@needs_keras
def test_outputs_and_adapted_state_match_keras():
    import keras
    x = _data((120, 3))
    ours, theirs = L.Normalization(), keras.layers.Normalization()
    ours.adapt(x)
    theirs.adapt(x)
    np.testing.assert_allclose(ours(x), keras.ops.convert_to_numpy(theirs(x)), rtol=1e-5, atol=1e-5)
    ours, theirs = L.Discretization(num_bins=5, epsilon=0.05), keras.layers.Discretization(num_bins=5, epsilon=0.05)
    batches = [x[i:i + 40, 0] for i in range(0, 120, 40)]
    ours.adapt(batches)
    for batch in batches:  # Keras's adapt() itself imports TensorFlow to look for a tf.data.Dataset
        theirs.update_state(batch)
    theirs.finalize_state()
    np.testing.assert_allclose(ours.bin_boundaries, theirs.bin_boundaries, rtol=1e-6)
    for mode in ("one_hot", "multi_hot", "count"):
        for ints in (np.array([1, 2, 2]), np.array([[1, 2, 2], [0, 0, 3]]), np.array([[[1, 2], [3, 3]]])):
            expected = keras.ops.convert_to_numpy(keras.layers.CategoryEncoding(4, mode)(ints))
            np.testing.assert_array_equal(L.CategoryEncoding(4, mode)(ints), expected)
    for layer in (ours, L.CategoryEncoding(3), L.Normalization(axis=(1, 2))):
        config = {k: v for k, v in layer.get_config().items() if k not in ("trainable", "dtype")}
        keras_config = getattr(keras.layers, type(layer).__name__).from_config(config).get_config()
        assert {k: v for k, v in keras_config.items() if k not in ("trainable", "dtype")} == config


def test_adapted_discretization_and_encodings_save_and_load(tmp_path):
    x = _data((300, 2))
    bins = L.Discretization(num_bins=3)
    bins.adapt(x[:, 0])
    inputs = kgraph.Input((2,))
    indices = bins(inputs)
    model = kgraph.Model(inputs, [indices, L.CategoryEncoding(3, "count")(indices)])
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    for ours, theirs in zip(model.predict(x, verbose=0), loaded.predict(x, verbose=0)):
        np.testing.assert_array_equal(ours, theirs)
    assert loaded.layers[1].bin_boundaries == bins.bin_boundaries
