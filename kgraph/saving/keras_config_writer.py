"""kgraph models -> Keras 3 configs (the ``config.json`` of a ``.keras`` archive that Keras loads)."""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import numpy as np

from kgraph.layers.layer import get_registered_layer
from kgraph.saving.keras_config_reader import shift_model_refs
from kgraph.saving.registration import get_registered_name, get_registered_object
from kgraph.saving.serialization import OPS_MODULE, serialize_layer
from kgraph.saving.serialization_lib import serialize_keras_object

if TYPE_CHECKING:
    from typing import Any

    from kgraph.models.model import Model

_OP_MODULES = {
    "nn": ("AveragePool Conv ConvTranspose DepthwiseConv Elu Gelu HardSigmoid HardSilu LeakyRelu LogSigmoid "
           "LogSoftmax MaxPool Moments OneHot Relu Relu6 Selu SeparableConv Sigmoid Silu Softmax Softplus "
           "Softsign").split(),
    "math": "Erf Erfc Logsumexp Rsqrt".split(),
    "core": "Cast StopGradient Unstack".split(),
}
_OP_MODULE = {name: f"keras.src.ops.{module}" for module, names in _OP_MODULES.items() for name in names}
# kgraph ops without a Keras Operation of the same name (fused or kgraph-only); any other op is in ops.numpy.
_KGRAPH_ONLY_OPS = {"Allclose", "BatchNormalization", "ConvMaxPool", "Dense", "Eye", "Gru", "HardSwish",
                    "LayerNormalization", "Lstm", "Ones", "SimpleRnn", "Swish", "Zeros"}
_DROPPED_ARGUMENTS = ("batch_input_shape",)
# Keras 3.15's layers whose constructors take no `trainable` (nor **kwargs).
_KERAS_REJECTS = {name: ("trainable",) for name in ("Discretization", "Pipeline", "SpatialDropout1D",
                                                    "SpatialDropout2D", "SpatialDropout3D")}


def model_to_keras(model: Model) -> dict[str, Any]:
    """Keras 3's top-level config of ``model`` (module, class_name, config, registered_name, build_config)."""
    data = serialize_layer(model)
    _check_recreatable(model, data["config"])
    return _layer(data, model.name)


def _check_recreatable(model, config):
    """A subclassed Model whose ``__init__`` needs arguments its config lacks cannot be loaded back: refuse it
    before anything is written, as Keras does (NotImplementedError), rather than write a file that fails to load."""
    if {"layers", "input_layers", "output_layers"} <= set(config) or "layers" in config:
        return  # a Functional or Sequential graph, or a subclass built the functional way
    from kgraph.models.model import Model as BaseModel
    cls = type(model)
    if not isinstance(model, BaseModel) or any("get_config" in vars(klass)
                                                for klass in cls.__mro__[:cls.__mro__.index(BaseModel)]):
        return  # the user's get_config
    params = inspect.signature(cls.__init__).parameters
    missing = [name for name, p in params.items() if name != "self" and p.default is p.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name not in config]
    if missing:
        raise NotImplementedError(
            f"Model '{model.name}' ({cls.__name__}) cannot be saved to .keras: its __init__ requires "
            f"{', '.join(repr(m) for m in missing)}, which its config does not hold. Implement `get_config()` "
            "(returning those arguments) so that the model can be re-created, as Keras requires, or save its "
            "weights with `save_weights`.")


def _layer(data, where):
    class_name = data["class_name"]
    if data.get("module") == OPS_MODULE:
        return _op(data, where)
    config = data["config"]
    if class_name == "Functional" or {"layers", "input_layers", "output_layers"} <= set(config):
        # A Functional, or a Model subclass built the functional way (`CustomModel(inputs, outputs)`), which
        # Keras saves as the same graph under the subclass's own name and module.
        nested = {entry["name"] for entry in config["layers"] if entry["class_name"] == "Functional"}
        config = dict(config, layers=[_entry(entry, where) for entry in config["layers"]],
                      input_layers=shift_model_refs(config["input_layers"], nested, 1),
                      output_layers=shift_model_refs(config["output_layers"], nested, 1))
        origin = {"module": "keras.src.models.functional", "registered_name": "Functional"} \
            if class_name == "Functional" else _origin(class_name, data.get("registered_name"))
        return {**origin, "class_name": class_name, "config": config, "build_config": {"input_shape": None}}
    if class_name == "Sequential":
        config = dict(config, layers=[_layer(entry, where) for entry in config["layers"]])
        return {"module": "keras", "class_name": "Sequential", "config": config, "registered_name": None}
    config = {k: v for k, v in config.items() if k not in _KERAS_REJECTS.get(class_name, ())}
    out = {**_origin(class_name, data.get("registered_name")), "class_name": class_name,
           "config": _config(config, f"{where}/{class_name}")}
    build = data.get("build_config")
    if build and not out["module"].startswith("keras"):
        out["build_config"] = _json_value(build)  # a user's layer: what its get_build_config() wrote
    elif build and "extra_shapes" not in build:
        # Keras builds from {"input_shape": ...} or from the keyword shapes of build() under "shapes_dict".
        out["build_config"] = build if "input_shape" in build else \
            {"shapes_dict": {k: v for k, v in build.items() if v is not None}}
    return out


def _origin(class_name, registered=None):
    """Built-in layers are Keras's; a user's layer keeps its module and its registered name (``package>name``, or
    its class name), the name a Keras user passes in ``custom_objects`` to supply a Keras version of it."""
    cls = get_registered_object(registered) if registered else get_registered_layer(class_name)
    module = getattr(cls, "__module__", "")
    if module.startswith("kgraph."):
        return {"module": "keras.layers", "registered_name": None}
    return {"module": module, "registered_name": get_registered_name(cls)}


def _entry(entry, where):
    out = _layer(entry, where)
    out["name"] = entry["name"]
    out["inbound_nodes"] = _without_tuples(entry["inbound_nodes"])
    if out["module"].startswith("keras.src.ops."):
        out["config"], out["inbound_nodes"] = _op_arguments(dict(entry, inbound_nodes=out["inbound_nodes"]), where)
    return out


def _op(data, where):
    class_name = data["class_name"]
    if class_name in _KGRAPH_ONLY_OPS:
        raise ValueError(f"Cannot save operation '{data['config'].get('name')}' ({class_name}) of model "
                         f"'{where}' in a .keras file: Keras 3 has no operation of that name.")
    return {"module": _OP_MODULE.get(class_name, "keras.src.ops.numpy"), "class_name": class_name,
            "config": dict(data["config"]), "registered_name": class_name}


def _op_arguments(entry, where):
    """Keras ops take their non-tensor keyword arguments in the constructor, kgraph's in each call."""
    nodes = entry["inbound_nodes"]
    keywords = [{k: v for k, v in node["kwargs"].items() if not _has_tensor(v)} for node in nodes]
    if any(k != keywords[0] for k in keywords[1:]):
        raise ValueError(f"Cannot save operation '{entry['name']}' of model '{where}' in a .keras file: its calls "
                         f"use different arguments ({keywords}), and a Keras operation has one set.")
    config = dict(entry["config"], **(keywords[0] if keywords else {}))
    nodes = [{"args": node["args"], "kwargs": {k: v for k, v in node["kwargs"].items() if _has_tensor(v)}}
             for node in nodes]
    return config, nodes


def _without_tuples(value):
    """Keras 3 writes tuples in call arguments as JSON lists (and has no ``__tuple__`` form)."""
    if isinstance(value, list):
        return [_without_tuples(v) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("class_name") == "__tuple__":
        return _without_tuples(value["config"]["value"])
    return {k: _without_tuples(v) for k, v in value.items()}


def _has_tensor(value):
    if isinstance(value, dict):
        return value.get("class_name") == "__keras_tensor__" or any(_has_tensor(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_tensor(v) for v in value)
    return False


def _config(config, where):
    out = {}
    for key, value in config.items():
        if key in _DROPPED_ARGUMENTS:
            continue
        if key == "dtype" and value == "str":
            value = "string"  # NumPy's name, Keras's
        elif _is_keras_object(value):
            pass  # already in Keras's form (a user's layer config, serialized by serialize_keras_object)
        elif key.endswith(("_initializer", "_regularizer", "_constraint")) and isinstance(value, dict):
            family = key.rsplit("_", 1)[1]
            value = {"module": f"keras.{family}s", "class_name": value["class_name"],
                     "config": value.get("config", {}), "registered_name": None}
        elif isinstance(value, dict) and "class_name" in value and "config" in value \
                and isinstance(value["config"], dict) and "name" in value["config"]:
            value = _layer(value, where)
        elif isinstance(value, list) and value and all(isinstance(v, dict) and "class_name" in v for v in value):
            value = [v if _is_keras_object(v) else _layer(v, where) for v in value]
        out[key] = _json_value(value)
    return out


def _is_keras_object(value):
    """A config already in Keras's form (with a module, not one of kgraph's)."""
    return isinstance(value, dict) and "class_name" in value and "config" in value \
        and isinstance(value.get("module"), str) and not value["module"].startswith("kgraph.")


def _json_value(value):
    """``value`` as JSON holds it, in Keras's forms: NumPy arrays as ``__numpy__``, NumPy scalars as numbers."""
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return serialize_keras_object(value)
    return value
