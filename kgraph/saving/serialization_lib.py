"""``serialize_keras_object`` / ``deserialize_keras_object``: any Keras object <-> Keras 3's dict form of it.

The dict is ``{"module", "class_name", "config", "registered_name"}`` (plus ``build_config`` for a built layer and
``compile_config`` for a compiled model), as ``keras.saving.serialize_keras_object`` writes it: kgraph's own
classes are written under Keras's public modules (``keras.layers``, ``keras.initializers``...), a user's class or
function under its module and registered name. Reading resolves classes by name only: custom objects first (the
``custom_objects`` argument, open custom object scopes, registered objects), then kgraph's classes of the family
the module names. No module named in a config is ever imported, and no code (a ``lambda``) is ever loaded.
"""
from __future__ import annotations

import types
from typing import TYPE_CHECKING

import numpy as np

from kgraph.saving.registration import (
    CustomObjectScope,
    custom_objects_in_effect,
    get_registered_name,
    get_registered_object,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from kgraph.saving.registration import CustomObjects

PLAIN_TYPES = (str, int, float, bool)
_FUNCTION = "function"
_KERAS_PREFIXES = ("keras.src.", "keras.", "kgraph.")


def serialize_keras_object(obj: Any) -> Any:
    """The Keras 3 config of ``obj`` (plain values as they are, containers item by item)."""
    if obj is None or isinstance(obj, PLAIN_TYPES):
        return obj
    if isinstance(obj, (list, tuple)):
        items = [serialize_keras_object(x) for x in obj]
        return tuple(items) if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        return _serialize_mapping(obj)
    special = _special_form(obj)
    if special is not None:
        return special
    if isinstance(obj, (np.generic, np.dtype)):
        return obj.name if isinstance(obj, np.dtype) else obj.item()
    from kgraph.graph.operation import Operation
    if isinstance(obj, Operation):
        return _serialize_layer(obj)
    if not isinstance(obj, type) and not hasattr(obj, "get_config") and callable(obj) \
            and isinstance(getattr(obj, "__name__", None), str):
        return _serialize_function(obj)
    if isinstance(obj, type) or not hasattr(obj, "get_config"):
        raise TypeError(f"Cannot serialize object {obj!r} of type {type(obj).__name__}. To be serializable, a "
                        "class must implement the `get_config()` method.")
    config = obj.get_config()
    if not isinstance(config, dict):
        raise TypeError(f"The `get_config()` method of {obj!r} should return a dict. It returned: {config!r}")
    origin = _origin(type(obj))
    return {"module": origin["module"], "class_name": type(obj).__name__, "config": serialize_dict(config),
            "registered_name": origin["registered_name"]}


def serialize_dict(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Each value of ``obj`` serialized (Keras's ``serialize_dict``)."""
    return {key: serialize_keras_object(value) for key, value in obj.items()}


def _serialize_mapping(obj):
    """A dict; one that kgraph's family serializers wrote (``module: kgraph.…``) takes Keras's module."""
    out = serialize_dict(obj)
    module = out.get("module")
    # An op node of a graph keeps its marker (`kgraph.ops`): the config writer tells op classes (Add, Concatenate)
    # from the layers of the same names by it.
    if isinstance(module, str) and module.startswith("kgraph.") and module != "kgraph.ops" \
            and "class_name" in out and "config" in out:
        out.update(module=public_module(module), registered_name=None)
    return out


def _special_form(obj):
    """Keras's ``__numpy__``/``__slice__``/``__keras_tensor__``... forms, or None for other objects."""
    from kgraph.graph.keras_tensor import KerasTensor
    if isinstance(obj, np.ndarray) and obj.ndim > 0:
        return {"class_name": "__numpy__", "config": {"value": obj.tolist(), "dtype": obj.dtype.name}}
    if isinstance(obj, np.ndarray):
        return obj.item()
    if isinstance(obj, bytes):
        return {"class_name": "__bytes__", "config": {"value": obj.decode("utf-8")}}
    if isinstance(obj, slice):
        return {"class_name": "__slice__", "config": {key: serialize_keras_object(getattr(obj, key))
                                                      for key in ("start", "stop", "step")}}
    if obj is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(obj, KerasTensor):
        history = getattr(obj, "_keras_history", None)
        return {"class_name": "__keras_tensor__", "config": {
            "shape": list(obj.shape), "dtype": obj.dtype,
            "keras_history": [history[0].name, history[1], history[2]] if history else None}}
    return None


def public_module(module: str) -> str:
    """Keras's public module for a kgraph module (``kgraph.losses.classes`` -> ``keras.losses``)."""
    parts = module.split(".")
    if parts[1:2] == ["optimizers"] and "schedules" in parts:
        return "keras.optimizers.schedules"
    return f"keras.{parts[1]}" if len(parts) > 1 else "keras"


def _origin(cls):
    """``module`` and ``registered_name`` of a class: Keras's public module for kgraph's, its own for a user's."""
    if cls.__module__.startswith("kgraph."):
        return {"module": public_module(cls.__module__), "registered_name": None}
    return {"module": None if cls.__module__ == "__main__" else cls.__module__,
            "registered_name": get_registered_name(cls)}


def _serialize_function(fn):
    if getattr(fn, "__name__", None) == "<lambda>":
        raise ValueError(f"Cannot serialize the `lambda` {fn!r}: kgraph never saves nor loads Python code. Define "
                         "it with `def` and register it (`@kgraph.saving.register_keras_serializable()`).")
    return {"module": "builtins", "class_name": _FUNCTION, "config": get_registered_name(fn),
            "registered_name": _FUNCTION}


def _serialize_layer(layer):
    from kgraph.saving.keras_compile import compile_config
    from kgraph.saving.keras_config_writer import model_to_keras
    out = model_to_keras(layer)
    if getattr(layer, "compiled", False):
        out["compile_config"] = compile_config(layer)
    return out


def deserialize_keras_object(config: Any, custom_objects: CustomObjects | None = None, safe_mode: bool = True,
                             **kwargs: Any) -> Any:
    """The object ``config`` describes (``serialize_keras_object``'s output, Keras's or kgraph's forms)."""
    # safe_mode is Keras's switch for loading lambdas; kgraph refuses them in either mode.
    objects = custom_objects_in_effect({**(kwargs.get("module_objects") or {}), **(custom_objects or {})})
    return _deserialize(config, objects)


def _deserialize(config, objects):
    if isinstance(config, str):
        return objects.get(config, config)
    if isinstance(config, (list, tuple)):
        return [_deserialize(x, objects) for x in config]
    if not isinstance(config, dict):
        return config  # plain values, and objects already deserialized
    if "class_name" not in config or "config" not in config:
        return {key: _deserialize(value, objects) for key, value in config.items()}
    class_name = config["class_name"]
    if isinstance(class_name, str) and class_name.startswith("__"):
        return _special_object(config, objects)
    if class_name == _FUNCTION:
        return _function(config, objects)
    cls = custom_class(config, objects)
    if cls is not None:
        return _from_custom_class(cls, config, objects)
    return _builtin_object(config, objects)


def _special_object(config, objects):
    from kgraph.graph.keras_tensor import KerasTensor
    kind, inner = config["class_name"], config["config"]
    if kind in ("__numpy__", "__tensor__"):
        return np.asarray(inner["value"], dtype=inner["dtype"])
    if kind == "__bytes__":
        return inner["value"].encode("utf-8")
    if kind == "__ellipsis__":
        return Ellipsis
    if kind == "__slice__":
        return slice(*(_deserialize(inner[key], objects) for key in ("start", "stop", "step")))
    if kind == "__tuple__":
        return tuple(_deserialize(v, objects) for v in inner["value"])
    if kind == "__keras_tensor__":
        return KerasTensor(tuple(inner["shape"]), dtype=inner["dtype"])
    if kind == "__lambda__":
        raise ValueError("Refusing to deserialize a Python `lambda`: kgraph never loads code from a config. "
                         "Re-create the function with `def`, register it, and pass it by name.")
    raise TypeError(f"Cannot deserialize the special form {kind!r}. Received: {config!r}")


def _function(config, objects):
    name, module = config["config"], config.get("module") or ""
    if not isinstance(name, str):
        raise TypeError(f"Expected 'config' to be a non-null str for a function. Received: {config!r}")
    found = function_by_name(name, module, objects)
    if found is None:
        raise TypeError(f"Could not locate function '{name}'. Make sure custom functions are decorated with "
                        "`@kgraph.saving.register_keras_serializable()` (and imported before loading), or pass "
                        f"them in `custom_objects`. Full object config: {config}")
    return found


def function_by_name(name: str, module: str, objects: Mapping[str, Any]) -> Callable[..., Any] | None:
    """A function by its saved name: a custom or registered one, else kgraph's activation or loss of that name."""
    if name in objects:
        return objects[name]
    if module == "builtins" or module.startswith(_KERAS_PREFIXES):
        from kgraph import activations, losses
        for get in (activations.get, losses.get_function):
            try:
                return get(name)
            except ValueError:
                continue
    suffix = f">{name}"  # Keras <= 3.6 saved registered functions by their bare name
    found = next((obj for key, obj in objects.items() if key.endswith(suffix)), None)
    return found if found is not None else get_registered_object(name)


def custom_class(config: Mapping[str, Any], objects: Mapping[str, Any]) -> Any:
    """The user's class (or function) for a config: by its registered name, else by its class name."""
    # A class that a Keras or kgraph module holds is a user's only where the custom objects name it.
    for key in (config.get("registered_name"), config["class_name"]):
        if isinstance(key, str) and key in objects:
            return objects[key]
    module = config.get("module") or ""
    if module.startswith(("keras", "kgraph")):
        return None
    return get_registered_object(config["class_name"]) or imported_class(config["class_name"], module)


def imported_class(class_name: str, module: str) -> Any:
    """A user's regularizer, constraint or initializer class named ``class_name`` defined in ``module``, among the
    classes already defined in this process (a module the user imported, ``export --import`` too), else None.
    Only subclasses of kgraph's base classes are looked at: a file never names code that runs."""
    if not module:
        return None
    from kgraph import constraints, initializers, regularizers
    for base in (regularizers.Regularizer, constraints.Constraint, initializers.Initializer):
        stack = list(base.__subclasses__())
        while stack:
            cls = stack.pop()
            if cls.__name__ == class_name and cls.__module__ == module:
                return cls
            stack.extend(cls.__subclasses__())
    return None


def _from_custom_class(cls, config, objects):
    """Keras's ``cls.from_config(config)`` in a scope of the custom objects, then build and compile configs."""
    from kgraph.layers.layer import Layer
    if isinstance(cls, types.FunctionType):
        return cls
    if isinstance(cls, type) and issubclass(cls, Layer):
        from kgraph.saving.serialization import instantiate_layer
        return _compiled(instantiate_layer(cls, config, objects), config, objects)
    if not hasattr(cls, "from_config"):
        raise TypeError(f"Unable to reconstruct an instance of '{config['class_name']}' because the class is "
                        f"missing a `from_config()` method. Full object config: {config}")
    with CustomObjectScope(objects):
        return cls.from_config(decode_arrays(config["config"]))


def _compiled(instance, config, objects):
    if config.get("compile_config") and hasattr(instance, "compile"):
        from kgraph.saving.keras_compile import compile_from_config
        compile_from_config(instance, config["compile_config"], objects)
    return instance


def decode_arrays(value: Any) -> Any:
    """``value`` with Keras's ``__numpy__`` (and ``__tensor__``) forms as NumPy arrays."""
    if isinstance(value, list):
        return [decode_arrays(v) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("class_name") in ("__numpy__", "__tensor__") and isinstance(value.get("config"), dict):
        return np.asarray(value["config"]["value"], dtype=value["config"]["dtype"])
    return {k: decode_arrays(v) for k, v in value.items()}


def family(module: str) -> str | None:
    """The kind of object a Keras or kgraph module holds: ``layers``, ``initializers``, ``optimizers``..."""
    for prefix in _KERAS_PREFIXES:
        if module.startswith(prefix):
            parts = module[len(prefix):].split(".")
            if "schedules" in parts:
                return "schedules"
            return "optimizers" if "optimizers" in parts else parts[0]
    return "" if module in ("keras", "kgraph") else None


def _builtin_object(config, objects):
    from kgraph.layers.layer import get_registered_layer
    class_name, module = config["class_name"], config.get("module") or ""
    kind = family(module) if module else None
    if class_name.endswith("DTypePolicy"):
        return config["config"].get("name")
    if kind in ("layers", "models", "ops") or (kind == "" and class_name in ("Sequential", "Functional", "Model")) \
            or (not module and get_registered_layer(class_name) is not None):
        return _compiled(_layer(config, objects, module), config, objects)
    if kind is None and module:
        raise TypeError(f"Could not locate class '{class_name}' (module '{module}'). Make sure custom classes are "
                        "decorated with `@kgraph.saving.register_keras_serializable()` (and imported before "
                        f"loading), or pass them in `custom_objects`. Full object config: {config}")
    builders = _BUILDERS.get(kind) if kind else _ANY_FAMILY
    if builders is None:
        raise TypeError(f"kgraph has no Keras {kind} to deserialize '{class_name}' (module '{module}') into.")
    for build in builders:
        try:
            return build(class_name, decode_arrays(config["config"]), objects)
        except ValueError:
            if len(builders) == 1:
                raise
    raise TypeError(f"Could not locate class '{class_name}': no kgraph layer, initializer, regularizer, schedule, "
                    f"optimizer, loss or metric has that name, nor does a custom object. Full config: {config}")


def _layer(config, objects, module):
    from kgraph.saving.serialization import deserialize_layer
    if module.startswith("keras"):
        from kgraph.layers.serialization import deserialize
        return deserialize(config, objects)
    return deserialize_layer(config, objects)


def _initializer(class_name, config, objects):
    from kgraph import initializers
    from kgraph.saving.keras_config_reader import initializer_config
    return initializers.get(initializer_config(class_name, config, f"initializer {class_name}"))


def _regularizer(class_name, config, objects):
    from kgraph import regularizers
    return regularizers.deserialize({"class_name": class_name, "config": config}, objects)


def _constraint(class_name, config, objects):
    from kgraph import constraints
    return constraints.deserialize({"class_name": class_name, "config": config}, objects)


def _schedule(class_name, config, objects):
    from kgraph.optimizers import schedules
    return schedules.deserialize({"class_name": class_name, "config": config}, objects)


def _optimizer(class_name, config, objects):
    from kgraph.saving.keras_compile import optimizer_from_keras
    return optimizer_from_keras(class_name, config, objects)


def _loss(class_name, config, objects):
    from kgraph import losses
    return losses.deserialize({"class_name": class_name, "config": config}, objects)


def _metric(class_name, config, objects):
    from kgraph import metrics
    return metrics.deserialize({"class_name": class_name, "config": config}, objects)


_BUILDERS = {"initializers": (_initializer,), "regularizers": (_regularizer,), "constraints": (_constraint,),
             "schedules": (_schedule,), "optimizers": (_optimizer,), "losses": (_loss,), "metrics": (_metric,)}
# A config without a module (kgraph's own ``{"class_name", "config"}``), not a layer's: these families, in order.
_ANY_FAMILY = (_initializer, _regularizer, _constraint, _schedule, _optimizer, _loss, _metric)
