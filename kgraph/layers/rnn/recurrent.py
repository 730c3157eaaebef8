"""Recurrent layers SimpleRNN, LSTM and GRU, with Keras's arguments and weight layout."""
import numpy as np

from kgraph import backend, initializers, ops
from kgraph.layers.arguments import reject_unsupported
from kgraph.layers.rnn.recurrent_base import RecurrentBase


class SimpleRNN(RecurrentBase):
    """Fully connected RNN: ``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)``."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    def _recur(self, projection, recurrent_masks, step_mask=None, initial=(None,)):
        return ops.simple_rnn(projection, self.recurrent_kernel, initial[0], go_backwards=self.go_backwards,
                              recurrent_masks=recurrent_masks, activation=self._activation_name,
                              **self._mask_options(step_mask))


class _UnitForgetBias(initializers.Initializer):
    """Keras's LSTM bias start: the base initializer everywhere but ones for the forget gate."""

    def __init__(self, base, units):
        self.base = base
        self.units = units

    def __call__(self, shape, dtype=None):
        dtype = backend.standardize_dtype(dtype)
        u = self.units
        return np.concatenate([self.base((u,), dtype=dtype), np.ones((u,), dtype=dtype),
                               self.base((2 * u,), dtype=dtype)]).astype(dtype)


class LSTM(RecurrentBase):
    """Long short-term memory; kernel blocks in Keras's gate order i, f, c, o."""
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    _gates = 4
    _state_count = 2

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", unit_forget_bias=True,
                 use_cudnn="auto", **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        # "auto" (cuDNN when available, the same math otherwise) and False hold in kgraph; True asks for cuDNN.
        reject_unsupported(self, allowed=("auto", False), use_cudnn=use_cudnn)
        self.recurrent_activation, self._recurrent_activation_name = self._gate_activation(
            recurrent_activation, "recurrent_activation")
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_initial_value(self):
        if self.unit_forget_bias:
            return _UnitForgetBias(self.bias_initializer, self.units)
        return self.bias_initializer

    _recurrence_adds_bias = True

    def _recur(self, projection, recurrent_masks, step_mask=None, initial=(None, None), bias=None):
        return ops.lstm(projection, self.recurrent_kernel, initial[0], initial[1], bias, go_backwards=self.go_backwards,
                        recurrent_masks=recurrent_masks, activation=self._activation_name,
                        recurrent_activation=self._recurrent_activation_name, **self._mask_options(step_mask))

    def get_config(self):
        config = super().get_config()
        config.update({"recurrent_activation": self._recurrent_activation_name,
                       "unit_forget_bias": self.unit_forget_bias})
        return config


class GRU(RecurrentBase):
    """Gated recurrent unit; kernel blocks in Keras's gate order z, r, h.

    With ``reset_after=True`` (Keras's default) the bias has shape
    ``(2, 3 * units)``: row 0 is added to the input projection, row 1 to the
    recurrent projection, and the reset gate multiplies the recurrent part of
    the candidate after the matmul.
    """
    _lists_activity_regularizer = True  # Keras writes the key in its config, None included

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", reset_after=True,
                 use_cudnn="auto", **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        # As LSTM's: True asks for a cuDNN kernel, which kgraph does not have.
        reject_unsupported(self, allowed=("auto", False), use_cudnn=use_cudnn)
        self.recurrent_activation, self._recurrent_activation_name = self._gate_activation(
            recurrent_activation, "recurrent_activation")
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _input_bias(self):
        if self.bias is None or not self.reset_after:
            return self.bias
        return ops.getitem(self.bias, 0)

    _recurrence_adds_bias = True

    def _recur(self, projection, recurrent_masks, step_mask=None, initial=(None,), bias=None):
        recurrent_bias = ops.getitem(self.bias, 1) if self.bias is not None and self.reset_after else None
        return ops.gru(projection, self.recurrent_kernel, recurrent_bias, initial[0], bias, reset_after=self.reset_after,
                       go_backwards=self.go_backwards, recurrent_masks=recurrent_masks,
                       activation=self._activation_name, recurrent_activation=self._recurrent_activation_name,
                       **self._mask_options(step_mask))

    def get_config(self):
        config = super().get_config()
        config.update({"recurrent_activation": self._recurrent_activation_name, "reset_after": self.reset_after})
        return config
