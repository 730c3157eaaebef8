"""Keras 3 configs (``config.json`` of a ``.keras`` archive) -> kgraph's serialized layers.

Keras writes every object as ``{"module", "class_name", "config", "registered_name"}``. Classes are looked up
by name: a user's among the custom objects (``custom_objects``, open scopes, registered ones), Keras's in kgraph's
own registries (layers, ``kgraph.ops``, initializers, regularizers, constraints); no module named in the file is
ever imported, so reading a config never runs code from it.
"""
from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING

from kgraph import constraints, initializers, regularizers
from kgraph.layers.layer import get_registered_layer
from kgraph.ops.operations import get_op_class
from kgraph.saving.file_limits import short_repr, short_text
from kgraph.saving.registration import custom_objects_in_effect, defined_in, get_registered_name
from kgraph.saving.serialization import OPS_MODULE
from kgraph.saving.serialization_lib import custom_class, decode_arrays, family, function_by_name

if TYPE_CHECKING:
    from collections.abc import Container, Mapping
    from typing import Any

    from kgraph.saving.registration import CustomObjects

_PLAIN_FORMS = ("__keras_tensor__", "__tuple__", "__slice__", "__numpy__", "__ellipsis__")
_MODEL_CLASSES = ("Functional", "Sequential")
# Keras arguments whose saved value has no effect unless another argument, left unset, enables them.
_INERT = {("renorm_momentum", 0.99)}
# Keras arguments that a layer writes and its constructor discards (it recomputes them).
_DERIVED = {"TextVectorization": ("vocabulary_size",)}
def _unknown(kind, data, path):
    name = short_text(data.get("class_name"), 100)
    module = f" (module '{short_text(data['module'], 100)}')" if data.get("module") else ""
    return ValueError(f"Unknown {kind} '{name}'{module} at {path} of the .keras config: kgraph has no built-in "
                      f"{kind} of that name. If it is your own, pass it when loading: "
                      f"`custom_objects={{'{name}': {name}}}`.")


def _is_object(value):
    return isinstance(value, dict) and "class_name" in value and "config" in value


def _module(data):
    return data.get("module") or ""


def layer_from_keras(data: Mapping[str, Any], custom_objects: CustomObjects | None,
                     path: str = "config") -> dict[str, Any]:
    """One Keras-serialized layer, model or op as kgraph's ``{"class_name", "config"[, "module"]}``."""
    return _layer(data, custom_objects_in_effect(custom_objects), path)


def _layer(data, custom_objects, path):
    if not _is_object(data):
        raise ValueError(f"Expected a Keras object with 'class_name' and 'config' at {path} of the .keras config. "
                         f"Received: {short_repr(data)}")
    class_name = data["class_name"]
    cls = custom_class(data, custom_objects)
    functional = _functional_subclass(cls, data) or (cls is None and _functional_subclass(
        get_registered_layer(class_name), data, same_module=True))
    if functional:
        # A Model subclass built the functional way (`CustomModel(inputs, outputs)`): Keras saves its graph as a
        # Functional's config under the subclass's name; Model.from_config rebuilds the graph as that class.
        key = _custom_key(data, cls, custom_objects) if cls is not None else class_name
        return dict(_model_from_keras(data, custom_objects, path), class_name=key)
    if cls is not None:
        config = _value(data["config"], custom_objects, path)
        out = {"class_name": _custom_key(data, cls, custom_objects), "config": config}
        if data.get("module") and custom_objects.get(out["class_name"]) is not cls:
            out["module"] = data["module"]  # found among the imported classes: deserialize looks there again
        return _with_build_config(out, data)
    if _module(data).startswith(("keras.src.ops.", "keras.ops")):
        if get_op_class(class_name) is None:
            raise _unknown("operation class", data, path)
        return {"class_name": class_name, "module": OPS_MODULE,
                "config": _value(data["config"], custom_objects, path)}
    if class_name in _MODEL_CLASSES:
        return _model_from_keras(data, custom_objects, path)
    cls = get_registered_layer(class_name)
    # A user's layer class counts only when its module, already imported by the user, is the one the file names.
    if cls is None or not (_module(data).startswith("keras") or defined_in(cls, _module(data))):
        raise _unknown("layer class", data, path)
    config, functions = data["config"], {}
    if class_name == "Bidirectional":
        config = _without_zero_output_for_mask(config)
    if class_name == "Lambda":  # kgraph's Lambda takes its functions from custom_objects, by name
        functions = {k: v for k, v in config.items() if _is_object(v) and v["class_name"] == "function"}
        config = {k: v for k, v in config.items() if k not in functions}
    config = _value(config, custom_objects, f"{path}['{class_name}']")
    out = {"class_name": class_name, "config": {**_supported_arguments(cls, config, path), **functions}}
    return out if cls.__module__.startswith("kgraph.") else _with_build_config(out, data)


def _functional_subclass(cls, data, same_module=False):
    """Whether ``data`` is the graph of ``cls``, a user's Model subclass (found in the registry: from the module
    the file names)."""
    from kgraph.models.model import Model
    return isinstance(cls, type) and issubclass(cls, Model) and cls.__name__ not in _MODEL_CLASSES and \
        (not same_module or defined_in(cls, _module(data))) and isinstance(data.get("config"), dict) and \
        {"layers", "input_layers", "output_layers"} <= set(data["config"])


def _custom_key(data, cls, custom_objects):
    """The name ``cls`` is found by among the custom objects (its class name where only registration knows it)."""
    for key in (data.get("registered_name"), data["class_name"], get_registered_name(cls)):
        if isinstance(key, str) and custom_objects.get(key) is cls:
            return key
    return data["class_name"]


def _with_build_config(out, data):
    """A user's layer or model keeps Keras's ``build_config`` whole: what its ``get_build_config`` wrote."""
    # Built from it, its sub-layers have their weights before the weights file is read.
    build = data.get("build_config")
    if isinstance(build, dict) and (set(build) - {"input_shape"} or build.get("input_shape") is not None):
        out["build_config"] = dict(build)
    return out


def _without_zero_output_for_mask(config):
    """Keras saves the wrapped layers' ``zero_output_for_mask``; kgraph's Bidirectional sets it the same way."""
    config = dict(config)
    for key in ("layer", "backward_layer"):
        if _is_object(config.get(key)):
            inner = {k: v for k, v in config[key]["config"].items() if k != "zero_output_for_mask"}
            config[key] = dict(config[key], config=inner)
    return config


def _model_from_keras(data, custom_objects, path):
    config = data["config"]
    layers = []
    for i, entry in enumerate(config.get("layers", [])):
        layer = _layer(entry, custom_objects, f"{path}.layers[{i}]")
        if "name" in entry:
            layer["name"] = entry["name"]
        if "inbound_nodes" in entry:
            layer["inbound_nodes"] = _value(entry["inbound_nodes"], custom_objects, f"{path}.layers[{i}]")
            _without_mask_arguments(layer, custom_objects)
        if layer.get("module") == OPS_MODULE:
            _arguments_to_calls(layer)
        layers.append(layer)
    if data["class_name"] == "Sequential":
        return _sequential(data, layers)
    kept = {k: config[k] for k in ("name", "trainable") if k in config}
    nested = {entry.get("name") for entry in config.get("layers", []) if entry.get("class_name") == "Functional"}
    for key in ("input_layers", "output_layers"):
        kept[key] = shift_model_refs(config[key], nested, -1)
    return {"class_name": "Functional", "config": {**kept, "layers": layers}}


def _sequential(data, layers):
    """A Keras Sequential, its batch dimension left free unless a layer is stateful."""
    # Keras records the batch size of the data that built it (its first ``fit``), and runs other sizes all the same.
    config = data["config"]
    out = {"class_name": "Sequential", "config": {"name": config.get("name"), "layers": layers,
                                                  "trainable": config.get("trainable", True)}}
    stateful = any(entry["config"].get("stateful") for entry in layers)
    if layers and layers[0]["class_name"] == "InputLayer" and not stateful:
        first = layers[0]["config"]
        if first.get("batch_shape"):
            layers[0] = dict(layers[0], config=dict(first, batch_shape=[None, *first["batch_shape"][1:]]))
    shape = (data.get("build_config") or {}).get("input_shape") or config.get("build_input_shape")
    if shape is not None and not any(entry["class_name"] == "InputLayer" for entry in layers):
        out["build_config"] = {"input_shape": shape if stateful else [None, *shape[1:]]}
    return out


def _without_mask_arguments(layer, custom_objects):
    """Drop the ``mask`` Keras recorded in the calls of a layer whose kgraph ``call`` takes none."""
    # kgraph propagates the mask itself; of the layers concerned, a mask changes only the training statistics of
    # Keras's BatchNormalization, which kgraph's does not mask.
    cls = custom_objects.get(layer["class_name"]) or get_registered_layer(layer["class_name"])
    if layer.get("module") == OPS_MODULE or not isinstance(cls, type) or not hasattr(cls, "call"):
        return
    params = inspect.signature(cls.call).parameters
    if "mask" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    for node in layer["inbound_nodes"]:
        if isinstance(node, dict) and "mask" in node.get("kwargs", {}):
            node["kwargs"] = {k: v for k, v in node["kwargs"].items() if k != "mask"}


def shift_model_refs(structure: list[Any] | dict[str, Any], names: Container[str],
                     delta: int) -> list[Any] | dict[str, Any]:
    """Keras numbers a nested Functional's nodes from 1 in ``input_layers``/``output_layers`` (node 0 is the
    model's own); kgraph numbers them from 0. Shifts the node index of references to ``names`` by ``delta``."""
    if isinstance(structure, list) and len(structure) == 3 and isinstance(structure[0], str):
        name, node, index = structure
        return [name, node + delta if name in names else node, index]
    if isinstance(structure, dict):
        return {k: shift_model_refs(v, names, delta) for k, v in structure.items()}
    return [shift_model_refs(v, names, delta) for v in structure]


def _arguments_to_calls(op):
    """Keras ops hold their non-tensor arguments in the config; kgraph ops take them in each call."""
    config = op["config"]
    keywords = {k: v for k, v in config.items() if k != "name"}
    op["config"] = {"name": config.get("name")}
    for node in op.get("inbound_nodes", []):
        node["kwargs"] = {**keywords, **node.get("kwargs", {})}
        if op["class_name"] == "GetItem" and len(node["args"]) == 2 and isinstance(node["args"][1], list):
            node["args"][1] = {"class_name": "__tuple__", "config": {"value": node["args"][1]}}  # Keras saves a list


def _value(value, custom_objects, path):
    """Translate the Keras objects inside one config value (dtype policies, initializers, nested layers...)."""
    if isinstance(value, list):
        return [_value(v, custom_objects, path) for v in value]
    if not isinstance(value, dict):
        return value
    if not _is_object(value):
        return {k: _value(v, custom_objects, f"{path}.{k}") for k, v in value.items()}
    class_name, module = value["class_name"], _module(value)
    if class_name in _PLAIN_FORMS:
        return {"class_name": class_name, "config": _value(value["config"], custom_objects, path)}
    if class_name == "__lambda__":
        raise ValueError(f"Refusing to load the Python bytecode stored at {path} of the .keras config (a `lambda`): "
                         "kgraph never runs code from a model file. Re-create the function in code and pass it "
                         "by name in `custom_objects`.")
    if class_name.endswith("DTypePolicy"):
        return _dtype(value, path)
    if class_name == "function":
        return _function(value, custom_objects, path)
    if custom_class(value, custom_objects) is None:
        kind = family(module)
        if kind in _OBJECT_FAMILIES:
            return _OBJECT_FAMILIES[kind](value, path)
    return _layer(value, custom_objects, path)


def _function(value, custom_objects, path):
    """A saved function: a custom or registered one, or kgraph's of that name (an activation, a loss)."""
    name = value["config"]
    found = function_by_name(name, _module(value), custom_objects) if isinstance(name, str) else None
    if found is None:
        raise _unknown("function", dict(value, class_name=name), path)
    return found


def _dtype(value, path):
    from kgraph.dtype_policies import DTypePolicy
    name = value["config"].get("name")
    try:
        if not isinstance(name, str):
            raise ValueError("a policy is named by a string")
        DTypePolicy(name)  # refuses what kgraph does not compute (bfloat16, quantized policies) by name
    except (ValueError, TypeError) as err:
        raise ValueError(f"kgraph cannot use the dtype policy {short_repr(name)} "
                         f"({short_text(value['class_name'], 80)}) at {path} of the .keras config: {err}") from None
    return name


def _initializer(value, path):
    return initializer_config(value["class_name"], value["config"], path, value)


def initializer_config(class_name: str, config: Mapping[str, Any], path: str,
                       data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """kgraph's ``{"class_name", "config"}`` of a Keras initializer: unset arguments kgraph lacks are dropped."""
    try:
        cls = type(initializers.get({"class_name": class_name, "config": {}}))
    except (ValueError, TypeError):
        raise _unknown("initializer class", data or {"class_name": class_name}, path) from None
    accepted = constructor_arguments(cls)
    config = {k: decode_arrays(v) for k, v in config.items() if v is not None or k in accepted}
    extra = sorted(set(config) - accepted)
    if extra:
        raise ValueError(f"Initializer {class_name} at {path} of the .keras config uses arguments kgraph does not "
                         f"support: {short_repr(extra)}. Received: {short_repr(config)}")
    return {"class_name": class_name, "config": config}


def _regularizer(value, path):
    if value["class_name"] not in regularizers._CLASSES:
        raise _unknown("regularizer class", value, path)
    return {"class_name": value["class_name"], "config": value["config"]}


def _constraint(value, path):
    try:
        constraints.deserialize({"class_name": value["class_name"], "config": value["config"]})
    except (ValueError, TypeError):
        raise _unknown("constraint class", value, path) from None
    return {"class_name": value["class_name"], "config": value["config"]}


_OBJECT_FAMILIES = {"initializers": _initializer, "regularizers": _regularizer, "constraints": _constraint}


def constructor_arguments(cls: type) -> set[str]:
    """Constructor argument names of ``cls``, following ``**kwargs`` up the class hierarchy."""
    names = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters
        names.update(n for n, p in params.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self")
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            break
    return names


def _supported_arguments(cls, config, path):
    """``config`` without Keras arguments kgraph lacks, when they are left at values that change nothing."""
    accepted = constructor_arguments(cls)
    out = {}
    for key, value in config.items():
        if key in accepted:
            out[key] = value
        elif key.endswith("_constraint") and value is not None:
            warnings.warn(f"kgraph's {cls.__name__} takes no `{key}`: {value['class_name']} at {path} of the .keras "
                          "config is dropped (predictions are unchanged; training will not enforce it).", stacklevel=2)
        elif value not in (None, False, 0, 0.0, [], {}) and (key, value) not in _INERT \
                and key not in _DERIVED.get(cls.__name__, ()):
            raise ValueError(f"Layer '{config.get('name')}' ({cls.__name__}) at {path} of the .keras config uses "
                             f"`{key}={short_repr(value)}`, which kgraph does not support.")
    return out
