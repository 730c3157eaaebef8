"""Keras callbacks that need what kgraph lacks: each raises an error that names the reason when created."""
from kgraph.callbacks.callback import Callback


class OrbaxCheckpoint(Callback):
    """Keras's checkpoints through Orbax (a JAX library): refused; ``ModelCheckpoint`` saves ``.keras`` /
    ``.weights.h5`` files instead."""

    def __init__(self, *args, **kwargs):
        raise ImportError("OrbaxCheckpoint writes checkpoints with Orbax, a JAX library kgraph does not use. Use "
                          "kgraph.callbacks.ModelCheckpoint (.keras or .weights.h5 files) or BackupAndRestore.")
