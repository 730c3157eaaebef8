"""RandAugment and AugMix: augmentation policies made of other augmentation layers."""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")


def _images(shape=(3, 8, 8, 3), seed=0):
    return np.random.default_rng(seed).uniform(0, 255, size=shape).astype("float32")


@pytest.mark.parametrize("make", [lambda **k: L.RandAugment(seed=4, **k), lambda **k: L.AugMix(seed=4, **k)])
def test_policies_are_identities_at_inference_and_seeded_in_training(make):
    x = _images()
    layer = make()
    np.testing.assert_array_equal(layer(x, training=False), x)
    assert not np.array_equal(layer(x), x)  # training defaults to True, as in Keras
    once, again = make()(x, training=True), make()(x, training=True)
    np.testing.assert_array_equal(once, again)
    assert once.shape == x.shape and once.dtype == np.float32 and not np.allclose(once, x)
    # Channels first draws the same transforms and gives the same images, transposed.
    first = make(data_format="channels_first")(np.moveaxis(x, -1, 1), training=True)
    np.testing.assert_allclose(np.moveaxis(first, 1, -1), once, atol=1e-3)
    # One image (rank 3) is a batch of one.
    assert make()(x[0], training=True).shape == x[0].shape


def test_rand_augment_applies_num_ops_of_its_candidates_in_sequence():
    x = _images()
    layer = L.RandAugment(num_ops=3, seed=9)
    drawn = np.random.default_rng(9).integers(0, 11, size=3)
    names = [list(L.RandAugment._OPS)[i] for i in drawn]
    replay = L.RandAugment(num_ops=3, seed=9)
    replay._rng.integers(0, 11, size=3)  # the draw of the op indices comes first
    np.testing.assert_allclose(layer(x, training=True), replay.apply_ops(x, names), atol=1e-4)
    np.testing.assert_array_equal(L.RandAugment(num_ops=0, seed=1)(x, training=True), x)


@needs_keras
def test_rand_augment_wires_its_deterministic_augmentations_as_keras_does():
    import keras
    x = _images((2, 8, 8, 3))
    ours = L.RandAugment(value_range=(0, 255)).apply_ops(x, ["equalization", "auto_contrast"])
    # Equalization first: its 8-bit binning would amplify the float rounding of AutoContrast (3e-5) into a level.
    theirs = keras.layers.AutoContrast(value_range=(0, 255))(keras.layers.Equalization(value_range=(0, 255))(
        x, training=True))
    np.testing.assert_allclose(ours, keras.ops.convert_to_numpy(theirs), atol=1e-3)


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("RandAugment", {"seed": 1}), ("RandAugment", {"num_ops": 3, "factor": (0.1, 0.4), "value_range": (0, 1)}),
    ("AugMix", {"seed": 2}), ("AugMix", {"all_ops": False, "num_chains": 2, "chain_depth": 1, "alpha": 0.5}),
])
def test_configs_equal_keras(name, kwargs):
    import keras
    ignore = ("name", "dtype", "trainable")
    theirs = getattr(keras.layers, name)(**kwargs).get_config()
    ours = getattr(L, name)(**kwargs).get_config()
    assert {k: v for k, v in ours.items() if k not in ignore} == {k: v for k, v in theirs.items() if k not in ignore}


def test_aug_mix_with_empty_chains_returns_the_clipped_input_and_mixes_convexly():
    x = _images() * 1.2 - 20  # values outside (0, 255) get clipped
    np.testing.assert_allclose(L.AugMix(chain_depth=0, seed=1)(x, training=True), np.clip(x, 0, 255), rtol=1e-6)
    y = L.AugMix(value_range=(0, 255), seed=5)(_images(), training=True)
    assert y.min() >= 0 and y.max() <= 255
    assert set(L.AugMix(all_ops=False)._ops) == {"random_shear", "random_translation", "random_rotation",
                                                 "random_posterization", "solarization", "auto_contrast",
                                                 "equalization"}
    assert len(L.AugMix()._ops) == 11


@pytest.mark.parametrize("make, message", [
    (lambda: L.RandAugment(num_ops=-1), "num_ops"), (lambda: L.RandAugment(factor=1.5), "factor"),
    (lambda: L.RandAugment(interpolation="bicubic"), "interpolation"), (lambda: L.AugMix(alpha=0.0), "alpha"),
    (lambda: L.AugMix(num_chains=0), "num_chains"), (lambda: L.AugMix(chain_depth=1.5), "chain_depth"),
])
def test_bad_arguments_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_gradients_flow_through_the_differentiable_augmentations():
    from tests.gradcheck import check_gradients
    x = np.random.default_rng(2).uniform(0.2, 0.8, size=(2, 5, 5, 3))

    def policy(xs):
        layer = L.RandAugment(value_range=(0, 1), factor=0.3, seed=3, dtype="float64")
        return layer.apply_ops(xs[0], ["random_shear", "random_contrast", "random_rotation"])

    check_gradients(policy, [x])
    check_gradients(lambda xs: L.AugMix(value_range=(-5, 5), all_ops=False, chain_depth=0, seed=3,
                                        dtype="float64")(xs[0], training=True), [x])


def test_policies_train_in_a_model_and_round_trip(tmp_path):
    inp = kgraph.Input((8, 8, 3))
    h = L.AugMix(seed=1, chain_depth=1)(L.RandAugment(seed=2, num_ops=1)(inp))
    model = kgraph.Model(inp, L.Dense(2)(L.GlobalAveragePooling2D()(h)))
    model.compile(optimizer="sgd", loss="mse")
    x, y = _images((6, 8, 8, 3)) / 255, np.zeros((6, 2), "float32")
    model.fit(x, y, epochs=1, batch_size=3, verbose=0)
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    assert [layer.get_config() for layer in loaded.layers[1:3]] == [layer.get_config() for layer in model.layers[1:3]]
