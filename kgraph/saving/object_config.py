"""Shared serialize/deserialize for the named-object families (losses, metrics)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from kgraph.saving.registration import CustomObjects


def serialize_object(obj: object, base_class: type, functions: Mapping[str, Callable[..., Any]],
                     module: str) -> dict[str, Any] | str:
    """``{"module", "class_name", "config"}`` for an instance, or the name of a built-in function."""
    if isinstance(obj, base_class):
        return {"module": module, "class_name": type(obj).__name__, "config": obj.get_config()}
    name = getattr(obj, "__name__", None)
    if name in functions and functions[name] is obj:
        return name
    raise ValueError(f"Cannot serialize {obj!r}: expected a {base_class.__name__} instance or a {module} function.")


def deserialize_object(config: str | Mapping[str, Any], classes: Mapping[str, type], get: Callable[[str], Any],
                       kind: str, custom_objects: CustomObjects | None = None) -> Any:
    """Rebuild an object from ``serialize_object`` output (a name string or a dict).

    custom_objects: ``{name: class_or_function}`` for user-defined objects.
    """
    custom_objects = custom_objects or {}
    if isinstance(config, str):
        if config in custom_objects:
            found = custom_objects[config]
            return found() if isinstance(found, type) else found
        return get(config)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Expected a {kind} name or a dict with 'class_name' and 'config', received {config!r}.")
    class_name = config["class_name"]
    cls = custom_objects.get(class_name) or classes.get(class_name)
    if cls is None:
        raise ValueError(f"Unknown {kind} class {class_name!r}. Expected one of {sorted(classes)} "
                         "or a name passed in custom_objects.")
    return cls.from_config(dict(config.get("config", {})))
