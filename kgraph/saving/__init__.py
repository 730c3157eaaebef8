"""``keras.saving``: kgraph's restricted pickle format, Keras's ``.keras`` files, serialization, registration."""
from kgraph.saving.pickle_format import (
                                         FORMAT,
                                         FORMAT_VERSION,
                                         RefusedContent,
                                         RestrictedUnpickler,
                                         atomic_write,
                                         model_payload,
                                         safe_loads,
)
from kgraph.saving.registration import (
                                        CustomObjectScope,
                                        custom_object_scope,
                                        get_custom_objects,
                                        get_registered_name,
                                        get_registered_object,
                                        register_keras_serializable,
)
from kgraph.saving.saving_api import load_model, load_weights, save_model, save_weights
from kgraph.saving.serialization_lib import deserialize_keras_object, serialize_keras_object

__all__ = ["FORMAT", "FORMAT_VERSION", "CustomObjectScope", "RefusedContent", "RestrictedUnpickler", "atomic_write",
           "custom_object_scope", "deserialize_keras_object", "get_custom_objects", "get_registered_name",
           "get_registered_object", "load_model", "load_weights", "model_payload", "register_keras_serializable",
           "safe_loads", "save_model", "save_weights", "serialize_keras_object"]
