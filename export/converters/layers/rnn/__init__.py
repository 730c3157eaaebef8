"""Converters for the recurrent layers: LSTM and GRU as ONNX nodes, SimpleRNN as plain ops, Bidirectional."""
from export.converters.layers.rnn import recurrent  # noqa: F401
