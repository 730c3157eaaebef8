"""Flatten and rebuild the nested lists/tuples/dicts that layers take and return.

Dict leaves are always visited in sorted-key order, so ``flatten`` and
``pack_sequence_as`` agree.
"""


def is_nested(x):
    return isinstance(x, (list, tuple, dict))


def flatten(structure):
    """Return the leaves of a nest of lists, tuples and dicts."""
    if not is_nested(structure):
        return [structure]
    leaves = []
    stack = [structure]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item[k] for k in sorted(item, reverse=True))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        else:
            leaves.append(item)
    return leaves


def map_structure(fn, structure):
    """Apply ``fn`` to every leaf, keeping the nesting."""
    if isinstance(structure, dict):
        return {k: map_structure(fn, v) for k, v in structure.items()}
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[map_structure(fn, v) for v in structure])
    if isinstance(structure, (list, tuple)):
        return type(structure)(map_structure(fn, v) for v in structure)
    return fn(structure)


def pack_sequence_as(structure, flat):
    """Rebuild ``structure`` with leaves taken in ``flatten`` order from ``flat``."""
    it = iter(flat)
    return _pack(structure, it)


def _pack(structure, it):
    if isinstance(structure, dict):
        filled = {k: _pack(structure[k], it) for k in sorted(structure)}
        return {k: filled[k] for k in structure}
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*[_pack(v, it) for v in structure])
    if isinstance(structure, (list, tuple)):
        return type(structure)(_pack(v, it) for v in structure)
    return next(it)
