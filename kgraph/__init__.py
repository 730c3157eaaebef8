"""kgraph: a pure-NumPy deep-learning engine with Keras's API.

This module is Keras's public face: the classes of ``keras.*`` and its namespaces. The implementation lives in
the folders beside it (see ARCHITECTURE.md).
"""
from kgraph import (  # noqa: I001 (the engine first: the layers build on it)
    activations,
    backend,
    callbacks,
    config,
    constraints,
    dtype_policies,
    initializers,
    layers,
    losses,
    metrics,
    mixed_precision,
    models,
    ops,
    optimizers,
    preprocessing,
    random,
    regularizers,
    saving,
    tree,
    utils,
)
from kgraph.backend.autodiff import GradientTape, value_and_grad
from kgraph.backend.device import device
from kgraph.backend.name_scope import name_scope
from kgraph.backend.variable import Variable
from kgraph.dtype_policies import DTypePolicy, FloatDTypePolicy
from kgraph.graph.keras_tensor import KerasTensor
from kgraph.graph.operation import Operation
from kgraph.initializers import Initializer
from kgraph.layers.core.input_layer import Input
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.losses import Loss
from kgraph.metrics import Metric
from kgraph.models import Model, Sequential
from kgraph.optimizers import Optimizer
from kgraph.regularizers import Regularizer
from kgraph.saving import load_model
from kgraph.version import __version__


def version() -> str:
    """kgraph's version string (``keras.version()``)."""
    return __version__


__all__ = ["DTypePolicy", "FloatDTypePolicy", "GradientTape", "Initializer", "Input", "InputSpec", "KerasTensor",
           "Layer", "Loss", "Metric", "Model", "Operation", "Optimizer", "Regularizer", "Sequential", "Variable",
           "__version__", "activations", "applications", "backend", "callbacks", "config", "constraints", "datasets", "device",
           "dtype_policies", "initializers", "layers", "load_model", "losses", "metrics", "mixed_precision", "models",
           "name_scope", "ops", "optimizers", "preprocessing", "random", "regularizers", "saving", "tree", "utils", "value_and_grad",
           "version"]


def __dir__():
    # The implementation packages (graph, trainers, ...) are attributes once imported; dir() shows the face.
    return sorted(__all__)


def __getattr__(name):
    # keras.datasets and keras.applications are imported on first use, so `import kgraph` does not pay for them.
    if name in ("datasets", "applications"):
        import importlib
        return importlib.import_module(f"kgraph.{name}")
    raise AttributeError(f"module 'kgraph' has no attribute {name!r}")
