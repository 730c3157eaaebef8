"""Hashing, StringLookup, IntegerLookup and TextVectorization: Keras's documented values, adapt, string models."""
import math

import numpy as np
import pytest

import kgraph
from kgraph import layers as L
from kgraph.layers.preprocessing.hashing import siphash24

LETTERS = [["A"], ["B"], ["C"], ["D"], ["E"]]


def test_siphash_matches_the_reference_vector_of_its_paper():
    key = (int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)), "little"))
    assert siphash24(key, bytes(range(15))) == 0xA129CA6149BE45E5


def test_salted_hashing_gives_the_values_of_keras_documentation():
    np.testing.assert_array_equal(L.Hashing(3, salt=133)(LETTERS), [[0], [0], [2], [1], [0]])
    np.testing.assert_array_equal(L.Hashing(3, salt=[133, 137])(LETTERS), [[1], [2], [1], [0], [2]])


def test_farmhash_hashing_gives_the_values_of_keras_documentation():
    pytest.importorskip("farmhash")
    np.testing.assert_array_equal(L.Hashing(3)(LETTERS), [[1], [0], [1], [1], [2]])
    np.testing.assert_array_equal(L.Hashing(3, mask_value="")([["A"], ["B"], [""], ["C"], ["D"]]),
                                  [[1], [1], [0], [2], [2]])
    ints = L.Hashing(7)(np.array([[3, 40], [40, 3]]))
    np.testing.assert_array_equal(ints, L.Hashing(7)(np.array([["3", "40"], ["40", "3"]])))  # Keras hashes the text
    assert ints.dtype == np.int64
    np.testing.assert_array_equal(L.Hashing(7, output_mode="multi_hot")(np.array([[3, 40]])).sum(), 2)


def test_hashing_truncates_floats_and_refuses_bad_salts():
    layer = L.Hashing(9, salt=1)
    np.testing.assert_array_equal(layer(np.array([1.5, -2.7])), layer(np.array(["1", "-2"])))
    with pytest.raises(ValueError, match="`salt` argument"):
        L.Hashing(3, salt="x")


def test_string_lookup_indices_special_tokens_and_modes():
    layer = L.StringLookup(vocabulary=["a", "b", "c", "d"])
    np.testing.assert_array_equal(layer([["a", "c", "d"], ["d", "z", "b"]]), [[1, 3, 4], [4, 0, 2]])
    assert layer.get_vocabulary() == ["[UNK]", "a", "b", "c", "d"] and layer.vocabulary_size() == 5
    masked = L.StringLookup(vocabulary=["a", "b"], mask_token="")
    np.testing.assert_array_equal(masked([["a", "", "z"]]), [[2, 0, 1]])
    multi = L.StringLookup(vocabulary=["a", "b"], mask_token="", output_mode="multi_hot")
    np.testing.assert_array_equal(multi([["a", "", "z"]]), [[1, 1, 0]])  # the mask token is dropped
    np.testing.assert_array_equal(L.StringLookup(vocabulary=["a", "b"], output_mode="count")([["a", "a", "q"]]),
                                  [[1, 2, 0]])
    np.testing.assert_array_equal(L.StringLookup(vocabulary=["a", "b"], output_mode="one_hot")(["b", "q"]),
                                  [[0, 0, 1], [1, 0, 0]])
    padded = L.StringLookup(vocabulary=["a"], output_mode="multi_hot", pad_to_max_tokens=True, max_tokens=4)
    assert padded(["a"]).shape == (4,)
    inverse = L.StringLookup(vocabulary=["a", "b", "c", "d"], invert=True)
    np.testing.assert_array_equal(inverse(np.array([[1, 3], [0, 9]])), [["a", "c"], ["[UNK]", "[UNK]"]])
    with pytest.raises(ValueError, match="repeated term"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="all inputs should be in vocabulary"):
        L.StringLookup(vocabulary=["a"], num_oov_indices=0)(["b"])


def test_lookup_adapt_orders_by_frequency_then_token_and_learns_idf():
    layer = L.StringLookup(max_tokens=4)
    layer.adapt(np.array(["c", "a", "b", "a", "c", "a", "d"]))
    assert layer.get_vocabulary() == ["[UNK]", "a", "c", "d"]  # ties (b, d) keep the larger token
    tf_idf = L.StringLookup(output_mode="tf_idf")
    documents = np.array([["x", "y", "x"], ["x", "z", "z"]])
    tf_idf.adapt(documents)
    assert tf_idf.get_vocabulary() == ["[UNK]", "x", "z", "y"]
    idf_x, idf_z, idf_y = (math.log(1 + 2 / (1 + n)) for n in (2, 1, 1))  # documents containing each
    expected = np.array([[2 * idf_x, 0, 0], [idf_x, 2 * idf_z, 0]])
    idf = [idf_x, idf_z, idf_y]
    out = tf_idf(np.array([["x", "x", "q"], ["z", "z", "x"]]))
    # float32 weights: 1e-6 relative is rounding.
    np.testing.assert_allclose(out[:, 1:], expected, rtol=1e-6)
    np.testing.assert_allclose(out[:, 0], [np.mean(idf), 0], rtol=1e-6)  # OOV tokens get the mean idf
    restored = L.StringLookup.from_config(tf_idf.get_config())
    np.testing.assert_allclose(restored(np.array([["x", "q"]])), tf_idf(np.array([["x", "q"]])), rtol=1e-6)


def test_integer_lookup_oov_buckets_mask_and_invert():
    layer = L.IntegerLookup(num_oov_indices=2, mask_token=0)
    layer.adapt(np.array([5, 5, 7, 9, 0]))
    assert layer.get_vocabulary() == [0, -1, -1, 5, 9, 7]
    np.testing.assert_array_equal(layer(np.array([5, 0, 12, 13])), [3, 0, 1, 2])  # floormod over 2 OOV indices
    inverse = L.IntegerLookup(vocabulary=[12, 36], invert=True)
    np.testing.assert_array_equal(inverse(np.array([0, 1, 2])), [-1, 12, 36])
    salted = L.IntegerLookup(vocabulary=[1], num_oov_indices=4, oov_method="farmhash", salt=5)
    assert set(salted(np.arange(100, 140)).tolist()) <= {0, 1, 2, 3}


def test_text_vectorization_adapt_and_output_modes():
    layer = L.TextVectorization()
    layer.adapt(["The cat sat.", "the DOG sat!", "a cat"])
    assert layer.get_vocabulary() == ["", "[UNK]", "the", "sat", "cat", "dog", "a"]
    np.testing.assert_array_equal(layer(["the cat ran", "dog"]), [[2, 4, 1], [5, 0, 0]])
    fixed = L.TextVectorization(output_sequence_length=4, ngrams=2, max_tokens=8)
    fixed.adapt(np.array([["The cat sat."], ["the DOG sat!"]]), batch_size=1)
    assert fixed.get_vocabulary()[:4] == ["", "[UNK]", "the", "sat"]
    out = fixed(np.array([["the cat sat on"], ["dog"]]))
    assert out.shape == (2, 4) and out[1, 1:].tolist() == [0, 0, 0]
    class Reviews(kgraph.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, index):
            return np.array([["The cat sat."], ["the DOG sat!"], ["a cat"]])[index:index + 2], np.zeros(2)

    from_dataset = L.TextVectorization()
    from_dataset.adapt(Reviews())  # rows 0-1, then 1-2
    assert from_dataset.get_vocabulary() == ["", "[UNK]", "the", "sat", "dog", "cat", "a"]
    chars = L.TextVectorization(split="character", standardize=None, vocabulary=["a", "b"])
    np.testing.assert_array_equal(chars(["abca"]), [[2, 3, 1, 2]])
    counts = L.TextVectorization(output_mode="count", vocabulary=["x", "y"])
    np.testing.assert_array_equal(counts(["x z x", "y"]), [[1, 2, 0], [0, 0, 1]])
    ascii_only = L.TextVectorization(vocabulary=["École", "straße", "a\u00a0b"])  # as TensorFlow's string ops
    np.testing.assert_array_equal(ascii_only(["ÉCOLE STRASSE Straße a\u00a0b"]), [[2, 1, 3, 4]])
    with pytest.raises(ValueError, match="`output_sequence_length` must not be set"):
        L.TextVectorization(output_mode="count", output_sequence_length=3)


def test_string_model_end_to_end_saves_loads_and_trains(tmp_path):
    vectorize = L.TextVectorization(output_sequence_length=5)
    vectorize.adapt(["good movie", "bad movie", "very good plot", "very bad acting"])
    text = kgraph.Input(shape=(), dtype="string", name="text")
    assert text.dtype == "str"
    tokens = vectorize(text)
    words = L.StringLookup(vocabulary=vectorize.get_vocabulary(), mask_token="", invert=True)(tokens)
    score = L.Dense(1, activation="sigmoid")(L.GlobalAveragePooling1D()(L.Embedding(10, 4)(tokens)))
    model = kgraph.Model(text, [score, words])
    model.compile(optimizer="adam", loss=["binary_crossentropy", None])
    x = np.array(["good movie", "bad acting", "very good", "bad plot"], dtype=object)
    model.fit(x, [np.array([1, 0, 1, 0], np.float32), None], epochs=1, batch_size=2, verbose=0)
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    before, after = model.predict(x, verbose=0), loaded.predict(x, verbose=0)
    np.testing.assert_array_equal(before[0], after[0])
    assert after[1][2].tolist() == ["very", "good", "", "", ""]


def shout(texts):
    """A custom standardization for the test below: a NumPy array of strings in, one out."""
    return np.char.upper(texts)


def test_callable_standardize_is_saved_by_name_and_restored_from_custom_objects(tmp_path):
    text = kgraph.Input(shape=(), dtype="string")
    model = kgraph.Model(text, L.TextVectorization(standardize=shout, vocabulary=["A", "B"])(text))
    model.save(tmp_path / "m.pkl")
    with pytest.raises(ValueError, match="custom_objects=\\{'shout': shout\\}"):
        kgraph.load_model(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl", custom_objects={"shout": shout})
    np.testing.assert_array_equal(loaded.predict(np.array(["a b c"]), verbose=0), [[2, 3, 1]])
    with pytest.raises(ValueError, match="has no name to restore it by"):
        L.TextVectorization(split=lambda s: s.split(",")).get_config()


def test_hashing_and_integer_lookup_models_save_and_load(tmp_path):
    ids = kgraph.Input((3,), dtype="int64")
    lookup = L.IntegerLookup(num_oov_indices=2, mask_token=0)
    lookup.adapt(np.array([4, 4, 8, 15, 16, 23, 42]))
    model = kgraph.Model(ids, [lookup(ids), L.Hashing(6, salt=[1, 2], output_mode="one_hot")(ids)])
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    x = np.array([[4, 0, 99], [42, 8, 7]])
    for ours, theirs in zip(model.predict(x, verbose=0), loaded.predict(x, verbose=0)):
        np.testing.assert_array_equal(ours, theirs)
    assert loaded.layers[1].get_vocabulary() == lookup.get_vocabulary()
