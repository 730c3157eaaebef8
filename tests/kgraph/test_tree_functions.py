"""``keras.tree``'s every function against Keras's on the same structures: paths, traversal, mapping over several
structures or up to a shallow one, the structure and path assertions, shapes and list-to-tuple conversion.

The reference is Keras's tree on optree, the implementation its NumPy, JAX and TensorFlow backends use (kgraph's
engine is NumPy). Keras's torch backend has its own, which orders the keys of dicts nested below the top level as
inserted and numbers namedtuple fields alphabetically, where its documentation (and optree) sorts and counts.
"""
import collections
import warnings

import pytest

from kgraph import tree

keras = pytest.importorskip("keras")
pytest.importorskip("optree")

Point = collections.namedtuple("Point", "y x")
STRUCTURES = [
    5, None, [], (), {}, [None], [1, 2, 3], (1, [2, (3,)]), {"b": [1, (2, None)], "a": Point(3, [4, 5])},
    [{"z": 1, "y": {"q": 2, "p": 3}}, Point(x=(4,), y=[5, 6])], collections.OrderedDict([("b", 1), ("a", [2, 3])]),
    collections.defaultdict(list, {"k": [1], "j": 2}), collections.deque([1, (2, 3)]),
]
IDS = [f"structure{i}" for i in range(len(STRUCTURES))]


@pytest.fixture(autouse=True)
def keras_tree_on_optree(monkeypatch):
    from keras.src.tree import optree_impl, tree_api
    monkeypatch.setattr(tree_api, "tree_impl", optree_impl)


def _both(fn):
    return fn(keras.tree), fn(tree)


def _same(ours, theirs):
    assert repr(ours) == repr(theirs) and type(ours) is type(theirs)


@pytest.mark.parametrize("structure", STRUCTURES, ids=IDS)
def test_flatten_paths_and_packing_agree_with_keras(structure):
    for fn in (lambda t: t.flatten(structure), lambda t: t.flatten_with_path(structure),
               lambda t: t.is_nested(structure), lambda t: t.lists_to_tuples(structure),
               lambda t: t.pack_sequence_as(structure, list(range(len(t.flatten(structure)))))):
        _same(*_both(fn))


@pytest.mark.parametrize("structure", STRUCTURES, ids=IDS)
def test_traverse_agrees_with_keras_both_ways(structure):
    def visits(t, top_down, replace):
        seen = []

        def func(x):
            seen.append(repr(x))
            if replace and isinstance(x, int):
                return t.MAP_TO_NONE if x == 2 else x * 10
            if replace and isinstance(x, list) and len(x) == 1:
                return "one"
            return None
        return t.traverse(func, structure, top_down=top_down), seen

    for top_down in (True, False):
        for replace in (True, False):
            theirs, ours = _both(lambda t: visits(t, top_down, replace))
            _same(ours[0], theirs[0])
            assert ours[1] == theirs[1]


@pytest.mark.parametrize("structure", STRUCTURES, ids=IDS)
def test_map_structure_over_one_and_two_structures(structure):
    _same(*_both(lambda t: t.map_structure(lambda x: (x, 1), structure)))
    _same(*_both(lambda t: t.map_structure(lambda a, b: [a, b], structure, structure)))
    _same(*_both(lambda t: t.map_structure(lambda x: 7, structure, none_is_leaf=False)))


def test_map_structure_matches_dicts_by_key_and_refuses_mismatches():
    a, b = [1, {"b": 2, "a": 3}], [4, {"a": 5, "b": 6}]
    _same(*_both(lambda t: t.map_structure(lambda x, y: x + y, a, b)))
    assert tree.map_structure(lambda x, y: x + y, a, b) == [5, {"b": 8, "a": 8}]
    for other in ([1, 2], (4, {"a": 5, "b": 6}), [4, {"a": 5}], [4, {"a": 5, "b": [6]}]):
        with pytest.raises(ValueError):
            keras.tree.map_structure(lambda x, y: x, a, other)
        with pytest.raises(ValueError, match="don't have the same nested structure"):
            tree.map_structure(lambda x, y: x, a, other)
    with pytest.raises(ValueError, match="some arguments are None"):
        tree.map_structure(lambda x, y: x, [None], [1], none_is_leaf=False)
    with pytest.raises(TypeError, match="must be callable"):
        tree.map_structure(3, [1])


def test_map_structure_up_to_agrees_with_keras():
    shallow = [1, [2, 3]]
    deep = ([[1, 2], [3, (4, 5)]], [1, [2, 3]])
    _same(*_both(lambda t: t.map_structure_up_to(shallow, lambda a, b: (a, b), *deep)))
    _same(*_both(lambda t: t.map_structure_up_to({"x": 1, "y": 2}, len, {"y": [1, 2], "x": (3,)})))
    _same(*_both(lambda t: t.map_structure_up_to(Point(1, 2), str, Point([1], {"a": 2}))))
    with pytest.raises(ValueError):
        keras.tree.map_structure_up_to(shallow, lambda a: a, [1, 2])
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tree.map_structure_up_to(shallow, lambda a: a, [1, 2])
    with pytest.raises(ValueError, match="at least one structure"):
        tree.map_structure_up_to(shallow, len)


PAIRS = [([1, 2], (1, 2)), ({"a": 1}, {"a": [2]}), ([1, [2]], [1, 2]), ({"a": 1}, {"b": 1}),
         (Point(1, 2), (1, 2)), (None, 1), ([None], [1]), (1, 2), ([1], [1, 2]), ({"a": 1, "b": 2}, {"b": 1, "a": 2}),
         ({"a": 1}, collections.OrderedDict(a=1)), ([1], 1), (1, [1]), ([1, (2,)], [3, (4,)])]


@pytest.mark.parametrize("a, b", PAIRS)
def test_structure_and_path_assertions_agree_with_keras(a, b):
    for name in ("assert_same_structure", "assert_same_paths"):
        outcomes = []
        for module in (keras.tree, tree):
            try:
                getattr(module, name)(a, b)
                outcomes.append("same")
            except ValueError:
                outcomes.append("ValueError")
        assert outcomes[0] == outcomes[1], name


def test_assertion_messages_and_deprecated_argument():
    with pytest.raises(ValueError, match=r"Paths in `a` missing in `b`:\n\{\('a',\)\}"):
        tree.assert_same_paths({"a": 1}, {"b": 1})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree.assert_same_structure([1], [2], check_types=True)
    assert caught and issubclass(caught[0].category, DeprecationWarning)


def test_map_shape_structure_agrees_with_keras():
    shapes = {"b": [(2,), [4, 5]], "a": (None, 3), "c": 7, "d": [], "e": (2.0, 3), "f": Point(None, 1)}
    _same(*_both(lambda t: t.map_shape_structure(lambda s: f"shape{list(s)}" if t.is_nested(s) else s, shapes)))


def test_pack_sequence_as_refuses_a_wrong_count():
    assert tree.pack_sequence_as({"b": 1, "a": (2, 3)}, [10, 20, 30]) == {"b": 30, "a": (10, 20)}
    with pytest.raises(ValueError, match="holds 3 leaves, the flat sequence 2 items"):
        tree.pack_sequence_as({"b": 1, "a": (2, 3)}, [1, 2])


def test_traverse_needs_a_callable():
    with pytest.raises(TypeError, match="must be callable"):
        tree.traverse(5, [1])
