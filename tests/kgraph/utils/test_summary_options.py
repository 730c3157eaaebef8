"""model.summary's Keras 3 options: show_trainable, expand_nested, layer_range."""
import pytest

import kgraph
from kgraph import layers


def _model():
    inner = kgraph.Sequential([layers.Dense(4, name="inner_a"), layers.Dense(2, name="inner_b")], name="inner")
    x = kgraph.Input((3,), name="x")
    h = layers.Dense(5, name="d1")(x)
    y = layers.Dense(1, name="head")(inner(h))
    model = kgraph.Model(x, y)
    model.get_layer("d1").trainable = False
    return model


def _lines(model, **kwargs):
    out = []
    model.summary(print_fn=out.append, line_length=120, **kwargs)
    (text,) = out  # Keras 3 hands the whole summary to print_fn at once
    return text.splitlines()


def _cells(lines):
    """The cells of the table's body rows (the lines between the side borders '│')."""
    return [[cell.strip() for cell in line.strip("│").split("│")] for line in lines if line.startswith("│")]


def test_show_trainable_adds_keras_column():
    lines = _lines(_model(), show_trainable=True)
    assert [cell.strip() for cell in lines[2].strip("┃").split("┃")][-1] == "Trainable"
    marks = {row[0].split()[0]: row[-1] for row in _cells(lines)}
    assert marks["x"] == "-" and marks["d1"] == "N" and marks["inner"] == "Y" and marks["head"] == "Y"


def test_expand_nested_lists_inner_layers_under_their_model():
    lines = _lines(_model(), expand_nested=True)
    names = [row[0].split()[1] for row in _cells(lines) if row[0].startswith("└")]
    assert names == ["inner_a", "inner_b"]
    assert not any("└ " in line for line in _lines(_model()))


def test_layer_range_selects_by_name_patterns():
    lines = _lines(_model(), layer_range=["d1", "inner"])
    shown = [row[0].split()[0] for row in _cells(lines)]
    assert shown == ["d1", "inner"]
    with pytest.raises(ValueError, match="do not match the layer names"):
        _lines(_model(), layer_range=["nope", "head"])
    with pytest.raises(ValueError, match="two layer-name patterns"):
        _lines(_model(), layer_range=["d1"])
