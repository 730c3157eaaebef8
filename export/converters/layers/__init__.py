"""Layer converters, one module per ``kgraph.layers`` family; importing this package registers them all."""
from export.converters.layers import (  # noqa: F401  # noqa: F401
    activations,
    attention,
    convolutional,
    core,
    merging,
    normalization,
    pooling,
    preprocessing,
    regularization,
    reshaping,
    rnn,
)
