"""MixUp and CutMix: mixing invariants of images and labels, Keras parity on replayed draws, forms, configs.

With one-hot labels ``eye(batch)``, the mixed label of image ``i`` is ``w e_i + (1 - w) e_j``: it tells which
partner ``j`` the layer drew and with what weight, so the images can be checked against it.
"""
import importlib.util

import numpy as np
import pytest

import kgraph
from kgraph import layers as L
from kgraph.layers.preprocessing.augmentation.geometric import box_mask

needs_keras = pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="keras is not installed")


def _batch(batch=4, shape=(6, 8, 3), seed=0):
    x = np.random.default_rng(seed).uniform(0, 255, size=(batch,) + shape).astype(np.float32)
    return x, np.eye(batch, dtype=np.float32)


def _partners(labels):
    """``(own weight, partner)`` of each mixed one-hot label (an image drawn with itself is its own partner)."""
    own = np.diag(labels).copy()
    others = labels - np.diag(own)
    partner = np.where(others.max(axis=1) > 0, others.argmax(axis=1), np.arange(len(labels)))
    own[partner == np.arange(len(labels))] = 1.0
    return own, partner


def test_mixup_blends_images_and_labels_with_the_same_weight():
    x, y = _batch()
    mixed = 0
    for seed in range(4):
        out = L.MixUp(alpha=1.0, seed=seed)({"images": x, "labels": y}, training=True)
        own, partner = _partners(out["labels"])
        np.testing.assert_allclose(out["labels"].sum(axis=1), 1.0, rtol=1e-6)
        expected = own[:, None, None, None] * x + (1 - own[:, None, None, None]) * x[partner]
        # float32 blends of values up to 255.
        np.testing.assert_allclose(out["images"], expected, atol=1e-3)
        mixed += int(np.sum((partner != np.arange(4)) & (own > 0.05) & (own < 0.95)))
        np.testing.assert_array_equal(L.MixUp(alpha=1.0, seed=seed)(x, training=True), out["images"])
    assert mixed >= 3


def test_mixup_weights_follow_beta_alpha():
    weight, order = L.MixUp(alpha=0.2, seed=0).sample_mix(4000)
    assert sorted(order) == list(range(4000))
    # Beta(0.2, 0.2) has mean 1/2 and variance 1 / (4 (2 alpha + 1)) = 0.178.
    assert abs(weight.mean() - 0.5) < 0.03 and abs(weight.var() - 0.25 / 1.4) < 0.02


def test_cutmix_pastes_a_box_and_mixes_labels_by_its_area():
    x, y = _batch(seed=1)
    pasted_any = False
    for seed in range(4):
        out = L.CutMix(seed=seed)({"images": x, "labels": y}, training=True)
        box, order = L.CutMix(seed=seed).sample_cut(4, 6, 8)
        mask = np.broadcast_to(box_mask(box, 6, 8), x.shape)
        np.testing.assert_array_equal(out["images"][mask], x[order][mask])
        np.testing.assert_array_equal(out["images"][~mask], x[~mask])
        own, partner = _partners(out["labels"])
        moved = order != np.arange(4)
        np.testing.assert_array_equal(partner[moved], order[moved])
        x0, x1, y0, y1 = box
        area = (x1 - x0) * (y1 - y0) / 48
        np.testing.assert_allclose(1 - own[moved], area[moved], rtol=1e-5, atol=1e-6)
        # The pasted pixels cover the box's area up to one pixel row and column of rounding.
        pixels = mask[..., 0].sum(axis=(1, 2)) / 48
        assert (np.abs(pixels - area) <= ((x1 - x0) + (y1 - y0) + 1) / 48).all()
        pasted_any |= bool((mask[moved].any()))
    assert pasted_any


def test_cutmix_pasted_pixels_form_one_rectangle_of_the_partner():
    x, y = _batch(batch=6, seed=2)
    out = L.CutMix(seed=7)({"images": x, "labels": np.eye(6, dtype=np.float32)}, training=True)
    _, partner = _partners(out["labels"])
    for i in range(6):
        changed = np.any(out["images"][i] != x[i], axis=-1)
        if changed.any():
            rows, cols = np.nonzero(changed)
            assert changed[rows.min():rows.max() + 1, cols.min():cols.max() + 1].all()
            np.testing.assert_array_equal(out["images"][i][changed], x[partner[i]][changed])


@pytest.mark.parametrize("make", [lambda: L.MixUp(alpha=0.5, seed=3), lambda: L.CutMix(seed=3)])
def test_identity_at_inference_and_for_single_images_channels_first_follows(make):
    x, y = _batch()
    np.testing.assert_array_equal(make()(x, training=False), x)
    out = make()({"images": x, "labels": y}, training=False)
    np.testing.assert_array_equal(out["images"], x)
    np.testing.assert_array_equal(out["labels"], y)
    np.testing.assert_allclose(make()(x[0], training=True), x[0], atol=1e-4)
    trained = make()(x, training=True)
    assert not np.allclose(trained, x)
    config = make().get_config() | {"data_format": "channels_first"}
    first = type(make()).from_config(config)(np.moveaxis(x, -1, 1), training=True)
    np.testing.assert_allclose(np.moveaxis(first, 1, -1), trained, atol=1e-4)


def test_dicts_build_symbolically_and_bad_arguments_raise():
    inputs = {"images": kgraph.Input((6, 6, 3)), "labels": kgraph.Input((4,))}
    out = L.CutMix()(inputs)
    assert tuple(out["images"].shape) == (None, 6, 6, 3) and tuple(out["labels"].shape) == (None, 4)
    with pytest.raises(ValueError, match="alpha"):
        L.MixUp(alpha=0.0)
    with pytest.raises(ValueError, match="factor"):
        L.CutMix(factor=1.5)
    with pytest.raises(ValueError, match="segmentation_masks"):
        L.MixUp()({"images": _batch()[0], "segmentation_masks": _batch()[0]}, training=True)
    assert L.CutMix(0.4).factor == (0, 0.4) and L.CutMix((0.6, 0.2)).factor == (0.2, 0.6)


@pytest.mark.parametrize("make", [lambda: L.MixUp(alpha=0.7, seed=5, dtype="float64"),
                                  lambda: L.CutMix(seed=5, dtype="float64")])
def test_gradients_match_finite_differences(make):
    from tests.gradcheck import check_gradients
    rng = np.random.default_rng(1)
    x, labels = rng.normal(size=(3, 4, 4, 2)), rng.normal(size=(3, 2))
    # A fresh layer per call: the same seed draws the same mixing every time.
    check_gradients(lambda xs: make()({"images": xs[0], "labels": xs[1]}, training=True)["images"], [x, labels])
    check_gradients(lambda xs: make()({"images": xs[0], "labels": xs[1]}, training=True)["labels"], [x, labels])


def test_model_saves_loads_and_trains(tmp_path):
    inputs = kgraph.Input((6, 6, 2))
    h = L.CutMix(seed=2)(L.MixUp(seed=1)(inputs))
    model = kgraph.Model(inputs, L.Dense(1)(L.Flatten()(L.Conv2D(2, 3)(h))))
    model.compile(optimizer="adam", loss="mse")
    x = np.random.default_rng(0).normal(size=(8, 6, 6, 2)).astype(np.float32)
    assert np.isfinite(model.fit(x, x.mean(axis=(1, 2, 3)), epochs=1, batch_size=4, verbose=0).history["loss"]).all()
    model.save(tmp_path / "m.pkl")
    loaded = kgraph.load_model(tmp_path / "m.pkl")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    for ours, theirs in zip(model.layers[1:3], loaded.layers[1:3]):
        assert ours.get_config() == theirs.get_config()


def _public(config):
    return {k: v for k, v in config.items() if k not in ("name", "dtype", "trainable")}


@needs_keras
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_mixup_matches_keras_on_the_same_draws(data_format):
    import keras
    tensor = keras.ops.convert_to_tensor
    x, y = _batch()
    x = x if data_format == "channels_last" else np.moveaxis(x, -1, 1)
    out = L.MixUp(alpha=1.0, seed=3, data_format=data_format)({"images": x, "labels": y}, training=True)
    weight, order = L.MixUp(alpha=1.0, seed=3).sample_mix(4)
    theirs = keras.layers.MixUp(alpha=1.0, data_format=data_format)
    transformation = {"mix_weight": tensor(weight.astype(np.float32)), "permutation_order": tensor(order)}
    np.testing.assert_allclose(out["images"], keras.ops.convert_to_numpy(theirs.transform_images(
        tensor(x), transformation)), atol=1e-3)
    np.testing.assert_allclose(out["labels"], keras.ops.convert_to_numpy(theirs.transform_labels(
        tensor(y), transformation)), atol=1e-6)
    assert _public(L.MixUp(alpha=1.0, data_format=data_format).get_config()) == _public(theirs.get_config())


@needs_keras
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_cutmix_matches_keras_on_the_same_draws(data_format):
    import keras
    tensor = keras.ops.convert_to_tensor
    x, y = _batch()
    x = x if data_format == "channels_last" else np.moveaxis(x, -1, 1)
    out = L.CutMix(seed=3, data_format=data_format)({"images": x, "labels": y}, training=True)
    box, order = L.CutMix(seed=3).sample_cut(4, 6, 8)
    theirs = keras.layers.CutMix(data_format=data_format)
    masks, weight = theirs._generate_batch_mask(x.shape, tuple(tensor(c.astype(np.float32)) for c in box))
    transformation = {"permutation_order": tensor(order), "batch_masks": masks, "mix_weight": weight}
    np.testing.assert_array_equal(out["images"], keras.ops.convert_to_numpy(theirs.transform_images(
        tensor(x), transformation)))
    # Keras computes the box area in float32.
    np.testing.assert_allclose(out["labels"], keras.ops.convert_to_numpy(theirs.transform_labels(
        tensor(y), transformation)), atol=1e-6)


@needs_keras
@pytest.mark.parametrize("name, kwargs", [
    ("MixUp", {}), ("MixUp", {"alpha": 0.7, "seed": 4, "data_format": "channels_first"}),
    ("CutMix", {}), ("CutMix", {"factor": 0.3, "seed": 2}), ("CutMix", {"factor": (0.8, 0.2)}),
])
def test_configs_equal_keras(name, kwargs):
    import keras
    assert _public(getattr(L, name)(**kwargs).get_config()) == _public(getattr(keras.layers, name)(**kwargs)
                                                                        .get_config())


@needs_keras
def test_single_images_and_keras_dict_calls_agree():
    import keras
    x, y = _batch()
    for name in ("MixUp", "CutMix"):
        expected = getattr(keras.layers, name)()({"images": x[0], "labels": y[0]}, training=True)
        ours = getattr(L, name)()({"images": x[0], "labels": y[0]}, training=True)
        np.testing.assert_allclose(ours["images"], keras.ops.convert_to_numpy(expected["images"]), atol=1e-3)
        np.testing.assert_allclose(ours["labels"], keras.ops.convert_to_numpy(expected["labels"]), atol=1e-6)
