"""``serialize`` / ``deserialize``: one layer <-> Keras 3's serialized form of it.

The dict is the one Keras writes (``module``, ``class_name``, ``config``,
``registered_name``, and ``build_config`` once the layer is built), so a dict
from ``keras.layers.serialize`` rebuilds the kgraph layer and the reverse.
"""
from kgraph.layers.layer import Layer
from kgraph.saving.keras_config_reader import layer_from_keras
from kgraph.saving.keras_config_writer import model_to_keras
from kgraph.saving.serialization import deserialize_layer

__all__ = ["deserialize", "serialize"]


def serialize(layer):
    """The layer's configuration as Keras 3's serialized-object dict."""
    if not isinstance(layer, Layer):
        raise ValueError(f"`serialize` expects a kgraph Layer instance. Received: layer={layer!r} "
                         f"(of type {type(layer).__name__})")
    return model_to_keras(layer)


def deserialize(config, custom_objects=None):
    """A new layer (built when ``config`` has a ``build_config``) from ``serialize``'s (or Keras's) dict."""
    if not isinstance(config, dict) or "class_name" not in config or "config" not in config:
        raise ValueError("`deserialize` expects a dict with 'class_name' and 'config' keys, as `serialize` "
                         f"returns. Received: config={config!r}")
    custom_objects = dict(custom_objects or {})
    data = layer_from_keras(config, custom_objects)
    build = config.get("build_config")
    if isinstance(build, dict) and build.get("input_shape") is not None:
        data["build_config"] = {"input_shape": build["input_shape"]}
    layer = deserialize_layer(data, custom_objects)
    if not isinstance(layer, Layer):
        raise ValueError(f"`deserialize` was passed a config that is not a layer's. Received: config={config!r}")
    return layer
