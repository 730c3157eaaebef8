"""Model architecture <-> plain config dicts (JSON-compatible), for Functional and any layer."""
import collections

from kgraph import tree
from kgraph.keras_tensor import KerasTensor
from kgraph.layer import get_registered_layer


def serialize_layer(layer):
    """``{"class_name", "config", "build_config"}`` for one layer."""
    out = {"class_name": type(layer).__name__, "config": layer.get_config()}
    build = layer.get_build_config() if not hasattr(layer, "nodes_by_depth") else None
    if build is not None:
        out["build_config"] = build
    return out


def _find_class(class_name, custom_objects):
    cls = (custom_objects or {}).get(class_name) or get_registered_layer(class_name)
    if cls is None:
        raise ValueError(f"Unknown layer class '{class_name}'. If it is a custom layer, import the module "
                         f"that defines it before loading, or pass it as `custom_objects={{'{class_name}': "
                         f"{class_name}}}`.")
    return cls


def deserialize_layer(data, custom_objects=None):
    """Rebuild a layer from ``serialize_layer`` output."""
    cls = _find_class(data["class_name"], custom_objects)
    if hasattr(cls, "nodes_by_depth") or data["class_name"] in ("Functional", "Sequential"):
        layer = cls.from_config(data["config"], custom_objects=custom_objects)
    else:
        layer = cls.from_config(dict(data["config"]))
    if data.get("build_config"):
        layer.build_from_config(_as_tuples(data["build_config"]))
    return layer


def _as_tuples(config):
    if config.get("input_shape") is None:
        return config
    out = {"input_shape": _shapes_to_tuples(config["input_shape"])}
    if config.get("extra_shapes"):
        out["extra_shapes"] = [None if s is None else _shapes_to_tuples(s) for s in config["extra_shapes"]]
    return out


def _shapes_to_tuples(value):
    if isinstance(value, (list, tuple)) and all(d is None or isinstance(d, int) for d in value):
        return tuple(value)
    if isinstance(value, dict):
        return {k: _shapes_to_tuples(v) for k, v in value.items()}
    return [_shapes_to_tuples(v) for v in value]


def functional_config(model):
    """Keras-style functional config: layers with their inbound nodes, input and output layers."""
    in_model = {id(node) for nodes in model.nodes_by_depth.values() for node in nodes}
    # Renumber each layer's nodes to those that belong to this model, in creation order.
    kept = {}
    for layer in model.layers:
        count = 0
        for i, node in enumerate(layer._inbound_nodes):
            if id(node) in in_model:
                kept[(id(layer), i)] = count
                count += 1

    def ref(t):
        layer, n, i = t._keras_history
        return [layer.name, kept[(id(layer), n)], i]

    def encode(value):
        if isinstance(value, KerasTensor):
            return {"__keras_tensor__": ref(value)}
        return value

    layers = []
    for layer in model.layers:
        data = serialize_layer(layer)
        data["name"] = layer.name
        nodes = []
        for i, node in enumerate(layer._inbound_nodes):
            if (id(layer), i) in kept and not node.is_input:
                nodes.append({"args": tree.map_structure(encode, list(node.call_args)),
                              "kwargs": tree.map_structure(encode, node.call_kwargs)})
        data["inbound_nodes"] = nodes
        layers.append(data)
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": tree.map_structure(ref, model._inputs_struct),
            "output_layers": tree.map_structure(ref, model._outputs_struct)}


def _is_ref(value):
    return isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) \
        and isinstance(value[1], int) and isinstance(value[2], int)


def _map_refs(fn, structure):
    if _is_ref(structure):
        return fn(structure)
    if isinstance(structure, dict):
        return {k: _map_refs(fn, v) for k, v in structure.items()}
    return [_map_refs(fn, v) for v in structure]


def functional_from_config(cls, config, custom_objects=None):
    """Rebuild a Functional from ``functional_config`` output, re-calling each layer once per node."""
    created = {}
    pending = collections.deque()
    for data in config["layers"]:
        layer = deserialize_layer(data, custom_objects)
        created[data.get("name", layer.name)] = layer
        pending.extend((layer, node) for node in data.get("inbound_nodes", []))

    def tensor(ref):
        name, n, i = ref
        layer = created.get(name)
        if layer is None:
            raise ValueError(f"The model config refers to an unknown layer '{name}'.")
        if n >= len(layer._inbound_nodes):
            return None
        return layer._inbound_nodes[n].output_tensors[i]

    def decode(value, missing):
        if isinstance(value, dict) and set(value) == {"__keras_tensor__"}:
            t = tensor(value["__keras_tensor__"])
            if t is None:
                missing.append(value["__keras_tensor__"])
            return t
        if isinstance(value, dict):
            return {k: decode(v, missing) for k, v in value.items()}
        if isinstance(value, list):
            return [decode(v, missing) for v in value]
        return value

    stalled = 0
    while pending:
        layer, node = pending.popleft()
        missing = []
        args = decode(node["args"], missing)
        kwargs = decode(node["kwargs"], missing)
        if missing:
            pending.append((layer, node))
            stalled += 1
            if stalled > len(pending):
                raise ValueError(f"Cannot rebuild the model: layer '{layer.name}' needs outputs of layers "
                                 f"that are never computed: {missing}")
            continue
        stalled = 0
        layer(*args, **kwargs)
    inputs = _map_refs(tensor, config["input_layers"])
    outputs = _map_refs(tensor, config["output_layers"])
    return cls(inputs, outputs, name=config.get("name"), trainable=config.get("trainable", True))
