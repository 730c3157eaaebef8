"""The ``compile_config`` of a Keras 3 ``.keras`` file -> ``model.compile`` with kgraph's optimizer, losses, metrics."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from kgraph import losses, metrics, optimizers
from kgraph.saving.keras_config_reader import constructor_arguments

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from kgraph.models.model import Model
    from kgraph.saving.registration import CustomObjects

# Keras optimizer arguments that change nothing at these values (kgraph has no EMA or loss scaling).
_INERT = {("use_ema", False), ("ema_momentum", 0.99), ("amsgrad", False)}


def compile_from_keras(model: Model, compile_config: Mapping[str, Any] | None, source: str,
                       custom_objects: CustomObjects) -> None:
    """Compile ``model`` as the file's ``compile_config`` says; warn and leave it uncompiled where kgraph cannot."""
    if not compile_config or not compile_config.get("loss"):
        return
    try:
        optimizer = _optimizer(compile_config.get("optimizer"), custom_objects)
        loss = _objects(compile_config["loss"], losses.deserialize, custom_objects)
        metric_specs = _objects(compile_config.get("metrics"), metrics.deserialize, custom_objects)
        model.compile(optimizer=optimizer, loss=loss, metrics=metric_specs,
                      loss_weights=compile_config.get("loss_weights"))
    except (ValueError, TypeError, KeyError) as err:
        warnings.warn(f"'{source}' is loaded uncompiled: kgraph cannot use its compile configuration ({err}).",
                      stacklevel=3)


def _optimizer(data, custom_objects):
    if not isinstance(data, dict):
        return optimizers.get(data)
    cls = type(optimizers.get(data["class_name"])) if data["class_name"] not in custom_objects \
        else custom_objects[data["class_name"]]
    accepted = constructor_arguments(cls)
    config = {}
    for key, value in data.get("config", {}).items():
        if key in accepted:
            config[key] = _plain(value)
        elif value is not None and (key, value) not in _INERT:
            raise ValueError(f"optimizer {data['class_name']} uses `{key}={value!r}`, which kgraph does not support")
    return optimizers.deserialize({"class_name": data["class_name"], "config": config}, custom_objects)


def _plain(value):
    """A Keras object (a learning-rate schedule) as kgraph's ``{"class_name", "config"}``."""
    if isinstance(value, dict) and "class_name" in value:
        return {"class_name": value["class_name"], "config": value.get("config", {})}
    return value


def _objects(spec, deserialize, custom_objects):
    """Losses or metrics as names, Keras objects, or lists/dicts of them (one per output)."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, list):
        return [_objects(v, deserialize, custom_objects) for v in spec]
    if "class_name" not in spec:
        return {k: _objects(v, deserialize, custom_objects) for k, v in spec.items()}
    if spec["class_name"] == "function":
        return spec["config"]
    return deserialize({"class_name": spec["class_name"], "config": spec.get("config", {})}, custom_objects)
