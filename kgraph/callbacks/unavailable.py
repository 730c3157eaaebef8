"""Keras callbacks that need what kgraph lacks: each raises an error that names the reason when created."""
from kgraph.callbacks.callback import Callback


class OrbaxCheckpoint(Callback):
    """Keras's checkpoints through Orbax (a JAX library): refused; ``ModelCheckpoint`` saves ``.keras`` /
    ``.weights.h5`` files instead."""

    def __init__(self, *args, **kwargs):
        raise ImportError("OrbaxCheckpoint writes checkpoints with Orbax, a JAX library kgraph does not use. Use "
                          "kgraph.callbacks.ModelCheckpoint (.keras or .weights.h5 files) or BackupAndRestore.")


class SwapEMAWeights(Callback):
    """Keras's swap of a model's weights with its optimizer's moving averages: refused, because kgraph's
    optimizers keep no moving averages (they take no ``use_ema`` / ``ema_momentum``)."""

    def __init__(self, swap_on_epoch=False):
        raise ValueError("SwapEMAWeights needs an optimizer with `use_ema=True`, and kgraph's optimizers keep no "
                         "exponential moving average of the weights (no `use_ema` / `ema_momentum`).")
