"""Recurrent cells (one timestep) with Keras's arguments, weights and math: SimpleRNNCell, LSTMCell, GRUCell.

A cell is a Layer with ``state_size`` (an int, or a list for several states),
``output_size`` and ``call(inputs, states, training=False) -> (output,
new_states)``; ``kgraph.layers.RNN`` runs one over time. Cells compute with
plain ops, so gradients come from the tape and a model with a fixed number of
timesteps exports by tracing. Dropout masks are drawn once per sequence (the
RNN layer resets them at each call), as in Keras.
"""
import numpy as np

from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.layers.layer import Layer
from kgraph.layers.rnn.recurrent import _UnitForgetBias
from kgraph.layers.rnn.recurrent_base import _rate
from kgraph.random import generator


class _Cell(Layer):
    """Weights and dropout masks shared by the three cells; subclasses set ``_gates`` and ``step``."""

    _gates = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, kernel_constraint=None, recurrent_constraint=None,
                 bias_constraint=None, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"{type(self).__name__} '{self.name}' expects `units` to be a positive integer. "
                             f"Received: units={units!r}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer) if kernel_regularizer else None
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer) if recurrent_regularizer else None
        self.bias_regularizer = regularizers.get(bias_regularizer) if bias_regularizer else None
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = _rate(dropout, "dropout", self)
        self.recurrent_dropout = _rate(recurrent_dropout, "recurrent_dropout", self)
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None
        self._dropout_masks = {}

    @property
    def state_size(self):
        return self.units

    @property
    def output_size(self):
        return self.units

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_initializer(self):
        return self.bias_initializer

    def build(self, input_shape):
        width = self._gates * self.units
        self.kernel = self.add_weight(shape=(int(input_shape[-1]), width), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, width), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
        self.bias = self.add_weight(shape=self._bias_shape(), initializer=self._bias_initializer(),
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None
        self.built = True

    def reset_dropout_mask(self):
        """Forget the dropout masks, so the next sequence draws new ones."""
        self._dropout_masks = {}

    def _dropped(self, x, rate, key, training):
        if not (training and 0.0 < rate < 1.0):
            return x
        if key not in self._dropout_masks:
            keep = (self._rng or generator()).random(np.shape(x)) >= rate
            self._dropout_masks[key] = keep.astype(x.dtype) / np.asarray(1.0 - rate, dtype=x.dtype)
        return ops.multiply(x, self._dropout_masks[key])

    def call(self, inputs, states, training=False):
        state_list = list(states) if isinstance(states, (list, tuple)) else [states]
        x = self._dropped(inputs, self.dropout, "input", training)
        h = self._dropped(state_list[0], self.recurrent_dropout, "recurrent", training)
        output, new_states = self.step(x, h, state_list, training)
        return output, new_states if isinstance(states, (list, tuple)) else new_states[0]

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": activations.serialize(self.activation), "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer) if self.kernel_regularizer
            else None,
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer)
            if self.recurrent_regularizer else None,
            "bias_regularizer": regularizers.serialize(self.bias_regularizer) if self.bias_regularizer else None,
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout, "seed": self.seed,
        })
        return config


class SimpleRNNCell(_Cell):
    """``h = activation(x @ kernel + bias + h_prev @ recurrent_kernel)``."""

    def step(self, x, h, states, training):
        z = ops.matmul(x, self.kernel)
        if self.bias is not None:
            z = ops.add(z, self.bias)
        output = self.activation(ops.add(z, ops.matmul(h, self.recurrent_kernel)))
        return output, [output]


class LSTMCell(_Cell):
    """Keras's LSTM step, gate order i, f, c, o; states ``[h, c]``."""

    _gates = 4

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)

    @property
    def state_size(self):
        return [self.units, self.units]

    def _bias_initializer(self):
        return _UnitForgetBias(self.bias_initializer, self.units) if self.unit_forget_bias else self.bias_initializer

    def step(self, x, h, states, training):
        u = self.units
        z = ops.add(ops.matmul(x, self.kernel), ops.matmul(h, self.recurrent_kernel))
        if self.bias is not None:
            z = ops.add(z, self.bias)
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        c = ops.add(ops.multiply(f, states[1]), ops.multiply(i, self.activation(z[:, 2 * u:3 * u])))
        o = self.recurrent_activation(z[:, 3 * u:])
        h_new = ops.multiply(o, self.activation(c))
        return h_new, [h_new, c]

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": activations.serialize(self.recurrent_activation),
                "unit_forget_bias": self.unit_forget_bias}


class GRUCell(_Cell):
    """Keras's GRU step, gate order z, r, h; ``reset_after`` (the default) applies the reset gate after the
    recurrent product and keeps a separate recurrent bias (bias shape ``(2, 3 * units)``)."""

    _gates = 3

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", reset_after=True, **kwargs):
        super().__init__(units, activation=activation, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def step(self, x, h, states, training):
        u = self.units
        h_prev = states[0]
        matrix_x = ops.matmul(x, self.kernel)
        input_bias = recurrent_bias = None
        if self.bias is not None:
            input_bias, recurrent_bias = (self.bias[0], self.bias[1]) if self.reset_after else (self.bias, None)
            matrix_x = ops.add(matrix_x, input_bias)
        if self.reset_after:
            inner = ops.matmul(h, self.recurrent_kernel)
            if recurrent_bias is not None:
                inner = ops.add(inner, recurrent_bias)
        else:
            inner = ops.matmul(h, self.recurrent_kernel[:, :2 * u])
        z = self.recurrent_activation(ops.add(matrix_x[:, :u], inner[:, :u]))
        r = self.recurrent_activation(ops.add(matrix_x[:, u:2 * u], inner[:, u:2 * u]))
        if self.reset_after:
            recurrent_h = ops.multiply(r, inner[:, 2 * u:])
        else:
            recurrent_h = ops.matmul(ops.multiply(r, h), self.recurrent_kernel[:, 2 * u:])
        candidate = self.activation(ops.add(matrix_x[:, 2 * u:], recurrent_h))
        h_new = ops.add(ops.multiply(z, h_prev), ops.multiply(ops.subtract(1.0, z), candidate))
        return h_new, [h_new]

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": activations.serialize(self.recurrent_activation),
                "reset_after": self.reset_after}


class StackedRNNCells(Layer):
    """Several cells run as one: each cell's output is the next cell's input; states are all cells' states."""

    def __init__(self, cells, **kwargs):
        super().__init__(**kwargs)
        for cell in cells:
            if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
                raise ValueError(f"StackedRNNCells expects cells with `call(inputs, states)` and `state_size`. "
                                 f"Received: {cell!r}")
        self.cells = list(cells)

    @property
    def state_size(self):
        return [cell.state_size for cell in self.cells]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", _flat_sizes(last.state_size)[0])

    def build(self, input_shape):
        shape = tuple(input_shape)
        for cell in self.cells:
            if not cell.built:
                cell.build(shape)
                cell.built = True
                cell._build_input_shape = shape
            shape = shape[:-1] + (getattr(cell, "output_size", _flat_sizes(cell.state_size)[0]),)
        self.built = True

    def reset_dropout_mask(self):
        for cell in self.cells:
            if hasattr(cell, "reset_dropout_mask"):
                cell.reset_dropout_mask()

    def call(self, inputs, states, training=False):
        # As Keras: each cell gets its states as a list (a bare state array becomes a one-element list) and
        # gives back the structure it was handed.
        new_states = []
        for cell, cell_states in zip(self.cells, states):
            was_list = isinstance(cell_states, (list, tuple))
            cell_states = list(cell_states) if was_list else [cell_states]
            inputs, cell_new = cell(inputs, cell_states, training=training)
            if not was_list and isinstance(cell_new, (list, tuple)) and len(cell_new) == 1:
                cell_new = cell_new[0]
            new_states.append(cell_new)
        return inputs, new_states

    def get_config(self):
        from kgraph.saving.serialization import serialize_layer
        return {**super().get_config(), "cells": [serialize_layer(cell) for cell in self.cells]}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kgraph.saving.serialization import deserialize_layer
        config = dict(config)
        cells = [deserialize_layer(c, custom_objects) for c in config.pop("cells")]
        return cls(cells, **config)


def _flat_sizes(state_size):
    """A state_size (int, or nested lists of ints) as a flat list of ints."""
    if isinstance(state_size, (list, tuple)):
        return [s for item in state_size for s in _flat_sizes(item)]
    return [int(state_size)]
