"""Keras 3.15's public names of ``keras.activations``, ``initializers``, ``regularizers``, ``random``, ``backend``,
``tree`` and ``models`` against kgraph's: every name is provided or listed with the reason it is not, and Keras's
second names for one object are one object in kgraph too.

The name lists are ``dir()`` of Keras 3.15.1, pasted here so the check runs without Keras installed.
"""
import numpy as np
import pytest

import kgraph

KERAS_NAMES = {
    "activations": (
        "celu", "deserialize", "elu", "exponential", "gelu", "get", "glu", "hard_shrink", "hard_sigmoid", "hard_silu",
        "hard_swish", "hard_tanh", "leaky_relu", "linear", "log_sigmoid", "log_softmax", "mish", "relu", "relu6",
        "selu", "serialize", "sigmoid", "silu", "soft_shrink", "softmax", "softplus", "softsign", "sparse_plus",
        "sparse_sigmoid", "sparsemax", "squareplus", "swish", "tanh", "tanh_shrink", "threshold",
    ),
    "initializers": (
        "Constant", "GlorotNormal", "GlorotUniform", "HeNormal", "HeUniform", "Identity", "IdentityInitializer",
        "Initializer", "LecunNormal", "LecunUniform", "Ones", "Orthogonal", "OrthogonalInitializer", "RandomNormal",
        "RandomUniform", "STFT", "STFTInitializer", "TruncatedNormal", "VarianceScaling", "Zeros", "constant",
        "deserialize", "get", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "identity",
        "lecun_normal", "lecun_uniform", "ones", "orthogonal", "random_normal", "random_uniform", "serialize", "stft",
        "truncated_normal", "variance_scaling", "zeros",
    ),
    "regularizers": (
        "L1", "L1L2", "L2", "OrthogonalRegularizer", "Regularizer", "deserialize", "get", "l1", "l1_l2", "l2",
        "orthogonal_regularizer", "serialize",
    ),
    "random": (
        "SeedGenerator", "beta", "binomial", "categorical", "dropout", "gamma", "normal", "randint", "shuffle",
        "truncated_normal", "uniform",
    ),
    "backend": (
        "backend", "clear_session", "epsilon", "floatx", "get_uid", "image_data_format", "is_float_dtype",
        "is_int_dtype", "is_keras_tensor", "result_type", "set_epsilon", "set_floatx", "set_image_data_format",
        "standardize_dtype",
    ),
    "tree": (
        "MAP_TO_NONE", "assert_same_paths", "assert_same_structure", "flatten", "flatten_with_path", "is_nested",
        "lists_to_tuples", "map_shape_structure", "map_structure", "map_structure_up_to", "pack_sequence_as",
        "traverse",
    ),
    "models": ("Model", "Sequential", "clone_model", "load_model", "model_from_json", "save_model"),
}

# "namespace.name": why kgraph does not provide it. Every name of these namespaces is provided today.
NOT_PROVIDED = {}

# Names that are one object in Keras 3.15.1 (``keras.X.a is keras.X.b``), by namespace: the first name of each
# group and its second names.
SAME_OBJECT = {
    "activations": [("silu", "swish"), ("hard_silu", "hard_swish")],
    "initializers": [
        ("Constant", "constant"), ("GlorotNormal", "glorot_normal"), ("GlorotUniform", "glorot_uniform"),
        ("HeNormal", "he_normal"), ("HeUniform", "he_uniform"), ("Identity", "IdentityInitializer", "identity"),
        ("LecunNormal", "lecun_normal"), ("LecunUniform", "lecun_uniform"), ("Ones", "ones"),
        ("Orthogonal", "OrthogonalInitializer", "orthogonal"), ("RandomNormal", "random_normal"),
        ("RandomUniform", "random_uniform"), ("STFT", "STFTInitializer", "stft"),
        ("TruncatedNormal", "truncated_normal"), ("VarianceScaling", "variance_scaling"), ("Zeros", "zeros"),
    ],
    "regularizers": [("L1", "l1"), ("L2", "l2"), ("L1L2", "l1_l2"), ("OrthogonalRegularizer", "orthogonal_regularizer")],
}


@pytest.mark.parametrize("namespace", sorted(KERAS_NAMES))
def test_every_keras_name_is_provided_or_listed_with_a_reason(namespace):
    module = getattr(kgraph, namespace)
    missing = sorted(n for n in KERAS_NAMES[namespace] if not hasattr(module, n)
                     and f"{namespace}.{n}" not in NOT_PROVIDED)
    assert missing == [], f"keras.{namespace} names kgraph.{namespace} neither has nor lists: {missing}"
    assert all(callable(getattr(module, n)) for n in KERAS_NAMES[namespace] if hasattr(module, n))


def test_listed_names_are_really_missing_so_the_list_stays_current():
    for key, reason in NOT_PROVIDED.items():
        namespace, name = key.split(".")
        assert name in KERAS_NAMES[namespace] and reason.strip()
        assert not hasattr(getattr(kgraph, namespace), name), f"{key} is listed as not provided, yet kgraph has it"


@pytest.mark.parametrize("namespace", sorted(SAME_OBJECT))
def test_second_names_are_the_same_objects(namespace):
    module = getattr(kgraph, namespace)
    for first, *others in SAME_OBJECT[namespace]:
        assert all(getattr(module, other) is getattr(module, first) for other in others), (first, others)


def test_same_object_groups_are_kerass():
    keras = pytest.importorskip("keras")
    for namespace, groups in SAME_OBJECT.items():
        module = getattr(keras, namespace)
        grouped = {name for group in groups for name in group}
        for first, *others in groups:
            assert all(getattr(module, other) is getattr(module, first) for other in others)
        names = KERAS_NAMES[namespace]
        for i, a in enumerate(names):  # no other pair of Keras names is one object
            for b in names[i + 1:]:
                if getattr(module, a) is getattr(module, b):
                    assert {a, b} <= grouped, (namespace, a, b)


def test_pasted_lists_are_kerass():
    keras = pytest.importorskip("keras")
    if keras.version() != "3.15.1":
        pytest.skip(f"the lists are Keras 3.15.1's; installed: {keras.version()}")
    for namespace, names in KERAS_NAMES.items():
        assert tuple(n for n in dir(getattr(keras, namespace)) if not n.startswith("_")) == names, namespace


def test_models_save_model_writes_both_formats(tmp_path):
    assert kgraph.models.save_model is kgraph.saving.save_model
    assert kgraph.models.load_model is kgraph.saving.load_model
    model = kgraph.Sequential([kgraph.Input((3,)), kgraph.layers.Dense(2)])
    x = np.ones((1, 3), "float32")
    for name in ("m.keras", "m.pkl"):
        kgraph.models.save_model(model, tmp_path / name)
        np.testing.assert_array_equal(kgraph.models.load_model(tmp_path / name).predict(x, verbose=0),
                                      model.predict(x, verbose=0))
    with pytest.raises(ValueError, match="Invalid filepath extension"):
        kgraph.models.save_model(model, tmp_path / "m.txt")
