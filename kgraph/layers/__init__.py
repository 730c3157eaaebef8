"""kgraph layers, with Keras's names."""
from kgraph.input_layer import Input, InputLayer
from kgraph.input_spec import InputSpec
from kgraph.layer import Layer
from kgraph.layers.core import Activation, Dense, Dropout, Identity
from kgraph.layers.merging import (Add, Average, Concatenate, Maximum, Minimum, Multiply, Subtract, add,
                                   concatenate)
from kgraph.layers.reshaping import Flatten, Reshape
from kgraph.layers.recurrent import GRU, LSTM, SimpleRNN
from kgraph.layers.bidirectional import Bidirectional
from kgraph.layers.multi_head_attention import MultiHeadAttention
