"""plot_model / model_to_dot: the dot source names every layer, op and shape; Graphviz renders it to files."""
import importlib.util
import shutil
import sys

import pytest

import kgraph
from kgraph import layers
from kgraph.utils import model_to_dot, plot_model

requires_pydot = pytest.mark.skipif(importlib.util.find_spec("pydot") is None,
                                    reason='needs the plot extra: pip install "kgraph-engine[plot]"')
requires_dot = pytest.mark.skipif(importlib.util.find_spec("pydot") is None or shutil.which("dot") is None,
                                  reason="needs pydot and Graphviz's dot program (apt-get install graphviz)")


def nested_model():
    """Layers, op nodes (``+``, indexing), a nested Functional and a nested Sequential."""
    kgraph.utils.clear_session()
    inputs = kgraph.Input(shape=(6,), name="features")
    hidden = layers.Dense(8, activation="relu", name="hidden")(inputs)
    mixed = hidden + inputs[:, :1]
    inner_inputs = kgraph.Input(shape=(8,), name="inner_in")
    inner = kgraph.Model(inner_inputs, layers.Dense(3, name="inner_dense")(inner_inputs), name="inner")
    stack = kgraph.Sequential([kgraph.Input(shape=(3,)), layers.Dense(2, name="stack_a"),
                               layers.Dense(1, activation="sigmoid", name="stack_b")], name="stack")
    frozen = layers.Dense(4, name="frozen")
    frozen.trainable = False
    outputs = [stack(inner(mixed)), frozen(inputs)]
    return kgraph.Model(inputs, outputs, name="outer")


def names_and_edges(dot):
    """``{node id: label}`` over the graph and its clusters, and the edges as (source label, destination label)."""
    graphs, labels, edges = [dot], {}, []
    while graphs:
        graph = graphs.pop()
        labels.update((node.get_name(), node.get_label()) for node in graph.get_nodes())
        edges.extend((edge.get_source(), edge.get_destination()) for edge in graph.get_edges())
        graphs.extend(graph.get_subgraphs())
    title = {key: label.split("<b>")[1].split("</b>")[0] for key, label in labels.items() if label}
    return title, {(title[a], title[b]) for a, b in edges}


@requires_pydot
def test_dot_source_names_every_operation_with_its_shapes_and_connections():
    model = nested_model()
    dot = model_to_dot(model, show_shapes=True)
    source = dot.to_string()
    for op in model.operations:
        assert f"<b>{op.name}</b> ({type(op).__name__})" in source
    for text in ("Output shape: <b>(None, 6)</b>", "Input shape: <b>[(None, 8), (None, 1)]</b>",
                 "Output shape: <b>(None, 3)</b>", "Output shape: <b>(None, 1)</b>", "Output shape: <b>(None, 4)</b>"):
        assert text in source
    titles, edges = names_and_edges(dot)
    input_label = next(node.get_label() for node in dot.get_nodes() if titles.get(node.get_name()) == "features")
    assert "Output shape: <b>(None, 6)</b>" in input_label and "Input shape" not in input_label
    assert sorted(titles.values()) == sorted(op.name for op in model.operations)
    assert edges == {("features", "hidden"), ("features", "get_item"), ("hidden", "add"), ("get_item", "add"),
                     ("add", "inner"), ("inner", "stack"), ("features", "frozen")}
    assert 'rankdir=TB' in source and 'dpi=200' in source


@requires_pydot
def test_expand_nested_draws_nested_models_as_clusters_wired_to_their_inner_layers():
    dot = model_to_dot(nested_model(), expand_nested=True, rankdir="LR")
    clusters = {graph.get_label(): graph for graph in dot.get_subgraphs()}
    assert sorted(clusters) == ["inner", "stack"]
    inner_titles, _ = names_and_edges(clusters["inner"])
    assert sorted(inner_titles.values()) == ["inner_dense", "inner_in"]
    stack_titles, _ = names_and_edges(clusters["stack"])
    assert sorted(stack_titles.values()) == ["stack_a", "stack_b"]  # a Sequential draws no input box
    _, edges = names_and_edges(dot)
    assert {("add", "inner_in"), ("inner_in", "inner_dense"), ("inner_dense", "stack_a"),
            ("stack_a", "stack_b")} <= edges
    assert not {"inner", "stack"} & {name for edge in edges for name in edge}
    assert "rankdir=LR" in dot.to_string()


@requires_pydot
def test_label_options_and_a_sequential_model():
    model = nested_model()
    source = model_to_dot(model, show_layer_names=False, show_dtype=True, show_trainable=True,
                          show_layer_activations=True, expand_nested=True).to_string()
    assert "<b>hidden</b>" not in source and "<b>Dense</b>" in source and "<b>Add</b>" in source
    assert "Output dtype: <b>float32</b>" in source
    assert "Activation: <b>relu</b>" in source and "Activation: <b>sigmoid</b>" in source
    # Four Dense layers train, "frozen" does not; inputs and ops have no weights, so no such cell.
    assert source.count("<b>Trainable</b>") == 4 and source.count("<b>Non-trainable</b>") == 1

    stack = model.get_layer("stack")
    titles, edges = names_and_edges(model_to_dot(stack, subgraph=True))
    assert sorted(titles.values()) == ["stack_a", "stack_b"] and edges == {("stack_a", "stack_b")}

    with pytest.raises(ValueError, match="not yet been built"):
        model_to_dot(kgraph.Sequential([layers.Dense(2)]))


@requires_dot
@pytest.mark.parametrize("extension, magic", [(".png", b"\x89PNG\r\n\x1a\n"), (".svg", b"<?xml"),
                                              (".pdf", b"%PDF")])
def test_plot_model_writes_the_format_of_the_extension(tmp_path, extension, magic):
    path = tmp_path / f"model{extension}"
    plot_model(nested_model(), to_file=path, show_shapes=True, show_layer_names=True, dpi=96)
    data = path.read_bytes()
    assert data.startswith(magic)
    assert len(data) > 5_000  # a drawing of twelve labelled boxes, not an empty page
    if extension == ".svg":
        text = data.decode()
        assert all(name in text for name in ("features", "hidden", "get_item", "inner", "stack", "frozen"))


@requires_pydot
def test_without_graphviz_the_error_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` program on the path
    with pytest.raises(ImportError, match="apt-get install graphviz"):
        plot_model(nested_model(), to_file=tmp_path / "model.png")
    assert not (tmp_path / "model.png").exists()


def test_without_pydot_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pydot", None)
    for function in (model_to_dot, plot_model):
        with pytest.raises(ImportError, match=r'pip install "kgraph-engine\[plot\]"'):
            function(nested_model())
