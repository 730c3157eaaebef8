"""ConvLSTM1D/2D/3D: an LSTM whose input and recurrent products are convolutions (Keras's weights and math)."""
from kgraph import activations, ops
from kgraph.layers.convolutional.conv import conv_output_shape, input_channels
from kgraph.layers.rnn.recurrent import _UnitForgetBias
from kgraph.layers.rnn.rnn import RNN
from kgraph.layers.rnn.rnn_cells import _Cell
from kgraph.ops.kernels.windows import normalize_tuple


class ConvLSTMCell(_Cell):
    """One ConvLSTM step on ``(batch, *spatial, channels)``; states ``[h, c]`` of ``(batch, *out_spatial, filters)``.

    The input convolution uses ``strides``/``padding``/``dilation_rate``; the
    recurrent one is stride 1, "same". Gate order i, f, c, o along the filters.
    """

    _gates = 4

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        super().__init__(filters, activation=activation, **kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"ConvLSTM cell '{self.name}' supports data_format='channels_last' only. "
                             f"Received: data_format={data_format!r}")
        if padding not in ("valid", "same"):
            raise ValueError(f"ConvLSTM cell '{self.name}' expects `padding` 'valid' or 'same'. "
                             f"Received: padding={padding!r}")
        self.rank = int(rank)
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, self.rank, "kernel_size")
        self.strides = normalize_tuple(strides, self.rank, "strides")
        self.padding = padding
        self.data_format = "channels_last"
        self.dilation_rate = normalize_tuple(dilation_rate, self.rank, "dilation_rate")
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.filters, self.filters]

    def output_spatial(self, input_shape):
        """``(batch, *out_spatial, filters)`` for a step input of ``input_shape``."""
        return conv_output_shape(self, input_shape, self.kernel_size, self.strides, self.padding,
                                 self.dilation_rate, self.filters)

    def build(self, input_shape):
        channels = input_channels(self, input_shape, self.rank)
        width = 4 * self.filters
        self.kernel = self.add_weight(shape=self.kernel_size + (channels, width), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=self.kernel_size + (self.filters, width),
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
        initializer = _UnitForgetBias(self.bias_initializer, self.filters) if self.unit_forget_bias \
            else self.bias_initializer
        self.bias = self.add_weight(shape=(width,), initializer=initializer, regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint, name="bias") if self.use_bias else None
        self.built = True

    def step(self, x, h, states, training):
        f = self.filters
        z = ops.add(ops.conv(x, self.kernel, self.strides, self.padding, dilation_rate=self.dilation_rate),
                    ops.conv(h, self.recurrent_kernel, 1, "same"))
        if self.bias is not None:
            z = ops.add(z, self.bias)
        i = self.recurrent_activation(z[..., :f])
        forget = self.recurrent_activation(z[..., f:2 * f])
        c = ops.add(ops.multiply(forget, states[1]), ops.multiply(i, self.activation(z[..., 2 * f:3 * f])))
        o = self.recurrent_activation(z[..., 3 * f:])
        h_new = ops.multiply(o, self.activation(c))
        return h_new, [h_new, c]

    def get_config(self):
        config = super().get_config()
        del config["units"]
        config.update({"rank": self.rank, "filters": self.filters, "kernel_size": self.kernel_size,
                       "strides": self.strides, "padding": self.padding, "data_format": self.data_format,
                       "dilation_rate": self.dilation_rate,
                       "recurrent_activation": activations.serialize(self.recurrent_activation),
                       "unit_forget_bias": self.unit_forget_bias})
        return config


class ConvLSTM(RNN):
    """Keras's ConvLSTM over ``(batch, time, *spatial, channels)``; subclasses fix ``rank``."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    rank = None

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None, dilation_rate=1,
                 activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal", bias_initializer="zeros",
                 unit_forget_bias=True, kernel_regularizer=None, recurrent_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, **kwargs):
        cell = ConvLSTMCell(self.rank, filters, kernel_size, strides=strides, padding=padding,
                            data_format=data_format, dilation_rate=dilation_rate, activation=activation,
                            recurrent_activation=recurrent_activation, use_bias=use_bias,
                            kernel_initializer=kernel_initializer, recurrent_initializer=recurrent_initializer,
                            bias_initializer=bias_initializer, unit_forget_bias=unit_forget_bias,
                            kernel_regularizer=kernel_regularizer, recurrent_regularizer=recurrent_regularizer,
                            bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                            recurrent_constraint=recurrent_constraint, bias_constraint=bias_constraint,
                            dropout=dropout, recurrent_dropout=recurrent_dropout, seed=seed, name="conv_lstm_cell",
                            dtype=kwargs.get("dtype"))
        super().__init__(cell, return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, **kwargs)
        self.supports_masking = False

    def _state_zeros(self, sequences, index):
        step = (sequences.shape[0],) + tuple(sequences.shape[2:])
        spatial = self.cell.output_spatial(step)[1:]
        corner = sequences[(slice(None), 0) + (0,) * (len(step) - 1)]
        column = ops.multiply(ops.reshape(corner, (-1,) + (1,) * len(spatial)), 0.0)
        return ops.add(column, ops.zeros(spatial, dtype=sequences.dtype))

    def _output_zeros(self, sequences):
        return self._state_zeros(sequences, 0)

    def compute_output_shape(self, input_shape):
        batch, timesteps = input_shape[0], input_shape[1]
        out = self.cell.output_spatial((batch,) + tuple(input_shape[2:]))
        output = (batch, timesteps) + tuple(out[1:]) if self.return_sequences else tuple(out)
        return [output, tuple(out), tuple(out)] if self.return_state else output

    def get_config(self):
        cell = self.cell.get_config()
        config = {key: value for key, value in super().get_config().items() if key not in ("cell", "unroll",
                                                                                          "zero_output_for_mask")}
        for key in ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate", "activation",
                    "recurrent_activation", "use_bias", "kernel_initializer", "recurrent_initializer",
                    "bias_initializer", "unit_forget_bias", "kernel_regularizer", "recurrent_regularizer",
                    "bias_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint", "dropout",
                    "recurrent_dropout", "seed"):
            config[key] = cell[key]
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class ConvLSTM1D(ConvLSTM):
    """ConvLSTM over ``(batch, time, steps, channels)``."""

    rank = 1


class ConvLSTM2D(ConvLSTM):
    """ConvLSTM over ``(batch, time, rows, cols, channels)``."""

    rank = 2


class ConvLSTM3D(ConvLSTM):
    """ConvLSTM over ``(batch, time, dim1, dim2, dim3, channels)``."""

    rank = 3

