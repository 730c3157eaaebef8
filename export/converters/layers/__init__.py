"""Layer converters, one module per ``kgraph.layers`` family; importing this package registers them all."""
from export.converters.layers import activations, attention, convolutional, core, merging  # noqa: F401
from export.converters.layers import normalization, pooling, preprocessing, regularization, reshaping, rnn  # noqa: F401
