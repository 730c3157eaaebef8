"""Model architecture <-> plain config dicts (JSON-compatible), for Functional and any layer."""
from __future__ import annotations

import collections
import inspect
from typing import TYPE_CHECKING

import numpy as np

from kgraph import tree
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.layers.layer import get_registered_layer
from kgraph.saving.registration import get_registered_name, get_registered_object

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    from kgraph.graph.operation import Operation
    from kgraph.models.functional import Functional
    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

    _ModelT = TypeVar("_ModelT", bound=Model)

OPS_MODULE = "kgraph.ops"


def serialize_layer(layer: Operation) -> dict[str, Any]:
    """``{"class_name", "config", "build_config"}`` for one layer (or op Operation)."""
    # A user's layer may keep Keras objects (an initializer, a nested layer, a function) in its ``get_config()``:
    # they are serialized as Keras serializes them, for its ``from_config`` to deserialize.
    config = layer.get_config()
    out = {"class_name": type(layer).__name__}
    if not type(layer).__module__.startswith("kgraph."):
        from kgraph.saving.serialization_lib import serialize_dict
        config = serialize_dict(config)
        if get_registered_name(type(layer)) != type(layer).__name__:
            out["registered_name"] = get_registered_name(type(layer))  # found by it, whatever shares its name
    out["config"] = config
    if getattr(layer, "op_name", None) is not None:
        out["module"] = OPS_MODULE  # op classes share names with layers (Add, Concatenate...)
    build = layer.get_build_config() if hasattr(layer, "get_build_config") and \
        not hasattr(layer, "nodes_by_depth") else None
    if build is not None:
        out["build_config"] = build
    return out


def _find_class(class_name, custom_objects, module=None, registered=None):
    from kgraph.ops.operations import get_op_class
    if module == OPS_MODULE:
        cls = get_op_class(class_name)
        if cls is None:
            raise ValueError(f"Unknown operation '{class_name}': no `kgraph.ops` function has that name.")
        return cls
    cls = (registered and get_registered_object(registered, custom_objects)) or \
        (custom_objects or {}).get(class_name) or get_registered_layer(class_name) or get_registered_object(class_name)
    if cls is None:
        raise ValueError(f"Unknown layer class '{class_name}'. If it is a custom layer, import the module "
                         f"that defines it before loading, or pass it as `custom_objects={{'{class_name}': "
                         f"{class_name}}}`.")
    return cls


def deserialize_layer(data: Mapping[str, Any], custom_objects: CustomObjects | None = None) -> Operation:
    """Rebuild a layer from ``serialize_layer`` output."""
    cls = _find_class(data["class_name"], custom_objects, data.get("module"), data.get("registered_name"))
    return instantiate_layer(cls, data, custom_objects)


def instantiate_layer(cls: type[Operation], data: Mapping[str, Any],
                      custom_objects: CustomObjects | None = None) -> Operation:
    """``cls.from_config`` of ``data["config"]`` (custom objects in scope), then built from its ``build_config``."""
    from kgraph.saving.registration import CustomObjectScope
    from kgraph.saving.serialization_lib import decode_arrays
    config = decode_arrays(dict(data["config"]))
    if isinstance(config.get("dtype"), dict):  # Keras's dtype policy, as Keras's Layer.from_config reads it
        config["dtype"] = config["dtype"].get("config", {}).get("name")
    with CustomObjectScope(custom_objects):
        if hasattr(cls, "nodes_by_depth") or data["class_name"] in ("Functional", "Sequential") or \
                "custom_objects" in inspect.signature(cls.from_config).parameters:
            layer = cls.from_config(config, custom_objects=custom_objects)
        else:
            layer = cls.from_config(config)
        if data.get("build_config") and not getattr(layer, "built", False):
            layer.build_from_config(_as_tuples(data["build_config"]))
            layer.built = True  # as Keras, whatever a layer's own build_from_config does
    return layer


def _as_tuples(config):
    """A build config with its shapes as tuples; the other keys a layer's ``get_build_config`` wrote, as they are."""
    out = dict(config)
    if config.get("input_shape") is not None:
        out["input_shape"] = _shapes_to_tuples(config["input_shape"])
    if config.get("extra_shapes"):
        out["extra_shapes"] = [None if s is None else _shapes_to_tuples(s) for s in config["extra_shapes"]]
    return out


def _shapes_to_tuples(value):
    if isinstance(value, (list, tuple)) and all(d is None or isinstance(d, int) for d in value):
        return tuple(value)
    if isinstance(value, dict):
        return {k: _shapes_to_tuples(v) for k, v in value.items()}
    return [_shapes_to_tuples(v) for v in value]


def functional_config(model: Functional) -> dict[str, Any]:
    """Keras-style functional config: operations with their inbound nodes, input and output layers."""
    operations = model.operations
    in_model = {id(node) for nodes in model.nodes_by_depth.values() for node in nodes}
    # Renumber each operation's nodes to those that belong to this model, in creation order.
    kept = {}
    for op in operations:
        count = 0
        for i, node in enumerate(op._inbound_nodes):
            if id(node) in in_model:
                kept[(id(op), i)] = count
                count += 1

    def ref(t):
        op, n, i = t._keras_history
        return [op.name, kept[(id(op), n)], i]

    def encode(value):
        return encode_argument(value, ref)

    layers = []
    for op in operations:
        data = serialize_layer(op)
        data["name"] = op.name
        nodes = []
        for i, node in enumerate(op._inbound_nodes):
            if (id(op), i) in kept and not node.is_input:
                nodes.append({"args": [encode(a) for a in node.call_args],
                              "kwargs": {k: encode(v) for k, v in node.call_kwargs.items()}})
        data["inbound_nodes"] = nodes
        layers.append(data)
    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": tree.map_structure(ref, model._inputs_struct),
            "output_layers": tree.map_structure(ref, model._outputs_struct)}


def encode_argument(value: Any, ref: Callable[[KerasTensor], list[Any]]) -> Any:
    """A call argument as plain data (Keras 3's forms): KerasTensors by ``ref``, tuples, slices, arrays."""
    if isinstance(value, KerasTensor):
        return {"class_name": "__keras_tensor__",
                "config": {"shape": list(value.shape), "dtype": value.dtype, "keras_history": ref(value)}}
    if isinstance(value, list):
        return [encode_argument(v, ref) for v in value]
    if isinstance(value, tuple):
        return {"class_name": "__tuple__", "config": {"value": [encode_argument(v, ref) for v in value]}}
    if isinstance(value, dict):
        return {k: encode_argument(v, ref) for k, v in value.items()}
    if isinstance(value, slice):
        return {"class_name": "__slice__", "config": {"start": encode_argument(value.start, ref),
                                                      "stop": encode_argument(value.stop, ref),
                                                      "step": encode_argument(value.step, ref)}}
    if value is Ellipsis:
        return {"class_name": "__ellipsis__", "config": {}}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"A call argument of dtype {value.dtype} cannot be saved in a model config; "
                            "expected a numeric array.")
        return {"class_name": "__numpy__", "config": {"value": value.tolist(), "dtype": value.dtype.name}}
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"A call argument of type {type(value).__name__} cannot be saved in a model config: "
                    f"{value!r}. Expected tensors, numbers, strings, slices, or lists/tuples/dicts of them.")


def decode_argument(value: Any, tensor: Callable[[list[Any]], KerasTensor | None]) -> Any:
    """Invert ``encode_argument``; ``tensor(ref)`` gives the KerasTensor of a reference (or None if not made)."""
    if isinstance(value, list):
        return [decode_argument(v, tensor) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"__keras_tensor__"}:  # the form kgraph wrote before Keras 3's
        return tensor(value["__keras_tensor__"])
    kind = value.get("class_name")
    config = value.get("config")
    if kind == "__keras_tensor__":
        return tensor(config["keras_history"])
    if kind == "__tuple__":
        return tuple(decode_argument(v, tensor) for v in config["value"])
    if kind == "__slice__":
        return slice(*(decode_argument(config[k], tensor) for k in ("start", "stop", "step")))
    if kind == "__ellipsis__":
        return Ellipsis
    if kind == "__numpy__":
        return np.asarray(config["value"], dtype=config["dtype"])
    return {k: decode_argument(v, tensor) for k, v in value.items()}


def _is_ref(value):
    return isinstance(value, list) and len(value) == 3 and isinstance(value[0], str) \
        and isinstance(value[1], int) and isinstance(value[2], int)


def _map_refs(fn, structure):
    if _is_ref(structure):
        return fn(structure)
    if isinstance(structure, dict):
        return {k: _map_refs(fn, v) for k, v in structure.items()}
    return [_map_refs(fn, v) for v in structure]


def functional_from_config(cls: type[_ModelT], config: Mapping[str, Any],
                           custom_objects: CustomObjects | None = None) -> _ModelT:
    """Rebuild a Functional from ``functional_config`` output, re-calling each layer once per node."""
    created = {}
    pending = collections.deque()
    for data in config["layers"]:
        layer = deserialize_layer(data, custom_objects)
        created[data.get("name", layer.name)] = layer
        pending.extend((data.get("name", layer.name), layer, node) for node in data.get("inbound_nodes", []))

    def tensor(ref):
        name, n, i = ref
        layer = created.get(name)
        if layer is None:
            raise ValueError(f"The model config refers to an unknown layer '{name}'.")
        if n >= len(layer._inbound_nodes):
            return None
        return layer._inbound_nodes[n].output_tensors[i]

    def decode(value, missing):
        def find(ref):
            t = tensor(ref)
            if t is None:
                missing.append(ref)
            return t
        return decode_argument(value, find)

    # A node whose inputs are not computed yet waits for the next call of the layer it needs (linear in the nodes,
    # whatever order the config lists them in).
    waiting = collections.defaultdict(list)
    while pending:
        name, layer, node = pending.popleft()
        missing = []
        args = decode(node["args"], missing)
        kwargs = decode(node["kwargs"], missing)
        if missing:
            waiting[missing[0][0]].append((name, layer, node, missing))
            continue
        layer(*args, **kwargs)
        pending.extend(entry[:3] for entry in waiting.pop(name, ()))
    if waiting:
        _, layer, _, missing = next(iter(waiting.values()))[0]
        raise ValueError(f"Cannot rebuild the model: layer '{layer.name}' needs outputs of layers that are never "
                         f"computed: {missing[:5]}")
    inputs = _map_refs(tensor, config["input_layers"])
    outputs = _map_refs(tensor, config["output_layers"])
    return cls(inputs, outputs, name=config.get("name"), trainable=config.get("trainable", True))
