"""Layer configs as Keras 3 writes them: the dtype policy dict, initializers with module and registered name,
VarianceScaling's axes, and ``quantization_config`` on the quantizable layers. Compared with Keras itself."""
import numpy as np
import pytest

import kgraph
from kgraph import layers

keras = pytest.importorskip("keras")

CASES = [
    ("Dense", lambda m: m.layers.Dense(4, activation="relu", kernel_initializer="he_normal")),
    ("Embedding", lambda m: m.layers.Embedding(10, 3, mask_zero=True)),
    ("EinsumDense", lambda m: m.layers.EinsumDense("ab,bc->ac", output_shape=4, bias_axes="c")),
    ("Conv2D", lambda m: m.layers.Conv2D(2, 3, kernel_initializer=m.initializers.GlorotNormal(seed=1))),
    ("LSTM", lambda m: m.layers.LSTM(3)),
    ("Dropout", lambda m: m.layers.Dropout(0.2)),
]


@pytest.mark.parametrize("name", [case[0] for case in CASES])
def test_layer_config_equals_keras(name):
    make = dict(CASES)[name]
    ours, theirs = make(kgraph).get_config(), make(keras).get_config()
    ours.pop("name"), theirs.pop("name")
    assert ours == theirs


def test_dtype_policies_and_the_global_policy():
    policy = kgraph.dtype_policies.DTypePolicy("float64")
    assert (policy.name, policy.compute_dtype, policy.variable_dtype) == ("float64", "float64", "float64")
    dense = layers.Dense(2, dtype=policy)
    assert dense.dtype == "float64" and dense.dtype_policy == policy
    assert layers.Dense(2, dtype=kgraph.dtype_policies.serialize("float64")).dtype == "float64"
    kgraph.config.set_dtype_policy("float64")
    try:
        assert layers.Dense(2).dtype == "float64"
        assert kgraph.config.dtype_policy().name == "float64"
    finally:
        kgraph.config.set_dtype_policy(None)
    assert layers.Dense(2).dtype == "float32"
    for refused in ("mixed_bfloat16", "int8_from_float32"):
        with pytest.raises(ValueError, match=f"dtype policy '{refused}'"):
            layers.Dense(2, dtype=refused)
    mixed = kgraph.dtype_policies.DTypePolicy("mixed_float16")
    assert (mixed.compute_dtype, mixed.variable_dtype) == ("float16", "float32")


def test_variance_scaling_axes_set_the_fans_as_keras_counts_them():
    init = kgraph.initializers.VarianceScaling(scale=1.0, mode="fan_in", distribution="untruncated_normal",
                                               seed=3, input_axes=[0, 1], output_axes=[2])
    sample = init((40, 50, 2))
    assert abs(sample.std() - np.sqrt(1.0 / 2000)) < 0.1 * np.sqrt(1.0 / 2000)
    assert kgraph.initializers.get(kgraph.initializers.serialize(init)).get_config() == init.get_config()
