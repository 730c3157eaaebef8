"""RNN: runs a recurrent cell (a kgraph cell, a list of cells, or a user cell written with ops) over time."""
import numpy as np

from kgraph import ops
from kgraph.layers.core.wrapper import Wrapper
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.layers.rnn.rnn_cells import StackedRNNCells, _flat_sizes
from kgraph.ops.shape import split_leading_axes


def _pack_states(state_size, flat):
    """Flat states regrouped as the cell's ``state_size`` nests them."""
    it = iter(flat)

    def pack(size):
        if isinstance(size, (list, tuple)):
            return [pack(s) for s in size]
        return next(it)
    return pack(state_size) if isinstance(state_size, (list, tuple)) else [pack(state_size)]


def _flatten(states):
    if isinstance(states, (list, tuple)):
        return [s for item in states for s in _flatten(item)]
    return [states]


class RNN(Layer):
    """Keras's RNN layer: ``cell`` steps over the time axis of ``(batch, timesteps, features)``.

    Masked steps keep the previous output and states (zeros as output with
    ``zero_output_for_mask``). ``stateful=True`` carries the final states of a
    call into the next one (``reset_states()`` clears them); ``unroll`` is
    accepted (the loop is always a Python loop over ops).
    """

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False, stateful=False,
                 unroll=False, zero_output_for_mask=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "state_size") or not callable(getattr(cell, "call", None)):
            raise ValueError(f"RNN layer '{self.name}' expects `cell` to have a `call(inputs, states)` method and a "
                             f"`state_size` attribute. Received: cell={cell!r}")
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.supports_masking = True
        self.input_spec = InputSpec(min_ndim=3)
        self._states = None

    @property
    def _sizes(self):
        return _flat_sizes(self.cell.state_size)

    @property
    def _output_size(self):
        return int(getattr(self.cell, "output_size", self._sizes[0]))

    def build(self, input_shape):
        if not self.cell.built:
            step_shape = (input_shape[0],) + tuple(input_shape[2:])
            self.cell.build(step_shape)
            self.cell.built = True
            self.cell._build_input_shape = step_shape
        self.built = True

    def reset_states(self, states=None):
        """Clear the carried states of a stateful RNN (or set them to ``states``)."""
        self._states = None if states is None else [np.asarray(s) for s in _flatten(states)]

    @staticmethod
    def _zeros(sequences, size):
        """Zeros of shape (batch, size), made from the input so a symbolic batch size works too."""
        column = ops.multiply(ops.expand_dims(ops.getitem(sequences, (slice(None), 0, 0)), -1), 0.0)
        return ops.add(column, ops.zeros((size,), dtype=sequences.dtype))

    def _initial(self, sequences, initial_state):
        batch = sequences.shape[0]
        if initial_state is not None:
            flat = _flatten(initial_state)
            if len(flat) != len(self._sizes):
                raise ValueError(f"RNN layer '{self.name}' expects {len(self._sizes)} initial states. "
                                 f"Received: {len(flat)}")
            return flat
        if self.stateful and self._states is not None:
            if self._states[0].shape[0] != batch:
                raise ValueError(f"Stateful RNN layer '{self.name}' keeps states for batch size "
                                 f"{self._states[0].shape[0]}; received a batch of {batch}. Call reset_states() "
                                 "or keep the batch size fixed.")
            return list(self._states)
        return [self._state_zeros(sequences, i) for i in range(len(self._sizes))]

    def _state_zeros(self, sequences, index):
        """Zeros for state ``index`` (subclasses with non-vector states override it)."""
        return self._zeros(sequences, self._sizes[index])

    def _output_zeros(self, sequences):
        return self._zeros(sequences, self._output_size)

    def call(self, sequences, initial_state=None, mask=None, training=False):
        timesteps = sequences.shape[1]
        if timesteps is None:
            raise TypeError(f"RNN layer '{self.name}' steps its cell once per timestep, so tracing it (for export) "
                            "needs a fixed number of timesteps. Expected an input such as Input(shape=(T, features)). "
                            f"Received: shape={tuple(sequences.shape)}")
        if hasattr(self.cell, "reset_dropout_mask"):
            self.cell.reset_dropout_mask()
        flat = self._initial(sequences, initial_state)
        output = self._output_zeros(sequences)
        outputs = []
        for t in (range(timesteps - 1, -1, -1) if self.go_backwards else range(timesteps)):
            # (ops, not NumPy slicing: a replayed step slices each batch as the step as written does)
            step_out, new_states = self.cell(ops.getitem(sequences, (slice(None), t)),
                                             _pack_states(self.cell.state_size, flat), training=training)
            new_flat = _flatten(new_states)
            if mask is not None:
                keep = ops.expand_dims(ops.cast(ops.getitem(mask, (slice(None), t)), "bool"), -1)
                step_out = ops.where(keep, step_out, output)
                new_flat = [ops.where(keep, n, s) for n, s in zip(new_flat, flat)]
                outputs.append(ops.where(keep, step_out, 0.0) if self.zero_output_for_mask else step_out)
            else:
                outputs.append(step_out)
            output, flat = step_out, new_flat
        if self.stateful:
            self._states = [np.array(ops.stop_gradient(s)) for s in flat]
        result = ops.stack(outputs, axis=1) if self.return_sequences else output
        return [result] + list(flat) if self.return_state else result

    def compute_output_shape(self, input_shape):
        batch, timesteps = input_shape[0], input_shape[1]
        output = (batch, timesteps, self._output_size) if self.return_sequences else (batch, self._output_size)
        if self.return_state:
            return [output] + [(batch, size) for size in self._sizes]
        return output

    def compute_mask(self, inputs, previous_mask):
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = previous_mask[0]
        output_mask = previous_mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self._sizes)
        return output_mask

    def fused_equivalent(self):
        """The SimpleRNN/LSTM/GRU layer computing what this RNN computes at inference (sharing its weights), or
        None: an RNN of one built-in cell runs as the fused layer where an exporter has a native form for it."""
        from kgraph import activations
        from kgraph.layers.rnn import recurrent
        from kgraph.layers.rnn.rnn_cells import GRUCell, LSTMCell, SimpleRNNCell
        kinds = {SimpleRNNCell: recurrent.SimpleRNN, LSTMCell: recurrent.LSTM, GRUCell: recurrent.GRU}
        cell = self.cell
        if type(cell) not in kinds or self.stateful or not cell.built:
            return None
        options = {"activation": activations.serialize(cell.activation), "use_bias": cell.use_bias,
                   "return_sequences": self.return_sequences, "return_state": self.return_state,
                   "go_backwards": self.go_backwards, "name": self.name, "dtype": cell.dtype}
        if not isinstance(cell, SimpleRNNCell):
            options["recurrent_activation"] = activations.serialize(cell.recurrent_activation)
        if isinstance(cell, GRUCell):
            options["reset_after"] = cell.reset_after
        try:
            fused = kinds[type(cell)](cell.units, **options)
        except ValueError:  # an activation the fused layers do not implement
            return None
        fused.kernel, fused.recurrent_kernel, fused.bias = cell.kernel, cell.recurrent_kernel, cell.bias
        fused.built = True
        return fused

    def get_config(self):
        from kgraph.saving.serialization import serialize_layer
        return {**super().get_config(), "cell": serialize_layer(self.cell),
                "return_sequences": self.return_sequences, "return_state": self.return_state,
                "go_backwards": self.go_backwards, "stateful": self.stateful, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kgraph.saving.serialization import deserialize_layer
        config = dict(config)
        return cls(deserialize_layer(config.pop("cell"), custom_objects), **config)


class TimeDistributed(Wrapper):
    """Applies ``layer`` to every timestep of ``(batch, timesteps, ...)`` (one call on the merged batch)."""

    _masking = True

    def __init__(self, layer, **kwargs):
        super().__init__(layer, **kwargs)
        self.input_spec = InputSpec(min_ndim=3)

    def build(self, input_shape):
        if not self.layer.built:
            step_shape = (None,) + tuple(input_shape[2:])
            self.layer.build(step_shape)
            self.layer.built = True
            self.layer._build_input_shape = step_shape
        self.built = True

    def compute_output_shape(self, input_shape):
        from kgraph.graph.keras_tensor import KerasTensor
        step = KerasTensor((None,) + tuple(input_shape[2:]), dtype=self.compute_dtype)
        inner = self.layer.compute_output_spec(step)
        return (input_shape[0], input_shape[1]) + tuple(inner.shape[1:])

    def call(self, inputs, training=None, mask=None):
        batch, timesteps = inputs.shape[0], inputs.shape[1]
        merged = ops.reshape(inputs, (-1,) + tuple(inputs.shape[2:]))
        kwargs = {}
        if self.layer._call_accepts_training and training is not None:
            kwargs["training"] = training
        if self.layer._call_accepts_mask and mask is not None:
            kwargs["mask"] = ops.reshape(mask, (-1,) + tuple(np.shape(mask)[2:]))
        outputs = self.layer(merged, **kwargs)
        if timesteps is None and batch is None:  # both known only when it runs
            return split_leading_axes(outputs, inputs)
        return ops.reshape(outputs, (-1 if batch is None else batch, -1 if timesteps is None else timesteps)
                           + tuple(outputs.shape[1:]))
