"""model.summary(): the Keras-style table of layers, shapes, parameters and connections."""
import re

import numpy as np


def _size(count, weights):
    nbytes = sum(int(np.prod(w.shape)) * np.dtype(w.dtype).itemsize for w in weights)
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1024 or unit == "GB":
            return f"{count:,} ({nbytes:.2f} {unit})"
        nbytes /= 1024


def _shape_text(layer, model_nodes):
    nodes = [n for n in layer._inbound_nodes if id(n) in model_nodes] or layer._inbound_nodes
    if not nodes:
        return "?"
    shapes = [tuple(t.shape) for t in nodes[0].output_tensors]
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)


def _connections(layer, model_nodes):
    out = []
    for node in layer._inbound_nodes:
        if id(node) not in model_nodes:
            continue
        for inbound, n, t in zip(node.inbound_layers, node.node_indices, node.tensor_indices):
            out.append(f"{inbound.name}[{n}][{t}]")
    return out


def _param_count(layer):
    if not getattr(layer, "built", False):  # op nodes have no weights
        return 0
    return sum(int(np.prod(w.shape)) for w in layer.weights)


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


def _trainable_mark(layer):
    if not getattr(layer, "weights", None):
        return "-"
    return "Y" if layer.trainable else "N"


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False,
                  show_trainable=False, layer_range=None):
    """Print (or pass line by line to ``print_fn``) the summary of ``model``.

    ``expand_nested`` lists the layers of nested models under them, ``show_trainable`` adds Keras's Trainable
    column (Y, N, or - for a layer without weights), ``layer_range`` shows only the layers from the first name
    matching its first pattern to the last matching its second.
    """
    print_fn = print_fn or print
    functional = hasattr(model, "nodes_by_depth") and model.built
    sequential_like = not functional or type(model).__name__ == "Sequential"
    model_nodes = set()
    if functional:
        model_nodes = {id(n) for nodes in model.nodes_by_depth.values() for n in nodes}
    columns = ["Layer (type)", "Output Shape", "Param #"] + ([] if sequential_like else ["Connected to"])
    line_length = line_length or (65 if sequential_like else 98)
    positions = positions or ([0.45, 0.85, 1.0] if sequential_like else [0.33, 0.55, 0.67, 1.0])
    stops = [int(line_length * p) if p <= 1 else int(p) for p in positions]
    if show_trainable:
        columns.append("Trainable")
        line_length += 11
        stops.append(line_length)

    def row(fields):
        line = ""
        for field, stop in zip(fields, stops):
            line = (line + " " + str(field))[: stop - 1].ljust(stop)
        return line.rstrip()

    def layer_rows(layer, level=0):
        prefix = "   " * level + "└ " if level else ""
        shape = _shape_text(layer, model_nodes) if functional else "(unbuilt)"
        fields = [f"{prefix}{layer.name} ({type(layer).__name__})", shape, f"{_param_count(layer):,}"]
        links = [] if sequential_like else (_connections(layer, model_nodes) if not level else []) or ["-"]
        rows = [fields + links[:1] + ([_trainable_mark(layer)] if show_trainable else [])]
        rows += [["", "", "", link] for link in links[1:]]
        if expand_nested and getattr(layer, "layers", None):
            for inner in layer.layers:
                rows += layer_rows(inner, level + 1)
        return rows

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_fn(row(columns))
    print_fn("=" * line_length)
    layers = model.operations if functional and hasattr(model, "operations") else model.layers
    first, last = layer_bounds(layers, layer_range)
    shown = layers[first:last]
    for i, layer in enumerate(shown):
        for fields in layer_rows(layer):
            print_fn(row(fields))
        print_fn(("=" if i == len(shown) - 1 else "_") * line_length)
    trainable = model.trainable_weights
    non_trainable = model.non_trainable_weights
    total = trainable + non_trainable
    count = lambda ws: sum(int(np.prod(w.shape)) for w in ws)  # noqa: E731
    print_fn(f"Total params: {_size(count(total), total)}")
    print_fn(f"Trainable params: {_size(count(trainable), trainable)}")
    print_fn(f"Non-trainable params: {_size(count(non_trainable), non_trainable)}")
    print_fn("_" * line_length)
