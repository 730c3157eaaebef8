"""``kgraph.dtype_policies.DTypePolicyMap``, the refused quantized policies and ``kgraph.mixed_precision`` against
Keras 3's."""
import numpy as np
import pytest

import kgraph
from kgraph import dtype_policies, mixed_precision

keras = pytest.importorskip("keras")


def _both(policy_map, default=None):
    return (dtype_policies.DTypePolicyMap(default, {k: dtype_policies.get(v) for k, v in policy_map.items()}),
            keras.dtype_policies.DTypePolicyMap(default, {k: keras.dtype_policies.get(v)
                                                          for k, v in policy_map.items()}))


@pytest.mark.parametrize("default", [None, "float16", "mixed_float16"])
def test_policy_map_lookups_as_keras(default):
    ours, theirs = _both({"model/dense": "float64", "model/conv.*": "float16", "head/.*/kernel": "float64"}, default)
    assert ours.name == theirs.name and ours.compute_dtype == theirs.compute_dtype
    assert ours.variable_dtype == theirs.variable_dtype and ours.quantization_mode == theirs.quantization_mode
    for path in ("model/dense", "model/conv2d", "model/conv", "model/dense_1", "head/x/kernel", "other"):
        assert ours[path].name == theirs[path].name, path
    assert len(ours) == len(theirs) == 3 and list(ours) == list(theirs) and ("model/dense" in ours)
    for policy_map in (ours, theirs):
        policy_map["model/conv2d"] = "float64"  # an exact key wins over a pattern
        assert policy_map["model/conv2d"].name == "float64"
        with pytest.raises(ValueError, match="already exist"):
            policy_map["model/conv2d"] = "float32"
        policy_map["model/co.*"] = "float16"
        with pytest.raises(ValueError, match="matches multiple"):
            policy_map["model/conv1d"]
        del policy_map["model/co.*"]
        assert len(policy_map) == 4


def test_policy_map_errors_as_keras():
    for module in (dtype_policies, keras.dtype_policies):
        with pytest.raises(ValueError, match="cannot be a `DTypePolicyMap`"):
            module.DTypePolicyMap(module.DTypePolicyMap())
        with pytest.raises(TypeError, match="must be a dict"):
            module.DTypePolicyMap(policy_map=[("a", "float32")])
        with pytest.raises(ValueError, match="Cannot interpret"):
            module.DTypePolicyMap()["a"] = 3


def test_policy_map_configs_cross_between_kgraph_and_keras():
    ours, theirs = _both({"dense": "float64", "conv.*": "float16"}, "float32")
    assert dtype_policies.serialize(ours) == keras.dtype_policies.serialize(theirs)
    from_ours = keras.dtype_policies.deserialize(dtype_policies.serialize(ours))
    from_theirs = dtype_policies.deserialize(keras.dtype_policies.serialize(theirs))
    assert isinstance(from_ours, keras.dtype_policies.DTypePolicyMap)
    assert isinstance(from_theirs, dtype_policies.DTypePolicyMap) and from_theirs == ours
    for path in ("dense", "conv2d", "x"):
        assert from_ours[path].name == from_theirs[path].name == ours[path].name
    # With no default policy Keras writes its policies without names; kgraph writes the names and reads both.
    named, _ = _both({"dense": "float64"})
    again = dtype_policies.get(dtype_policies.serialize(named))
    assert again == named and again["dense"].name == "float64"


def test_a_layer_given_a_policy_map_uses_its_default_policy():
    policy_map, _ = _both({"dense": "float64"}, "float16")
    layer = kgraph.layers.Dense(2, dtype=policy_map)
    assert layer.compute_dtype == "float16" and layer.variable_dtype == "float16"
    assert layer(np.ones((1, 3), "float16")).dtype == np.float16


@pytest.mark.parametrize("name, args", [("QuantizedDTypePolicy", ("int8",)), ("QuantizedFloat8DTypePolicy",
                                                                               ("float8",)),
                                        ("Int4DTypePolicy", ("int4",)), ("GPTQDTypePolicy", ("gptq",)),
                                        ("AWQDTypePolicy", ("awq",))])
def test_quantized_policies_are_refused_as_their_names_are(name, args):
    with pytest.raises(ValueError, match="quantized policies are not implemented"):
        getattr(dtype_policies, name)(*args)
    assert issubclass(getattr(dtype_policies, name), dtype_policies.DTypePolicy)
    assert issubclass(getattr(keras.dtype_policies, name), keras.dtype_policies.DTypePolicy)
    with pytest.raises(ValueError, match="quantized"):
        dtype_policies.get({"class_name": name, "config": {"mode": args[0], "source_name": "float32"}})
    with pytest.raises(ValueError, match="quantized"):
        dtype_policies.get("int8_from_float32")


def test_mixed_precision_names_as_keras():
    assert mixed_precision.global_policy().name == keras.mixed_precision.global_policy().name == "float32"
    try:
        mixed_precision.set_global_policy("mixed_float16")
        keras.mixed_precision.set_global_policy("mixed_float16")
        ours, theirs = kgraph.layers.Dense(2), keras.layers.Dense(2)
        assert mixed_precision.global_policy().name == keras.mixed_precision.global_policy().name
        assert (ours.compute_dtype, ours.variable_dtype) == (theirs.compute_dtype, theirs.variable_dtype)
        assert mixed_precision.dtype_policy() == mixed_precision.Policy("mixed_float16")
    finally:
        mixed_precision.set_global_policy(None)
        keras.mixed_precision.set_global_policy("float32")
    assert kgraph.layers.Dense(2).compute_dtype == "float32"
    optimizer = mixed_precision.LossScaleOptimizer(kgraph.optimizers.SGD())
    assert optimizer.get_config()["initial_scale"] == keras.mixed_precision.LossScaleOptimizer(
        keras.optimizers.SGD()).get_config()["initial_scale"]
