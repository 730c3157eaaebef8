"""Keras's object registration: ``register_keras_serializable``, the global custom objects and their scopes.

Every Layer subclass is found by its class name already; registering also
makes ``"package>name"`` resolve, gives any class or function (a custom loss,
metric or activation) a name that ``custom_objects`` lookups find, and is what
Keras programs write above their custom classes. ``custom_object_scope`` makes
objects resolve by name while deserializing, as ``custom_objects=`` does.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from types import TracebackType
    from typing import Any, TypeAlias, TypeVar

    _T = TypeVar("_T", bound=Callable[..., Any])
    # A `custom_objects` argument: user classes and functions (custom layers, losses, metrics...) by name.
    CustomObjects: TypeAlias = Mapping[str, Callable[..., Any]]

_CUSTOM = {}  # Keras's GLOBAL_CUSTOM_OBJECTS: "package>name" -> object, and what users put in it
_NAMES = {}  # object -> the "package>name" it was registered under
_SHORT = {}  # a registered object's own name -> the object (kgraph: bare names resolve too)
_SCOPES = threading.local()


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable[[_T], _T]:
    """Decorator: register a class or function under ``package>name`` (``name`` defaults to its own name)."""
    if not isinstance(package, str) or ">" in package:
        raise ValueError(f"`package` must be a string without '>'. Received: package={package!r}")

    def register(obj: _T) -> _T:
        key = f"{package}>{name or obj.__name__}"
        if isinstance(obj, type) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        if key in _CUSTOM and _CUSTOM[key] is not obj:
            raise ValueError(f"{key} has already been registered to {_CUSTOM[key]!r}.")
        _CUSTOM[key] = obj
        _NAMES[obj] = key
        _SHORT.setdefault(name or obj.__name__, obj)
        return obj

    return register


def get_custom_objects() -> dict[str, Any]:
    """The live global dictionary of custom objects (registered ones, by ``package>name``)."""
    return _CUSTOM


class CustomObjectScope:
    """``with CustomObjectScope({"name": obj}):`` objects resolve by name during deserialization inside it."""

    def __init__(self, custom_objects: CustomObjects | None) -> None:
        self.custom_objects = dict(custom_objects or {})
        self.backup = None

    def __enter__(self) -> CustomObjectScope:
        self.backup = _scope_objects()
        _SCOPES.objects = {**self.backup, **self.custom_objects}
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _SCOPES.objects = self.backup


custom_object_scope = CustomObjectScope


def _scope_objects():
    return dict(getattr(_SCOPES, "objects", {}))


def custom_objects_in_effect(custom_objects: CustomObjects | None = None) -> dict[str, Any]:
    """Every custom name that resolves now: open scopes first, then the global objects, then ``custom_objects``."""
    return {**(custom_objects or {}), **_CUSTOM, **_scope_objects()}


def get_registered_object(name: str, custom_objects: CustomObjects | None = None,
                          module_objects: Mapping[str, Any] | None = None) -> Any:
    """The object registered (or in scope, or given in ``custom_objects``/``module_objects``) under ``name``."""
    for source in (_scope_objects(), _CUSTOM, custom_objects or {}, module_objects or {}, _SHORT):
        if name in source:
            return source[name]
    return None


def get_registered_name(obj: object) -> str:
    """The ``package>name`` an object was registered under (its own name if it was not)."""
    try:
        return _NAMES[obj]
    except (KeyError, TypeError):
        return getattr(obj, "__name__", type(obj).__name__)


_SCRIPT_MODULES = set()  # modules imported from a training script's file: their classes answer for "__main__"


def stand_in_for_main(module_name: str) -> None:
    """Let the classes of ``module_name`` (a training script imported from its file, as ``python -m export
    --import train.py`` does) resolve the classes a saved model names in module ``__main__``: the script ran as
    ``__main__`` when it saved the model."""
    _SCRIPT_MODULES.add(module_name)


def defined_in(cls: object, module: str) -> bool:
    """Whether ``cls`` comes from the module a saved model names (``__main__``: a script imported from its file)."""
    own = getattr(cls, "__module__", None)
    return own == module or (module == "__main__" and own in _SCRIPT_MODULES)
