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
    model.summary(print_fn=out.append, **kwargs)
    return out


def test_show_trainable_adds_keras_column():
    lines = _lines(_model(), show_trainable=True)
    assert lines[2].rstrip().endswith("Trainable")
    marks = {line.split()[0]: line.split()[-1] for line in lines if line.startswith(" ") and "(" in line}
    assert marks["x"] == "-" and marks["d1"] == "N" and marks["inner"] == "Y" and marks["head"] == "Y"


def test_expand_nested_lists_inner_layers_under_their_model():
    lines = _lines(_model(), expand_nested=True)
    names = [line.split()[1] for line in lines if "└" in line]
    assert names == ["inner_a", "inner_b"]
    assert not any("└" in line for line in _lines(_model()))


def test_layer_range_selects_by_name_patterns():
    lines = _lines(_model(), layer_range=["d1", "inner"])
    shown = [line.split()[0] for line in lines if line.startswith(" ") and "(" in line and "Layer" not in line]
    assert shown == ["d1", "inner"]
    with pytest.raises(ValueError, match="do not match the layer names"):
        _lines(_model(), layer_range=["nope", "head"])
    with pytest.raises(ValueError, match="two layer-name patterns"):
        _lines(_model(), layer_range=["d1"])
