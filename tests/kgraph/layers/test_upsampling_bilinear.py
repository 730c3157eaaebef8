"""UpSampling2D(interpolation="bilinear"): Keras's values, and the exported Resize (linear, half-pixel)."""
import numpy as np
import pytest

import kgraph
from tests.export.parity import assert_parity


def test_bilinear_upsampling_matches_keras():
    keras = pytest.importorskip("keras")
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 2)).astype("float32")
    ours = kgraph.layers.UpSampling2D(size=(2, 3), interpolation="bilinear")(x)
    theirs = keras.layers.UpSampling2D(size=(2, 3), interpolation="bilinear")(x)
    np.testing.assert_allclose(ours, keras.ops.convert_to_numpy(theirs), rtol=1e-5, atol=1e-6)


def test_bilinear_upsampling_exports_with_parity():
    inputs = kgraph.Input((3, 4, 2))
    x = kgraph.layers.Conv2D(3, 2, padding="same")(inputs)
    assert_parity(kgraph.Model(inputs, kgraph.layers.UpSampling2D((2, 3), interpolation="bilinear")(x)))


def test_other_interpolations_are_refused_by_name():
    with pytest.raises(ValueError, match="'nearest' or 'bilinear'.*bicubic"):
        kgraph.layers.UpSampling2D(interpolation="bicubic")
