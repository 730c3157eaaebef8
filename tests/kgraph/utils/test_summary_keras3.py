"""model.summary() in Keras 3's look: its box table, its columns and arguments, with and without rich."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kgraph
from kgraph.utils.summary import summary_table
from kgraph.utils.summary_table import SummaryTable, render_text

# Two builds of each model, one per engine, with the same names and calls.


def _chain(lib):
    x = lib.Input((3,), name="x")
    h = lib.layers.Dense(4, activation="relu", name="hidden")(x)
    return lib.Model(x, lib.layers.Dense(2, name="out")(h), name="chain")


def _branching(lib):
    x = lib.Input((3,), name="x")
    a = lib.layers.Dense(4, name="a")(x)
    b = lib.layers.Dense(4, name="b")(x)
    return lib.Model(x, lib.layers.Add(name="add")([a, b]), name="branching")


def _nested(lib):
    inner = lib.Sequential([lib.layers.Dense(4, name="inner_a"), lib.layers.Dense(2, name="inner_b")], name="inner")
    x = lib.Input((3,), name="x")
    h = lib.layers.Dense(5, name="d1")(x)
    y = lib.layers.Dense(1, name="head")(inner(h))
    model = lib.Model(x, y, name="nested")
    model.get_layer("d1").trainable = False
    return model


def _sequential(lib):
    return lib.Sequential([lib.Input((6,)), lib.layers.Dense(4, name="d"), lib.layers.Dropout(0.1, name="drop"),
                           lib.layers.BatchNormalization(name="bn")], name="seq")


def _unbuilt(lib):
    return lib.Sequential([lib.layers.Dense(4, name="u1"), lib.layers.Dense(2, name="u2")], name="unbuilt")


def _op_nodes(lib):
    x = lib.Input((3,), name="x")
    y = lib.layers.Dense(3, name="d")(x) + x
    return lib.Model(x, [lib.ops.sum(y, axis=1, keepdims=True), y], name="ops")


def _multi_io(lib):
    a, b = lib.Input((3,), name="a"), lib.Input((2,), name="b")
    c = lib.layers.Concatenate(name="cat")([a, b])
    return lib.Model([a, b], [lib.layers.Dense(1, name="o1")(c), lib.layers.Dense(2, name="o2")(c)], name="mio")


def _subclassed(lib):
    class Tower(lib.Model):
        def __init__(self):
            super().__init__(name="tower")
            self.d = lib.layers.Dense(2, name="d")
            self.e = lib.layers.Dense(3, name="e")

        def call(self, x):
            return self.e(self.d(x))

    model = Tower()
    model(np.ones((1, 4), "float32"))
    return model


CASES = [
    (_chain, {}),
    (_chain, {"show_trainable": True, "line_length": 80}),
    (_branching, {}),
    (_branching, {"show_trainable": True}),
    (_nested, {"expand_nested": True, "show_trainable": True, "line_length": 80}),
    (_nested, {"layer_range": ["d1", "inner"]}),
    (_sequential, {"positions": [0.5, 0.75, 1.0], "line_length": 70}),
    (_unbuilt, {}),
    (_op_nodes, {}),
    (_multi_io, {"show_trainable": True}),
    (_subclassed, {}),
]


def _summary(model, **kwargs):
    out = []
    model.summary(print_fn=out.append, **kwargs)
    (text,) = out  # Keras 3 hands the whole summary to print_fn at once
    return text


def _table_rows(text):
    """Each row of the box table as its cells' text (a wrapped cell's lines joined), and the lines after it."""
    rows, current, after = [], None, []
    for line in text.splitlines():
        if line[:1] in "┃│":
            cells = [cell.strip() for cell in line[1:-1].split(line[0])]
            current = cells if current is None else [f"{a} {b}".strip() for a, b in zip(current, cells)]
        elif line[:1] in "┡├└":
            rows.append(current)
            current = None
        elif line.startswith(" "):
            after.append(line)
    return rows, after


@pytest.mark.parametrize("build, kwargs", CASES, ids=[f"{b.__name__}-{'-'.join(k) or 'default'}" for b, k in CASES])
def test_summary_matches_keras(build, kwargs):
    keras = pytest.importorskip("keras")
    # Op nodes and unnamed models take auto-generated names: both engines start a fresh naming session.
    kgraph.utils.clear_session()
    keras.backend.clear_session()
    ours, theirs = _summary(build(kgraph), **kwargs), _summary(build(keras), **kwargs)
    assert _table_rows(ours) == _table_rows(theirs)
    assert ours.splitlines()[0] == theirs.splitlines()[0]
    assert ours == theirs  # the same box drawing, widths and wrapping too


def test_connected_to_only_for_branching_or_shared_graphs():
    headers = lambda model: summary_table(model).headers  # noqa: E731
    assert headers(_chain(kgraph)) == ["Layer (type)", "Output Shape", "Param #"]
    assert headers(_branching(kgraph))[-1] == "Connected to"
    x = kgraph.Input((3,), name="x")
    shared = kgraph.layers.Dense(3, name="shared")
    chain_with_shared = kgraph.Model(x, shared(shared(x)))
    table = summary_table(chain_with_shared)
    assert table.headers[-1] == "Connected to"
    assert [row[-1] for row in table.rows] == ["-", "x[0][0], shared[0][0]"]


def test_unbuilt_sequential_prints_keras_unbuilt_table():
    rows, after = _table_rows(_summary(_unbuilt(kgraph)))
    assert rows[1:] == [["u1 (Dense)", "?", "0 (unbuilt)"], ["u2 (Dense)", "?", "0 (unbuilt)"]]
    assert after[0] == " Total params: 0 (0.00 B)"


def test_optimizer_params_after_training():
    model = _sequential(kgraph)
    model.compile(optimizer="adam", loss="mse")
    assert not any("Optimizer params" in line for line in _table_rows(_summary(model))[1])
    model.fit(np.ones((4, 6), "float32"), np.ones((4, 4), "float32"), verbose=0)
    # Adam: iterations, learning rate, then two slots per trainable weight (Dense 6*4 + 4, BatchNormalization 4 + 4).
    assert _table_rows(_summary(model))[1][-1].startswith(f" Optimizer params: {2 + 2 * 36} (")


def test_plain_text_is_rich_s_table_cell_for_cell():
    pytest.importorskip("rich")
    from kgraph.utils.summary_table import render_rich
    tables = [summary_table(build(kgraph), **kwargs) for build, kwargs in CASES]
    tables.append(SummaryTable("T", ["Name", "Count", "Mark"], ["left", "right", "center"], [8, 6, 5], 26,
                               [["a_very_long_layer_name (Dense)", "1,234,567", "Y"],
                                ["   └ nested words that wrap here", "0 (unbuilt)", "-"]], [" Total: 1"]))
    for table in tables:
        assert render_text(table) == render_rich(table, terminal=False)[1]


def test_without_rich_the_same_table_prints_in_plain_text(tmp_path):
    pytest.importorskip("rich")
    script = textwrap.dedent("""
        import sys
        if sys.argv[1] == "plain":
            sys.modules["rich"] = None  # import rich now fails, as where it is not installed
        import kgraph
        x = kgraph.Input((3,), name="x")
        a = kgraph.layers.Dense(4, name="a")(x)
        b = kgraph.layers.Dense(4, name="b")(x)
        kgraph.Model(x, kgraph.layers.Add(name="add")([a, b]), name="branching").summary(show_trainable=True)
        print("rich" in sys.modules and sys.modules["rich"] is not None)
    """)
    path = tmp_path / "show.py"
    path.write_text(script)
    env = {**os.environ, "COLUMNS": "100"}
    plain, rich = (subprocess.run([sys.executable, str(path), mode], capture_output=True, text=True, env=env,
                                  check=True).stdout for mode in ("plain", "rich"))
    assert plain.splitlines()[-1] == "False" and rich.splitlines()[-1] == "True"
    assert plain.splitlines()[:-1] == rich.splitlines()[:-1]
    rows, _ = _table_rows("\n".join(plain.splitlines()[:-1]))
    # At 96 columns Keras's layout leaves "Trainable" a 6-character cell: "Traina…", as Keras prints it.
    assert rows[0] == ["Layer (type)", "Output Shape", "Param #", "Connected to", "Traina…"]
    assert rows[-1] == ["add (Add)", "(None, 4)", "0", "a[0][0], b[0][0]", "-"]
