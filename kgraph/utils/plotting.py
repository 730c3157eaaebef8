"""plot_model and model_to_dot: a model's graph of layers and operations drawn by Graphviz, through pydot."""
import html
import os


def _pydot(function):
    try:
        import pydot
    except ImportError as err:
        raise ImportError(f"You must install pydot for `{function}` to work: "
                          '`pip install "kgraph-engine[plot]"` (or `pip install pydot`).') from err
    return pydot


def _check_graphviz(pydot):
    try:
        pydot.Dot().create()  # renders an empty graph: fails when Graphviz's `dot` program is missing
    except OSError as err:
        raise ImportError(
            "You must install Graphviz (its `dot` program) for `plot_model` to work: on Debian or Ubuntu "
            "`apt-get install graphviz`, on macOS `brew install graphviz`, otherwise see "
            f"https://graphviz.org/download/. Received: {err}"
        ) from err


def _model_nodes(model):
    """The model's nodes, deepest first (the order the model runs them)."""
    return [node for depth in sorted(model.nodes_by_depth, reverse=True) for node in model.nodes_by_depth[depth]]


def _shape_text(tensors):
    shapes = [tuple(t.shape) for t in tensors]
    if not shapes:
        return "?"
    return str(shapes[0]) if len(shapes) == 1 else str(shapes)


def _label(op, node, show_layer_names, show_layer_activations, show_dtype, show_shapes, show_trainable):
    """An HTML-like Graphviz label: a black title row, then a row of the requested details."""
    class_name = type(op).__name__
    title = f"<b>{html.escape(op.name)}</b> ({class_name})" if show_layer_names else f"<b>{class_name}</b>"
    cells = []
    if show_shapes:
        if class_name != "InputLayer":
            cells.append(("white", "black", f"Input shape: <b>{_shape_text(node.input_tensors if node else [])}</b>"))
        cells.append(("white", "black", f"Output shape: <b>{_shape_text(node.output_tensors if node else [])}</b>"))
    if show_dtype:
        dtypes = ", ".join(str(t.dtype) for t in node.output_tensors) if node else "?"
        cells.append(("white", "black", f"Output dtype: <b>{dtypes}</b>"))
    if show_trainable and getattr(op, "weights", None):
        cells.append(("forestgreen", "white", "<b>Trainable</b>") if op.trainable
                     else ("firebrick", "white", "<b>Non-trainable</b>"))
    span = max(1, len(cells))
    rows = [f'<tr><td colspan="{span}" bgcolor="black"><font point-size="16" color="white">{title}</font></td></tr>']
    activation = getattr(op, "activation", None) if show_layer_activations else None
    if activation is not None:
        name = getattr(activation, "name", None) or getattr(activation, "__name__", None) or str(activation)
        rows.append(f'<tr><td colspan="{span}" bgcolor="white"><font point-size="14">Activation: '
                    f"<b>{html.escape(name)}</b></font></td></tr>")
    if cells:
        rows.append("<tr>" + "".join(f'<td bgcolor="{bg}"><font point-size="14" color="{fg}">{text}</font></td>'
                                     for bg, fg, text in cells) + "</tr>")
    return '<<table border="0" cellborder="1" bgcolor="black" cellpadding="10">' + "".join(rows) + "</table>>"


def _add_node(pydot, dot, op, node, options):
    dot.add_node(pydot.Node(str(id(op)), label=_label(op, node, **options), fontname="Helvetica", margin="0"))


def _add_edge(pydot, dot, source, destination):
    src, dst = str(id(source)), str(id(destination))
    if not dot.get_edge(src, dst):
        dot.add_edge(pydot.Edge(src, dst, penwidth="2"))


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
                 expand_nested=False, dpi=200, subgraph=False, show_layer_activations=False, show_trainable=False,
                 splines="ortho"):
    """A ``pydot.Dot`` of the model's layers and operations (a ``pydot.Cluster`` when ``subgraph``).

    expand_nested: draw nested Functional and Sequential models as dashed
        clusters of their own layers instead of one box each.
    rankdir: ``"TB"`` (top to bottom) or ``"LR"`` (left to right).
    splines: Graphviz's edge style: ``"ortho"``, ``"curved"``, ``"polyline"``, ``"spline"`` or ``"line"``.
    """
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling `build()` or by "
                         "calling the model on a batch of data.")
    from kgraph.layers.core.input_layer import InputLayer
    from kgraph.models.functional import Functional
    from kgraph.models.sequential import Sequential
    pydot = _pydot("model_to_dot")
    options = dict(show_layer_names=show_layer_names, show_layer_activations=show_layer_activations,
                   show_dtype=show_dtype, show_shapes=show_shapes, show_trainable=show_trainable)
    if subgraph:
        root = pydot.Cluster(graph_name=model.name, style="dashed", label=model.name, labeljust="l")
    else:
        root = pydot.Dot(rankdir=rankdir, concentrate=True, dpi=dpi, splines=splines)
        root.set_node_defaults(shape="plaintext")
    if not isinstance(model, (Functional, Sequential)):  # a subclassed model is one box
        _add_node(pydot, root, model, None, options)
        return root
    stack = [(model, root)]
    while stack:
        current, dot = stack.pop()
        is_sequential = isinstance(current, Sequential)
        nodes = [n for n in _model_nodes(current) if not (is_sequential and n.is_input)]
        first_node = {}
        for node in nodes:
            first_node.setdefault(id(node.outbound_layer), node)
        for op in current.layers if is_sequential else current.operations:
            if expand_nested and isinstance(op, (Functional, Sequential)):
                cluster = pydot.Cluster(graph_name=f"{op.name}_{id(op)}", style="dashed", label=op.name,
                                        labeljust="l")
                dot.add_subgraph(cluster)
                stack.append((op, cluster))
            else:
                _add_node(pydot, dot, op, first_node.get(id(op)), options)
        for node in nodes:
            for index, tensor in enumerate(node.input_tensors):
                source, _, output_index = tensor._keras_history
                if is_sequential and isinstance(source, InputLayer):  # a Sequential draws no input box
                    continue
                destination = node.outbound_layer
                while expand_nested and isinstance(source, (Functional, Sequential)):
                    source, _, output_index = source.outputs[output_index]._keras_history
                while expand_nested and isinstance(destination, (Functional, Sequential)):
                    destination = destination.layers[0] if isinstance(destination, Sequential) \
                        else destination.inputs[index]._keras_history.layer
                _add_edge(pydot, dot, source, destination)
    return root


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False, show_layer_names=False,
               rankdir="TB", expand_nested=False, dpi=200, show_layer_activations=False, show_trainable=False,
               splines="ortho"):
    """Draw the model with Graphviz into ``to_file``; the extension picks the format (png, svg, pdf, ...).

    Arguments as ``model_to_dot``. Returns an ``IPython.display.Image`` when
    IPython is installed and the file is not a PDF, else None.
    """
    if not model.built:
        raise ValueError("This model has not yet been built. Build the model first by calling `build()` or by "
                         "calling the model on a batch of data.")
    _check_graphviz(_pydot("plot_model"))
    dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype, show_layer_names=show_layer_names,
                       rankdir=rankdir, expand_nested=expand_nested, dpi=dpi,
                       show_layer_activations=show_layer_activations, show_trainable=show_trainable,
                       splines=splines)
    to_file = os.fspath(to_file)
    extension = os.path.splitext(to_file)[1][1:] or "png"
    dot.write(to_file, format=extension)
    if extension != "pdf":
        try:
            from IPython import display
        except ImportError:
            return None
        return display.Image(filename=to_file)
    return None
