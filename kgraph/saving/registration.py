"""Keras's object registration: ``register_keras_serializable`` and the registry behind it.

Every Layer subclass is found by its class name already; registering also
makes ``"package>name"`` resolve, gives any class or function (a custom loss,
metric or activation) a name that ``custom_objects`` lookups find, and is what
Keras programs write above their custom classes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeAlias, TypeVar

    _T = TypeVar("_T", bound=Callable[..., Any])
    # A `custom_objects` argument: user classes and functions (custom layers, losses, metrics...) by name.
    CustomObjects: TypeAlias = Mapping[str, Callable[..., Any]]

_CUSTOM = {}


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable[[_T], _T]:
    """Decorator: register a class or function under ``package>name`` (``name`` defaults to its own name)."""
    if not isinstance(package, str) or ">" in package:
        raise ValueError(f"`package` must be a string without '>'. Received: package={package!r}")

    def register(obj: _T) -> _T:
        key = f"{package}>{name or obj.__name__}"
        if key in _CUSTOM and _CUSTOM[key] is not obj:
            raise ValueError(f"{key} has already been registered to {_CUSTOM[key]!r}.")
        _CUSTOM[key] = obj
        _CUSTOM.setdefault(name or obj.__name__, obj)
        return obj

    return register


def get_registered_object(name: str, custom_objects: CustomObjects | None = None,
                          module_objects: Mapping[str, Any] | None = None) -> Any:
    """The object registered (or given in ``custom_objects``/``module_objects``) under ``name``, or None."""
    for source in (custom_objects or {}, _CUSTOM, module_objects or {}):
        if name in source:
            return source[name]
    return None


def get_registered_name(obj: object) -> str:
    """The ``package>name`` an object was registered under (its own name if it was not)."""
    for key, value in _CUSTOM.items():
        if value is obj and ">" in key:
            return key
    return getattr(obj, "__name__", type(obj).__name__)
