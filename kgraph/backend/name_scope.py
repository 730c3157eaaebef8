"""Name scopes (``keras.name_scope``): the path a Variable created inside one is given.

A scope pushes a name; a Variable made inside gets ``"<scope>/<scope>/<name>"`` as its ``path``. Layers open
their own scope around ``build``, ``call`` and ``add_weight`` (``Layer._open_name_scope``), so a layer built
inside another's ``build`` or ``call``, or inside a Sequential, gets the outer name in its weights' paths, as in
Keras 3: ``sequential/dense/kernel``, ``my_model/dense/kernel``; a layer called on a Functional model's inputs
is outside any scope (``dense/kernel``). ``override_parent`` makes a scope absolute: a layer records the path it
was first opened under and keeps it wherever it is called later.
"""
import threading

__all__ = ["current_path", "layer_scope", "name_scope", "weight_path"]

_local = threading.local()


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


class name_scope:
    """Creates a sub-namespace for variable paths.

    Args:
        name: the scope's name (a string without ``/``).
        caller: optional owner (a layer): entering the scope its innermost scope already is (same caller and
            name) does not push it again, when ``deduplicate``.
        deduplicate: see ``caller``.
        override_parent: an absolute path replacing every scope opened before this one.
    """

    def __init__(self, name, caller=None, deduplicate=True, override_parent=None):
        if not isinstance(name, str) or "/" in name:
            raise ValueError("Argument `name` must be a string and cannot contain character `/`. "
                             f"Received: name={name}")
        self.name = name
        self.caller = caller
        self.deduplicate = deduplicate
        if override_parent is None and deduplicate and getattr(caller, "_parent_path", None) is not None:
            override_parent = caller._parent_path
        self.override_parent = override_parent
        self._pop_on_exit = False

    def __enter__(self):
        stack = _stack()
        if self.deduplicate and stack and self.caller is not None and stack[-1].caller is self.caller \
                and stack[-1].name == self.name:
            return self
        stack.append(self)
        self._pop_on_exit = True
        return self

    def __exit__(self, *exc):
        if self._pop_on_exit:
            stack = _stack()
            if stack:
                stack.pop()
            self._pop_on_exit = False


def current_path():
    """The path of the scopes open in this thread ("" outside any)."""
    parts = []
    for entry in _stack():
        if entry.override_parent is not None:
            parts = [p for p in entry.override_parent.split("/") if p]
        parts.append(entry.name)
    return "/".join(parts)


def layer_scope(layer):
    """The scope of ``layer``'s own name, absolute at the path where it was first opened (Keras's
    ``Layer._open_name_scope``)."""
    if getattr(layer, "_parent_path", None) is None:
        layer._parent_path = current_path()
    return name_scope(layer.name, caller=layer)


def weight_path(layer, name):
    """The path of ``layer``'s weight ``name`` created now (Keras's ``add_weight`` opens the layer's scope)."""
    with layer_scope(layer):
        return f"{current_path()}/{name}"
