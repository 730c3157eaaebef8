"""``keras.initializers``' every name: the snake_case and older aliases are the same classes as in Keras, ``get`` and
``deserialize`` take what Keras's take, and the STFT initializer gives Keras's kernels and saves both ways."""
import numpy as np
import pytest

import kgraph
from kgraph import initializers, layers

keras = pytest.importorskip("keras")

PUBLIC = sorted(n for n in dir(keras.initializers) if not n.startswith("_"))
CLASSES = [n for n in PUBLIC if isinstance(getattr(keras.initializers, n), type)]
# Keras's string identifiers: class names, their snake_case, and the older names it keeps.
IDENTIFIERS = CLASSES + ["one", "zero", "normal", "uniform", "stft", "identity", "orthogonal", "glorot_uniform"]


def test_aliases_are_the_classes_keras_aliases():
    for name in CLASSES:
        theirs, ours = getattr(keras.initializers, name), getattr(initializers, name)
        assert ours.__name__ == theirs.__name__, name
        for other in CLASSES:  # the same alias structure: names that are one class in Keras are one in kgraph
            assert (ours is getattr(initializers, other)) == (theirs is getattr(keras.initializers, other)), other
    assert initializers.IdentityInitializer is initializers.Identity is initializers.identity
    assert initializers.OrthogonalInitializer is initializers.Orthogonal is initializers.orthogonal
    assert initializers.STFTInitializer is initializers.STFT is initializers.stft


def _same_config(ours, theirs):
    """Keras's config, where kgraph's may hold more: Keras's Identity saves no ``gain`` (kgraph's does; Keras reads
    it back)."""
    mine, keras_config = ours.get_config(), theirs.get_config()
    assert {k: v for k, v in mine.items() if k in keras_config} == keras_config
    assert set(mine) - set(keras_config) <= ({"gain"} if type(ours) is initializers.Identity else set())


# "Constant" by name is left out: Keras's get("Constant") fails (its from_config needs a value).
@pytest.mark.parametrize("name", [n for n in IDENTIFIERS if n not in ("Initializer", "Constant", "constant")])
def test_get_by_name_gives_kerass_class_and_config(name):
    theirs, ours = keras.initializers.get(name), initializers.get(name)
    assert type(ours).__name__ == type(theirs).__name__
    _same_config(ours, theirs)


@pytest.mark.parametrize("name", [n for n in CLASSES if n not in ("Initializer",)])
def test_deserialize_reads_kerass_serialized_form_and_keras_reads_ours(name):
    theirs = getattr(keras.initializers, name)()
    ours = initializers.deserialize(keras.initializers.serialize(theirs))
    assert type(ours).__name__ == type(theirs).__name__
    _same_config(ours, theirs)
    back = keras.initializers.deserialize(initializers.serialize(ours))
    assert type(back) is type(theirs) and back.get_config() == theirs.get_config()


def test_get_takes_classes_arrays_and_none_and_refuses_the_rest():
    assert isinstance(initializers.get(initializers.HeNormal), initializers.HeNormal)
    assert initializers.get(None) is None
    values = np.arange(6, dtype="float64").reshape(2, 3)
    fn = initializers.get(values)
    out = fn((2, 3), dtype="float32")
    assert out.dtype == np.float32 and np.array_equal(out, values)
    with pytest.raises(ValueError, match="Expected `shape` to be"):
        fn((3, 2))
    with pytest.raises(ValueError, match="Unknown initializer: 'nope'"):
        initializers.get("nope")
    with pytest.raises(ValueError, match="Could not interpret"):
        initializers.get(int)
    with pytest.raises(ValueError, match="Unknown initializer config"):
        initializers.deserialize({"class_name": "Nope", "config": {}})

    class Halves(initializers.Initializer):
        def __call__(self, shape, dtype=None):
            return np.full(shape, 0.5, dtype=dtype)

    restored = initializers.deserialize({"class_name": "Halves", "config": {}}, custom_objects={"Halves": Halves})
    assert isinstance(restored, Halves)


def test_identity_and_constant_values_match_keras():
    for ours, theirs in [(initializers.IdentityInitializer(gain=2.0), keras.initializers.IdentityInitializer(2.0)),
                         (initializers.constant(3.0), keras.initializers.constant(3.0)),
                         (initializers.ones(), keras.initializers.ones()), (initializers.zeros(), keras.initializers.zeros())]:
        np.testing.assert_array_equal(ours((3, 4)), keras.ops.convert_to_numpy(theirs((3, 4))))
    q = initializers.OrthogonalInitializer(seed=3)((6, 4))
    np.testing.assert_allclose(q.T @ q, np.eye(4), atol=1e-5)


@pytest.mark.parametrize("window", ["hann", "hamming", None, "array"])
@pytest.mark.parametrize("side", ["real", "imag"])
@pytest.mark.parametrize("scaling", ["density", "spectrum", None])
def test_stft_kernels_match_keras(window, side, scaling):
    window = np.hanning(16).astype("float32") if window == "array" else window
    for periodic in (False, True):
        ours = initializers.STFT(side, window, scaling, periodic)
        theirs = keras.initializers.STFT(side, window, scaling, periodic)
        got = ours((16, 1, 9))
        assert got.dtype == np.float32 and got.shape == (16, 1, 9)
        np.testing.assert_allclose(got, keras.ops.convert_to_numpy(theirs((16, 1, 9))), atol=1e-6)
    if not isinstance(window, np.ndarray):
        assert ours.get_config() == theirs.get_config()


def test_stft_refuses_bad_arguments():
    with pytest.raises(ValueError, match="side should be 'real' or 'imag'"):
        initializers.STFT(side="both")
    with pytest.raises(ValueError, match="Scaling is invalid"):
        initializers.STFT(scaling="l2")
    with pytest.raises(ValueError, match="Unknown window"):
        initializers.STFT(window="no_such_window")
    with pytest.raises(ValueError, match="needs a shape"):
        initializers.STFT()((4, 4))


def test_stft_initialized_conv_saves_and_loads_both_ways(tmp_path):
    model = kgraph.Sequential([kgraph.Input((32, 1)), layers.Conv1D(
        9, 16, strides=8, use_bias=False, kernel_initializer=initializers.STFTInitializer("imag", "hamming"))])
    x = np.random.default_rng(0).normal(size=(2, 32, 1)).astype("float32")
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(model.get_weights()[0], keras.ops.convert_to_numpy(
        keras.initializers.STFT("imag", "hamming")((16, 1, 9))), atol=1e-6)
    model.save(tmp_path / "ours.keras")
    theirs = keras.saving.load_model(tmp_path / "ours.keras")
    assert type(theirs.layers[0].kernel_initializer) is keras.initializers.STFT
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)), expected, atol=1e-5)
    theirs.save(tmp_path / "theirs.keras")
    again = kgraph.load_model(tmp_path / "theirs.keras")
    assert isinstance(again.layers[0].kernel_initializer, initializers.STFT)
    assert again.layers[0].kernel_initializer.get_config() == theirs.layers[0].kernel_initializer.get_config()
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, atol=1e-5)
    again.save(tmp_path / "again.pkl")
    np.testing.assert_allclose(kgraph.load_model(tmp_path / "again.pkl").predict(x, verbose=0), expected, atol=1e-5)
