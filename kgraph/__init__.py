"""kgraph: a pure-NumPy deep-learning engine with Keras's API."""
__version__ = "0.1.0"

from kgraph import backend, initializers, ops, random  # noqa: E402
from kgraph.autodiff import GradientTape, value_and_grad  # noqa: E402
from kgraph.functional import Functional  # noqa: E402
from kgraph.input_layer import Input, InputLayer  # noqa: E402
from kgraph.input_spec import InputSpec  # noqa: E402
from kgraph.keras_tensor import KerasHistory, KerasTensor  # noqa: E402
from kgraph.layer import Layer  # noqa: E402
from kgraph.model import Model  # noqa: E402
from kgraph.node import Node  # noqa: E402
from kgraph.operation import Operation  # noqa: E402
from kgraph.saving import load_model  # noqa: E402
from kgraph.sequential import Sequential  # noqa: E402
from kgraph.variable import Variable  # noqa: E402
from kgraph import (activations, callbacks, config, layers, losses, metrics, models, optimizers,  # noqa: E402
                    regularizers, utils)
