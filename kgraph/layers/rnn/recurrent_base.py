"""Shared machinery of the fused recurrent layers: arguments, weights, dropout masks, output structure."""
import numpy as np

from kgraph import activations, constraints, initializers, ops, regularizers
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.ops import gate_activations
from kgraph.random import generator


def _rate(value, argument, layer):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise ValueError(f"{type(layer).__name__} layer '{layer.name}' expects `{argument}` to be a float "
                         f"between 0 and 1. Received: {argument}={value!r}")
    # Keras clips dropout rates into [0, 1].
    return min(1.0, max(0.0, float(value)))


def _optional_regularizer(identifier):
    return regularizers.get(identifier) if identifier else None


def _serialize_regularizer(regularizer):
    return regularizers.serialize(regularizer) if regularizer else None


class RecurrentBase(Layer):
    """Base of SimpleRNN, LSTM and GRU.

    A subclass sets ``_gates`` (weight blocks per unit) and ``_state_count``,
    and defines ``_recur(projection, recurrent_masks)`` returning the fused
    op's ``(sequence, *states)``. The input projection of every timestep is
    one ``ops.dense`` call; the recurrence is one fused op.
    """

    _gates = 1
    _state_count = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", kernel_regularizer=None,
                 recurrent_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, recurrent_constraint=None, bias_constraint=None, dropout=0.0,
                 recurrent_dropout=0.0, seed=None, return_sequences=False, return_state=False,
                 go_backwards=False, stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"{type(self).__name__} layer '{self.name}' expects `units` to be a positive integer. "
                             f"Received: units={units!r}")
        self.units = int(units)
        self.activation, self._activation_name = self._gate_activation(activation, "activation")
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = _optional_regularizer(kernel_regularizer)
        self.recurrent_regularizer = _optional_regularizer(recurrent_regularizer)
        self.bias_regularizer = _optional_regularizer(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)
        self.dropout = _rate(dropout, "dropout", self)
        self.recurrent_dropout = _rate(recurrent_dropout, "recurrent_dropout", self)
        self.seed = seed
        self._rng = np.random.default_rng(seed) if seed is not None else None
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self._states = None
        self.unroll = bool(unroll)
        self.input_spec = InputSpec(ndim=3)
        self.supports_masking = True
        # Masked steps output the previous output (Keras's default) or zeros (what Bidirectional asks for).
        self.zero_output_for_mask = bool(zero_output_for_mask)

    def _gate_activation(self, identifier, argument):
        """The activation function and its name, which must be one the fused ops implement."""
        fn = activations.get(identifier)
        try:
            name = activations.serialize(fn)
        except ValueError:
            name = None
        if name not in gate_activations.SUPPORTED:
            raise ValueError(f"{type(self).__name__} layer '{self.name}' supports `{argument}` in "
                             f"{list(gate_activations.SUPPORTED)}. Received: {argument}={identifier!r}")
        return fn, name

    # ----- weights -------------------------------------------------------------
    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_initial_value(self):
        return self.bias_initializer

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(f"{type(self).__name__} layer '{self.name}' expects inputs of shape (batch, "
                             f"timesteps, features) with known features. Received: input_shape={input_shape}")
        input_dim = int(input_shape[-1])
        width = self._gates * self.units
        self.kernel = self.add_weight(shape=(input_dim, width), initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer, constraint=self.kernel_constraint,
                                      name="kernel")
        self.recurrent_kernel = self.add_weight(shape=(self.units, width), initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint, name="recurrent_kernel")
        self.bias = self.add_weight(shape=self._bias_shape(), initializer=self._bias_initial_value(),
                                    regularizer=self.bias_regularizer, constraint=self.bias_constraint,
                                    name="bias") if self.use_bias else None
        self.input_spec = InputSpec(ndim=3, axes={-1: input_dim})
        self.built = True

    def _input_bias(self):
        """The part of the bias added to the input projection."""
        return self.bias

    # ----- dropout -------------------------------------------------------------
    def _masks(self, rate, shape, dtype):
        keep = (self._rng or generator()).random(shape) >= rate
        return keep.astype(dtype) / np.asarray(1.0 - rate, dtype=dtype)

    # Whether ``_recur`` takes the input bias (``bias=``) and its op adds it as each step reads the projection.
    _recurrence_adds_bias = False

    def _folds_bias(self, training):
        """Whether the recurrence adds the input bias itself, saving the input projection a pass (LSTM and GRU
        without input dropout)."""
        return self._recurrence_adds_bias and not (training and 0.0 < self.dropout < 1.0)

    def _input_projection(self, x, training):
        """``x @ kernel + bias`` for every timestep (without the bias where ``_folds_bias``), with Keras's input
        dropout in training."""
        kernel, bias = self.kernel, None if self._folds_bias(training) else self._input_bias()
        if not (training and 0.0 < self.dropout < 1.0):
            # Computed time-major and handed on as its batch-major view: each step reads, and its VJP
            # writes, contiguous rows (the recurrence's cotangent keeps this memory order).
            return ops.swapaxes(ops.dense(ops.swapaxes(x, 0, 1), kernel, bias), 0, 1)
        batch, _, input_dim = x.shape
        # Keras cells with recurrent dropout drop each gate's inputs with its own mask.
        count = self._gates if self.recurrent_dropout > 0.0 else 1
        masks = self._masks(self.dropout, (count, batch, 1, input_dim), x.dtype)
        if count == 1:
            return ops.dense(ops.multiply(x, masks[0]), kernel, bias)
        u = self.units
        parts = []
        for k in range(count):
            block = slice(k * u, (k + 1) * u)
            parts.append(ops.dense(ops.multiply(x, masks[k]), ops.getitem(kernel, (slice(None), block)),
                                   None if bias is None else ops.getitem(bias, block)))
        return ops.concatenate(parts, axis=-1)

    def _recurrent_masks(self, batch, dtype, training):
        """One dropout mask of ``h`` per gate, fixed across timesteps, or None."""
        if not (training and 0.0 < self.recurrent_dropout < 1.0):
            return None
        return self._masks(self.recurrent_dropout, (self._gates, batch, self.units), dtype)

    # ----- calling -------------------------------------------------------------
    def call(self, sequences, initial_state=None, mask=None, training=False):
        projection = self._input_projection(sequences, training)
        masks = self._recurrent_masks(sequences.shape[0], projection.dtype, training)
        step_mask = None if mask is None else self._step_mask(mask, sequences.shape[:2])
        initial = self._initial_states(sequences.shape[0], initial_state)
        if self._folds_bias(training) and self.bias is not None:
            sequence, *states = self._recur(projection, masks, step_mask, initial, bias=self._input_bias())
        else:
            sequence, *states = self._recur(projection, masks, step_mask, initial)
        if self.stateful:
            self._states = [np.array(ops.stop_gradient(s)) for s in states]
            self._state_batch = sequences.shape[0]
        output = sequence if self.return_sequences else states[0]
        if self.return_state:
            return [output] + states
        return output

    def _initial_states(self, batch, initial_state):
        """The starting states: given, carried (stateful), or None for zeros."""
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) != self._state_count:
                raise ValueError(f"{type(self).__name__} layer '{self.name}' expects {self._state_count} initial "
                                 f"state(s). Received: {len(states)}")
            return states
        if self.stateful and self._states is not None:
            if self._states[0].shape[0] != batch:
                raise ValueError(f"Stateful {type(self).__name__} layer '{self.name}' keeps states for batch size "
                                 f"{self._states[0].shape[0]}; received a batch of {batch}. Call reset_states() "
                                 "or keep the batch size fixed.")
            return list(self._states)
        return [None] * self._state_count

    @property
    def states(self):
        """A stateful layer's carried states, ``(batch, units)`` each (zeros after ``reset_states()``); None for a
        stateless layer or before the first call, as Keras's."""
        if self._states is not None:
            return list(self._states)
        batch = getattr(self, "_state_batch", None)
        if not self.stateful or batch is None:
            return None
        return [np.zeros((batch, self.units), self.compute_dtype) for _ in range(self._state_count)]

    def reset_states(self, states=None):
        """Clear the carried states of a stateful layer (or set them to ``states``)."""
        self._states = None if states is None else [np.asarray(s) for s in states]

    def _step_mask(self, mask, expected):
        mask = np.asarray(mask)
        if mask.shape != tuple(expected):
            raise ValueError(f"{type(self).__name__} layer '{self.name}' expects a mask of shape (batch, timesteps)"
                             f" = {tuple(expected)}. Received: mask.shape={mask.shape}")
        return mask.astype(bool, copy=False)  # (an op's boolean mask as it is: a replayed step reads it anew)

    def _mask_options(self, step_mask):
        return {"step_mask": step_mask, "zero_output_for_mask": self.zero_output_for_mask}

    def compute_mask(self, inputs, previous_mask):
        """The input mask for ``return_sequences`` outputs; states have none."""
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = previous_mask[0]
        output_mask = previous_mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * self._state_count
        return output_mask

    def compute_output_shape(self, input_shape):
        batch, timesteps = input_shape[0], input_shape[1]
        output = (batch, timesteps, self.units) if self.return_sequences else (batch, self.units)
        if self.return_state:
            return [output] + [(batch, self.units)] * self._state_count
        return output

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units, "activation": self._activation_name, "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "kernel_regularizer": _serialize_regularizer(self.kernel_regularizer),
            "recurrent_regularizer": _serialize_regularizer(self.recurrent_regularizer),
            "bias_regularizer": _serialize_regularizer(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout, "seed": self.seed,
            "return_sequences": self.return_sequences, "return_state": self.return_state,
            "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
            "zero_output_for_mask": self.zero_output_for_mask,
        })
        return config
