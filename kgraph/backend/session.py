"""``keras.backend``'s global state: the engine's name, the image data format, auto-name counters, KerasTensors.

The settings live where kgraph keeps them (``kgraph.config``, ``kgraph.utils``); these functions reach them when
called, so that the engine does not import the layers above it.
"""


def backend():
    """The name of the engine computing kgraph's ops: ``"numpy"``."""
    from kgraph import config
    return config.backend()


def image_data_format():
    """The default image layout of layers: ``"channels_last"``."""
    from kgraph import config
    return config.image_data_format()


def set_image_data_format(data_format):
    """Set the default image layout (kgraph computes channels-last; other values are refused)."""
    from kgraph import config
    return config.set_image_data_format(data_format)


def clear_session(free_memory=True):
    """Reset kgraph's global state: auto-generated names start over (the next Dense is ``dense`` again).

    free_memory: accepted for Keras's signature; kgraph holds no device memory or graph to free.
    """
    from kgraph.utils.session import clear_session as reset
    reset()


def get_uid(prefix=""):
    """How many times ``prefix`` has been handed out, this call included (1 the first time).

    Shares the counter of auto-generated layer names, as Keras's does: ``get_uid("dense")`` makes the next
    auto-named Dense ``dense_1``.
    """
    from kgraph.utils import naming
    prefix = str(prefix)
    name = naming.uniquify(prefix)
    return 1 if name == prefix else int(name[len(prefix) + 1:]) + 1


def is_keras_tensor(x):
    """Whether ``x`` is a symbolic KerasTensor (an ``Input`` or a layer's output in a functional model)."""
    from kgraph.graph.keras_tensor import KerasTensor
    return isinstance(x, KerasTensor)
