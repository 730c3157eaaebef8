"""``keras.utils.legacy``: the Keras 2 serialization format, ``{"class_name": ..., "config": {...}}``."""
import inspect

from kgraph.saving.registration import get_registered_name, get_registered_object

__all__ = ["deserialize_keras_object", "serialize_keras_object"]

_PASSIVE = "__passive_serialization__"


def serialize_keras_object(instance):
    """``{"class_name": <registered name>, "config": <get_config()>}`` for an object with ``get_config``; the
    registered name for a function or class; None for None.

    Values of the config that are themselves objects with ``get_config`` are serialized the same way (marked
    ``"__passive_serialization__": True``); other values are kept as they are.
    """
    instance = inspect.unwrap(instance) if callable(instance) else instance
    if instance is None:
        return None
    if hasattr(instance, "get_config") and not inspect.isclass(instance):
        config = {}
        for key, item in instance.get_config().items():
            if isinstance(item, str) or not hasattr(item, "get_config") and not inspect.isfunction(item):
                config[key] = item
                continue
            serialized = serialize_keras_object(item)
            if isinstance(serialized, dict):
                serialized[_PASSIVE] = True
            config[key] = serialized
        return {"class_name": get_registered_name(type(instance)), "config": config}
    if hasattr(instance, "__name__"):
        return get_registered_name(instance)
    raise ValueError(f"Cannot serialize {instance} because it doesn't implement `get_config()`.")


def _lookup(name, module_objects, custom_objects, printable_module_name):
    found = get_registered_object(name, custom_objects, module_objects)
    if found is None:
        raise ValueError(f"Unknown {printable_module_name}: '{name}'. Please ensure you are using a "
                         "`kgraph.utils.custom_object_scope` and that this object is included in the scope, or pass "
                         "it in `custom_objects` / `module_objects`.")
    return found


def deserialize_keras_object(identifier, module_objects=None, custom_objects=None, printable_module_name="object"):
    """The object of ``serialize_keras_object``'s form: classes and functions are looked up by name in
    ``custom_objects``, the custom object scopes and registrations, then ``module_objects``.

    A dict builds its class from its ``"config"`` (``from_config`` where the class has it), after deserializing
    the config values marked ``"__passive_serialization__"``; a string gives the named function, or an instance
    of the named class built with no arguments; a function is returned as it is.
    """
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(f"Improper config format for {identifier}. Expecting python dict contains "
                             "`class_name` and `config` as keys")
        cls = _lookup(identifier["class_name"], module_objects, custom_objects, printable_module_name)
        config = {}
        for key, item in dict(identifier["config"] or {}).items():
            if isinstance(item, dict) and item.get(_PASSIVE):
                item = deserialize_keras_object({k: v for k, v in item.items() if k != _PASSIVE}, module_objects,
                                                custom_objects, "config_item")
            config[key] = item
        if not hasattr(cls, "from_config"):
            return cls(**config)
        if "custom_objects" in inspect.signature(cls.from_config).parameters:
            return cls.from_config(config, custom_objects=dict(custom_objects or {}))
        return cls.from_config(config)
    if isinstance(identifier, str):
        found = _lookup(identifier, module_objects, custom_objects, printable_module_name)
        return found() if inspect.isclass(found) else found
    if inspect.isfunction(identifier):
        return identifier
    raise ValueError(f"Could not interpret serialized {printable_module_name}: {identifier}")
