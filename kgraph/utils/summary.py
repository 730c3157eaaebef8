"""model.summary(): Keras 3's box table of layers, output shapes and parameters ("Connected to" for branching graphs).

``summary_table`` collects what Keras 3 shows, with its rules: a Sequential model, a subclassed one and a
Functional one that is a plain chain get three columns, any other Functional graph a "Connected to" column too;
``show_trainable`` adds "Trainable"; the widths follow ``line_length`` and ``positions`` (fractions of the line,
or absolute positions when above 1) and shrink to the terminal. ``kgraph.utils.summary_table`` draws it.
"""
from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING

import numpy as np

from kgraph.utils.summary_table import SummaryTable, render_rich, render_text

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def _size(weights):
    """Keras's ``count (memory)`` of ``weights``, memory counted once per variable."""
    count = sum(int(np.prod(w.shape)) for w in weights)
    unique = {id(w): w for w in weights}.values()
    nbytes = float(sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in unique))
    for unit in _UNITS:
        if nbytes / 1024 < 1 or unit == _UNITS[-1]:
            return f"{count:,} ({nbytes:.2f} {unit})"
        nbytes /= 1024


def _shape_text(shape):
    return "(" + ", ".join(str(dim) for dim in shape) + ")"


def _output_shape(layer, model_nodes):
    """The output shape(s) of the layer's last call in the model (any call if none is), else of the shape it was
    built for (a layer of a subclassed model), or '?'."""
    nodes = [n for n in layer._inbound_nodes if id(n) in model_nodes] or list(layer._inbound_nodes)
    if nodes:
        shapes = [tuple(t.shape) for t in nodes[-1].output_tensors]
    elif getattr(layer, "_build_input_shape", None) is not None:
        try:
            shapes = layer.compute_output_shape(layer._build_input_shape)
        except Exception:  # noqa: BLE001  (a layer that cannot say its output shape: Keras shows '?')
            return "?"
        shapes = [tuple(s) for s in shapes] if shapes and isinstance(shapes[0], (tuple, list)) else [tuple(shapes)]
    else:
        return "?"
    texts = [_shape_text(shape) for shape in shapes]
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _connections(layer, model_nodes):
    """``name[node][tensor]`` of every tensor feeding the layer's calls in the model, or '-'."""
    links = [f"{t._keras_history.layer.name}[{t._keras_history.node_index}][{t._keras_history.tensor_index}]"
             for node in layer._inbound_nodes if id(node) in model_nodes for t in node.input_tensors]
    return ", ".join(links) or "-"


def _params(layer):
    if not hasattr(layer, "built"):  # an op node of the graph: no weights
        return "0"
    if not layer.built:
        return "0 (unbuilt)"
    return f"{sum(int(np.prod(w.shape)) for w in layer.weights):,}"


def _trainable_mark(layer):
    if not getattr(layer, "weights", None):
        return "-"
    return "Y" if layer.trainable else "N"


def _graph(model):
    """``(layers to list, ids of the model's nodes, whether Keras calls it sequential-like)``."""
    from kgraph.models.functional import Functional
    from kgraph.models.sequential import Sequential
    if isinstance(model, Sequential):
        nodes = model.functional.nodes_by_depth.values() if model.built else []
        return model.layers, {id(n) for group in nodes for n in group}, True
    if not isinstance(model, Functional):
        return model.layers, set(), True
    depths = model.nodes_by_depth.values()
    model_nodes = {id(n) for group in depths for n in group}
    chain = all(len(group) == 1 and len(group[0].input_tensors) <= 1 for group in depths)
    # A layer called twice in the graph (shared) also needs the connections to be read.
    shared = any(sum(id(n) in model_nodes for n in layer._inbound_nodes) > 1 for layer in model.layers)
    return list(model.operations), model_nodes, chain and not shared


def layer_bounds(layers, layer_range=None):
    """``[first, last + 1]`` of the layers whose names match ``layer_range``'s two patterns (Keras's rule)."""
    if layer_range is None:
        return 0, len(layers)
    if len(layer_range) != 2 or not all(isinstance(name, str) for name in layer_range):
        raise ValueError("layer_range must be a list or tuple of two layer-name patterns (strings). "
                         f"Received: layer_range={layer_range!r}")
    lower = [i for i, layer in enumerate(layers) if re.match(layer_range[0], layer.name)]
    upper = [i for i, layer in enumerate(layers) if re.match(layer_range[1], layer.name)]
    if not lower or not upper:
        raise ValueError(f"Passed layer_names do not match the layer names in the model. Received: {layer_range}")
    if min(lower) > max(upper):
        return min(upper), max(lower) + 1
    return min(lower), max(upper) + 1


def _layout(sequential_like, line_length, positions, show_trainable):
    """Headers, justification, column widths and the table's width, as Keras 3 computes them."""
    headers = ["Layer (type)", "Output Shape", "Param #"]
    justify = ["left", "left", "right"]
    if sequential_like:
        default, positions = 88, positions or [0.45, 0.80, 1.0]
    else:
        default, positions = 108, positions or [0.3, 0.56, 0.74, 1.0]
        headers.append("Connected to")
        justify.append("left")
    if show_trainable:
        default += 12
        positions = [p * 0.90 for p in positions] + [1.0]
        headers.append("Trainable")
        justify.append("center")
    line_length = line_length or min(default, shutil.get_terminal_size().columns - 4)
    widths, current = [], 0
    for position in positions:
        width = (int(position * line_length) if position <= 1 else int(position)) - current
        if width < 4:
            raise ValueError("Insufficient console width to print summary.")
        widths.append(width)
        current += width
    return headers, justify, widths, line_length


def _rows(layers, model_nodes, sequential_like, expand_nested, show_trainable):
    rows = []

    def add(layer, level):
        prefix = "   " * level + "└ " if level else ""
        row = [f"{prefix}{layer.name} ({type(layer).__name__})", _output_shape(layer, model_nodes), _params(layer)]
        row += [] if sequential_like else [_connections(layer, model_nodes)]
        row += [_trainable_mark(layer)] if show_trainable else []
        rows.append(row)
        if expand_nested and getattr(layer, "layers", None):
            for inner in layer.layers:
                add(inner, level + 1)

    for layer in layers:
        add(layer, 0)
    return rows


def summary_table(model, line_length: int | None = None, positions: Sequence[float] | None = None,
                  expand_nested: bool = False, show_trainable: bool = False,
                  layer_range: Sequence[str] | None = None) -> SummaryTable:
    """What ``model.summary()`` shows, with Keras 3's columns, widths, rows and parameter counts."""
    layers, model_nodes, sequential_like = _graph(model)
    headers, justify, widths, line_length = _layout(sequential_like, line_length, positions, show_trainable)
    first, last = layer_bounds(layers, layer_range)
    rows = _rows(layers[first:last], model_nodes, sequential_like, expand_nested, show_trainable)
    trainable, non_trainable = list(model.trainable_weights), list(model.non_trainable_weights)
    optimizer = getattr(model, "optimizer", None) if getattr(model, "compiled", False) else None
    optimizer_weights = []
    if optimizer is not None and getattr(optimizer, "built", False):
        from kgraph.saving.keras_compile import optimizer_variables
        optimizer_weights = optimizer_variables(model)  # Keras's list: iterations, learning rate, then slots
    footer = [f" Total params: {_size(trainable + non_trainable + optimizer_weights)}",
              f" Trainable params: {_size(trainable)}",
              f" Non-trainable params: {_size(non_trainable)}"]
    if optimizer_weights:
        footer.append(f" Optimizer params: {_size(optimizer_weights)}")
    return SummaryTable(f'Model: "{model.name}"', headers, justify, widths, line_length, rows, footer)


def print_summary(model, line_length: int | None = None, positions: Sequence[float] | None = None,
                  print_fn: Callable[[str], object] | None = None, expand_nested: bool = False,
                  show_trainable: bool = False, layer_range: Sequence[str] | None = None) -> None:
    """Print the summary of ``model``, or hand it to ``print_fn`` as one string, as Keras 3 does.

    ``expand_nested`` lists the layers of nested models under them, ``show_trainable`` adds Keras's Trainable
    column (Y, N, or - for a layer without weights), ``layer_range`` shows only the layers from the first name
    matching its first pattern to the last matching its second. The table is drawn by ``rich`` (in colour on a
    terminal) when it is installed, else as the same table in plain text.
    """
    table = summary_table(model, line_length, positions, expand_nested, show_trainable, layer_range)
    try:
        import rich  # noqa: F401
    except ImportError:
        text = render_text(table)
        (print_fn or (lambda summary: print(summary, end="")))(text)
        return
    _, text = render_rich(table, terminal=print_fn is None)
    if print_fn is not None:
        print_fn(text)
