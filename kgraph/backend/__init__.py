"""The eager NumPy engine: numeric settings, Variable, the gradient tape, TapeArray and NumPy dispatch.

The package's names are ``keras.backend``'s.
"""
from kgraph.backend.dtypes import is_float_dtype, is_int_dtype, result_type
from kgraph.backend.session import (
    backend,
    clear_session,
    get_uid,
    image_data_format,
    is_keras_tensor,
    set_image_data_format,
)
from kgraph.backend.settings import epsilon, floatx, set_epsilon, set_floatx, standardize_dtype

__all__ = ["backend", "clear_session", "epsilon", "floatx", "get_uid", "image_data_format", "is_float_dtype",
           "is_int_dtype", "is_keras_tensor", "result_type", "set_epsilon", "set_floatx", "set_image_data_format",
           "standardize_dtype"]
