"""``keras.tree``: flatten, rebuild, map and compare the nested lists/tuples/dicts that layers take and return.

Nested means a list, a tuple (a namedtuple included), a ``collections.deque`` or a dict. Dict leaves are visited in
sorted-key order (an ``OrderedDict``'s in its own order), so ``flatten`` and ``pack_sequence_as`` agree; ``None``
is a leaf.
"""
import collections
import warnings


class MAP_TO_NONE:
    """Returned by ``traverse``'s function to replace a sub-structure with ``None``."""


def is_nested(x):
    return isinstance(x, (list, tuple, dict, collections.deque))


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _keys(node):
    """The child keys of a nested ``node`` in visiting order (indices for sequences)."""
    if isinstance(node, dict):
        return list(node) if isinstance(node, collections.OrderedDict) else sorted(node)
    return list(range(len(node)))


def _children(node):
    if isinstance(node, collections.deque):
        node = list(node)
    return [node[k] for k in _keys(node)]


def _rebuild(node, values):
    """A structure like ``node`` holding ``values`` (given in ``_keys`` order); dicts keep their own key order."""
    if isinstance(node, dict):
        filled = dict(zip(_keys(node), values))
        items = [(k, filled[k]) for k in node]
        if isinstance(node, collections.defaultdict):
            return type(node)(node.default_factory, items)
        return type(node)(items) if type(node) is not dict else dict(items)
    if _is_namedtuple(node):
        return type(node)(*values)
    return type(node)(values)


def _mismatch(a, b, why):
    return ValueError(f"The two structures don't have the same nested structure: {why}.\n"
                      f"First structure: {a!r}\nSecond structure: {b!r}")


def _check_same_node(a, b):
    """Raise unless nested ``a`` and ``b`` are of one kind (both dicts, or sequences of one type) and shape."""
    if not is_nested(b):
        raise _mismatch(a, b, f"a {type(a).__name__} against the leaf {b!r}")
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            raise _mismatch(a, b, f"a {type(a).__name__} against a {type(b).__name__}")
        if set(a) != set(b):
            raise _mismatch(a, b, f"keys {sorted(map(str, a))} against {sorted(map(str, b))}")
        return
    if type(a) is not type(b):
        raise _mismatch(a, b, f"a {type(a).__name__} against a {type(b).__name__}")
    if len(a) != len(b):
        raise _mismatch(a, b, f"{len(a)} items against {len(b)}")


def _aligned_children(first, other):
    """``other``'s children in the visiting order of ``first``'s keys (dicts are matched by key)."""
    if isinstance(first, dict):
        return [other[k] for k in _keys(first)]
    return _children(other)


def flatten(structure):
    """Return the leaves of a nest of lists, tuples and dicts."""
    if not is_nested(structure):
        return [structure]
    leaves = []
    stack = [structure]
    while stack:
        item = stack.pop()
        if is_nested(item):
            stack.extend(reversed(_children(item)))
        else:
            leaves.append(item)
    return leaves


def flatten_with_path(structure):
    """``(path, leaf)`` pairs in ``flatten`` order; a path is the tuple of indices and dict keys leading to the leaf
    (a namedtuple's fields by index)."""
    out = []

    def visit(node, path):
        if not is_nested(node):
            out.append((path, node))
            return
        for key, child in zip(_keys(node), _children(node)):
            visit(child, path + (key,))
    visit(structure, ())
    return out


def map_structure(func, *structures, none_is_leaf=True):
    """Apply ``func`` to the leaves of ``structures`` (nested alike), position by position, keeping the nesting.

    none_is_leaf: if False, ``None`` leaves (``None`` in every structure) stay ``None`` without calling ``func``.
    """
    if not callable(func):
        raise TypeError(f"`func` must be callable. Received: func={func!r}")
    if not structures:
        raise ValueError("Must provide at least one structure")

    def visit(nodes):
        first = nodes[0]
        if not is_nested(first):
            for other in nodes[1:]:
                if is_nested(other):
                    raise _mismatch(first, other, f"the leaf {first!r} against a {type(other).__name__}")
            if first is None and not none_is_leaf:
                if not all(n is None for n in nodes):
                    raise ValueError(f"Structure mismatch: some arguments are None, others are not. "
                                     f"Received arguments: {tuple(nodes)}.")
                return None
            return func(*nodes)
        for other in nodes[1:]:
            _check_same_node(first, other)
        columns = [_children(first)] + [_aligned_children(first, other) for other in nodes[1:]]
        return _rebuild(first, [visit(list(column)) for column in zip(*columns)])
    return visit(list(structures))


def map_structure_up_to(shallow_structure, func, *structures):
    """``map_structure`` down to the leaves of ``shallow_structure`` only: ``func`` receives what ``structures``
    hold there (deeper nests included); the result is nested as ``shallow_structure``."""
    if not callable(func):
        raise TypeError(f"`func` must be callable. Received: func={func!r}")
    if not structures:
        raise ValueError("Must provide at least one structure")

    def visit(shallow, nodes):
        if not is_nested(shallow):
            return func(*nodes)
        for node in nodes:
            _check_same_node(shallow, node)
        columns = [_aligned_children(shallow, node) for node in nodes]
        return _rebuild(shallow, [visit(child, list(column))
                                  for child, column in zip(_children(shallow), zip(*columns))])
    return visit(shallow_structure, list(structures))


def assert_same_structure(a, b, check_types=None):
    """Raise a ValueError unless ``a`` and ``b`` are nested alike: at each level the same kind of container (any
    dicts with the same keys; lists, tuples and each namedtuple type apart) with as many items.

    check_types: deprecated in Keras, with no effect.
    """
    if check_types is not None:
        warnings.warn("The `check_types` argument is deprecated and no longer has any effect"
                      + (", please remove." if check_types else ". For a looser check, use "
                         "`keras.tree.assert_same_paths()`, which considers `list`, `tuple`, `namedtuple` and "
                         "`deque` as matching"), DeprecationWarning, stacklevel=2)
    map_structure(lambda *_: None, a, b)


def assert_same_paths(a, b):
    """Raise a ValueError unless ``a`` and ``b`` have the same leaf paths (container types are not compared)."""
    a_paths = {path for path, _ in flatten_with_path(a)}
    b_paths = {path for path, _ in flatten_with_path(b)}
    if a_paths != b_paths:
        msg = "`a` and `b` don't have the same paths."
        if a_paths - b_paths:
            msg += f"\nPaths in `a` missing in `b`:\n{a_paths - b_paths}"
        if b_paths - a_paths:
            msg += f"\nPaths in `b` missing in `a`:\n{b_paths - a_paths}"
        raise ValueError(msg)


def traverse(func, structure, top_down=True):
    """Visit every sub-structure depth first, giving ``func`` each one (parents before children if ``top_down``).

    Top-down, a ``func`` result other than None replaces the sub-structure, whose children are then not visited;
    bottom-up, it replaces the sub-structure already rebuilt from its visited children. ``MAP_TO_NONE`` replaces
    with ``None``.
    """
    if not callable(func):
        raise TypeError(f"`func` must be callable. Received: func={func!r}")

    def children_visited(node):
        if not is_nested(node):
            return node
        return _rebuild(node, [visit(child) for child in _children(node)])

    def visit(node):
        if top_down:
            result = func(node)
            if result is None:
                return children_visited(node)
        else:
            node = children_visited(node)
            result = func(node)
            if result is None:
                return node
        return None if result is MAP_TO_NONE else result
    return visit(structure)


def lists_to_tuples(structure):
    """``structure`` with every list made a tuple."""
    return traverse(lambda x: tuple(x) if isinstance(x, list) else None, structure, top_down=False)


def _is_shape(x):
    return isinstance(x, (list, tuple)) and all(isinstance(d, (int, type(None))) for d in x)


def map_shape_structure(func, structure):
    """``map_structure`` whose leaves are shapes: a list or tuple of ints and Nones is given whole to ``func``."""
    if _is_shape(structure) or not is_nested(structure):
        return func(structure)
    return _rebuild(structure, [map_shape_structure(func, child) for child in _children(structure)])


def pack_sequence_as(structure, flat):
    """Rebuild ``structure`` with leaves taken in ``flatten`` order from ``flat``."""
    flat = list(flat)
    expected = len(flatten(structure))
    if len(flat) != expected:
        raise ValueError(f"Could not pack sequence: the structure holds {expected} leaves, the flat sequence "
                         f"{len(flat)} items. Structure: {structure!r}")
    return _pack(structure, iter(flat))


def _pack(structure, it):
    if is_nested(structure):
        return _rebuild(structure, [_pack(child, it) for child in _children(structure)])
    return next(it)
