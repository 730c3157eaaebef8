"""``keras.saving``: kgraph's restricted pickle format, Keras's ``.keras`` files, serialization, registration."""
from kgraph.saving.pickle_format import (
                                         FORMAT,
                                         FORMAT_VERSION,
                                         RefusedContent,
                                         RestrictedUnpickler,
                                         atomic_write,
                                         load_model,
                                         load_weights,
                                         model_payload,
                                         safe_loads,
                                         save_model,
                                         save_weights,
)
from kgraph.saving.registration import get_registered_name, get_registered_object, register_keras_serializable

__all__ = ["FORMAT", "FORMAT_VERSION", "RefusedContent", "RestrictedUnpickler", "atomic_write",
           "get_registered_name", "get_registered_object", "load_model", "load_weights", "model_payload",
           "register_keras_serializable", "safe_loads", "save_model", "save_weights"]
