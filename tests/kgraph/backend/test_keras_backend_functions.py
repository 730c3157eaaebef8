"""``keras.backend``'s functions: Keras's type promotion (``result_type``), the dtype tests, auto-name uids, the
session reset, the image data format and the KerasTensor test."""
import itertools

import numpy as np
import pytest

import kgraph
from kgraph import backend, layers

keras = pytest.importorskip("keras")

DTYPES = ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "bfloat16", "float16",
          "float32", "float64", "complex64", "complex128", int, float, None]


def _outcome(fn, *args):
    try:
        return fn(*args)
    except ValueError:
        return "ValueError"


@pytest.mark.parametrize("floatx", ["float32", "float64", "float16"])
def test_result_type_agrees_with_keras_on_every_pair_and_triple(floatx):
    keras.config.set_floatx(floatx)
    backend.set_floatx(floatx)
    try:
        combos = [c for n in (0, 1, 2) for c in itertools.product(DTYPES, repeat=n)]
        combos += list(itertools.product(DTYPES[::3], repeat=3))
        differ = [(c, _outcome(keras.backend.result_type, *c), _outcome(backend.result_type, *c)) for c in combos
                  if _outcome(keras.backend.result_type, *c) != _outcome(backend.result_type, *c)]
        assert differ == []
    finally:
        keras.config.set_floatx("float32")
        backend.set_floatx("float32")


def test_result_type_examples_and_errors():
    assert backend.result_type("bfloat16", int) == "bfloat16"
    assert backend.result_type("int32", "float32") == "float32"
    assert backend.result_type("int8", "uint8") == "int16"
    assert backend.result_type(np.dtype("float16"), np.float32) == "float32"
    assert backend.result_type("float64") == "float32"  # Keras narrows 64-bit results outside TensorFlow
    with pytest.raises(ValueError, match="no implicit conversions from float8"):
        backend.result_type("float8_e4m3fn", "float32")
    with pytest.raises(ValueError, match="Invalid dtype"):
        backend.result_type("float33")


@pytest.mark.parametrize("dtype", DTYPES + ["float8_e5m2", np.float32, np.dtype("uint16"), bool, "string", str])
def test_float_and_int_tests_agree_with_keras(dtype):
    assert backend.is_float_dtype(dtype) == keras.backend.is_float_dtype(dtype)
    assert backend.is_int_dtype(dtype) == keras.backend.is_int_dtype(dtype)


def test_get_uid_counts_per_prefix_and_shares_the_layer_names():
    backend.clear_session()
    assert [backend.get_uid("block"), backend.get_uid("block"), backend.get_uid("other")] == [1, 2, 1]
    assert backend.get_uid() == 1 and backend.get_uid("") == 2
    assert layers.Dense(1).name == "dense"
    assert backend.get_uid("dense") == 2
    assert layers.Dense(1).name == "dense_2"  # as Keras names the Dense after get_uid("dense")
    backend.clear_session(free_memory=False)
    assert backend.get_uid("block") == 1 and layers.Dense(1).name == "dense"
    backend.clear_session()


def test_keras_get_uid_and_naming_behave_alike():
    keras.backend.clear_session()
    backend.clear_session()
    for module in (keras, kgraph):
        assert module.backend.get_uid("dense") == 1
        assert module.layers.Dense(1).name == "dense_1"
        module.backend.clear_session()


def test_engine_name_image_format_and_keras_tensors():
    assert backend.backend() == kgraph.config.backend() == "numpy"
    assert backend.image_data_format() == "channels_last"
    backend.set_image_data_format("channels_last")
    with pytest.raises(ValueError, match="channels-last"):
        backend.set_image_data_format("channels_first")
    x = kgraph.Input((3,))
    assert backend.is_keras_tensor(x) and backend.is_keras_tensor(layers.Dense(2)(x))
    assert not backend.is_keras_tensor(np.ones(3)) and not backend.is_keras_tensor(kgraph.Variable(np.ones(2)))
