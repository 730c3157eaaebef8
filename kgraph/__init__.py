"""kgraph: a pure-NumPy deep-learning engine with Keras's API."""
__version__ = "0.1.0"

from kgraph import backend, initializers, ops, random  # noqa: E402
from kgraph.backend.autodiff import GradientTape, value_and_grad  # noqa: E402
from kgraph.models.functional import Functional  # noqa: E402
from kgraph.layers.core.input_layer import Input, InputLayer  # noqa: E402
from kgraph.layers.input_spec import InputSpec  # noqa: E402
from kgraph.graph.keras_tensor import KerasHistory, KerasTensor  # noqa: E402
from kgraph.layers.layer import Layer  # noqa: E402
from kgraph.models.model import Model  # noqa: E402
from kgraph.graph.node import Node  # noqa: E402
from kgraph.graph.operation import Operation  # noqa: E402
from kgraph.saving import load_model  # noqa: E402
from kgraph.models.sequential import Sequential  # noqa: E402
from kgraph.backend.variable import Variable  # noqa: E402
from kgraph import (activations, callbacks, config, layers, losses, metrics, models, optimizers,  # noqa: E402
                    regularizers, utils)
