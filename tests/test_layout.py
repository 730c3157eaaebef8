"""The code base keeps the shape ARCHITECTURE.md describes (see tests/layout.py for how it is measured)."""
import re

import kgraph
from tests import layout

# Fused numeric kernels: one forward and backward pass each, kept whole on purpose (see their docstrings).
FUSED_KERNELS = {("kgraph.ops.recurrent", "gru"), ("kgraph.ops.recurrent", "lstm"), ("kgraph.ops.conv", "_conv")}


def test_at_most_the_two_designed_import_circles_remain():
    # The backend <-> graph <-> ops knot and Model <-> Functional are the circles the design allows.
    found = layout.circles(layout.imports(layout.modules()))
    assert len(found) <= 2, found


def test_no_long_functions_outside_the_fused_kernels():
    long = [(module, name) for module, name, _ in layout.long_functions()]
    assert set(long) <= FUSED_KERNELS, long


def test_files_are_named_for_what_they_hold():
    by_history = [name for name in layout.modules() if re.search(r"_(extra|more|new|old|misc)\d*$", name)]
    assert by_history == []


def test_kgraph_top_level_stays_small_and_the_face_is_keras():
    top = [name for name, path in layout.modules().items()
           if name.count(".") == 1 and name.startswith("kgraph.") and path.name != "__init__.py"]
    assert len(top) <= 14, top
    assert not {"Node", "KerasHistory", "Functional", "InputLayer", "graph", "trainers"} & set(dir(kgraph))
    assert {"Model", "Sequential", "Layer", "Input", "layers", "ops", "saving", "models"} <= set(dir(kgraph))


def test_internal_modules_do_not_import_through_the_face():
    # `from kgraph import ops` names a module and is fine; a class taken from the package face is not.
    offenders = []
    for name, path in layout.modules().items():
        if name.startswith("kgraph.") and re.search(r"^from kgraph import [^\n]*\b[A-Z]", path.read_text(), re.M):
            offenders.append(name)
    assert offenders == []
