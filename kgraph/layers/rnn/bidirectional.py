"""Bidirectional: a recurrent layer run forwards and a copy run backwards, outputs merged."""
from kgraph import ops
from kgraph.layers.arguments import reject_unsupported
from kgraph.layers.input_spec import InputSpec
from kgraph.layers.layer import Layer
from kgraph.layers.rnn.recurrent_base import RecurrentBase

_MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _renamed(layer, prefix, **overrides):
    """A fresh layer of the same class and config, named ``prefix + name`` (without a repeated prefix)."""
    config = layer.get_config()
    base = layer.name[len(prefix):] if layer.name.startswith(prefix) else layer.name
    config.update(name=prefix + base, **overrides)
    return type(layer).from_config(config)


class Bidirectional(Layer):
    """Keras's Bidirectional wrapper of SimpleRNN, LSTM or GRU.

    Weights are the forward layer's then the backward layer's. With
    ``return_sequences`` the backward output is flipped back to input time
    order before merging; with ``return_state`` the forward states follow the
    output, then the backward states.
    """

    def __init__(self, layer, merge_mode="concat", backward_layer=None, weights=None, **kwargs):
        super().__init__(**kwargs)
        # Keras keeps `weights` on its sub-layers and never loads them: refused rather than ignored.
        reject_unsupported(self, weights=weights)
        if not isinstance(layer, RecurrentBase):
            raise ValueError(f"Bidirectional layer '{self.name}' expects `layer` to be a SimpleRNN, LSTM or GRU "
                             f"instance. Received: layer={layer!r}")
        if backward_layer is not None and not isinstance(backward_layer, RecurrentBase):
            raise ValueError(f"Bidirectional layer '{self.name}' expects `backward_layer` to be a SimpleRNN, "
                             f"LSTM or GRU instance. Received: backward_layer={backward_layer!r}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Bidirectional layer '{self.name}' expects `merge_mode` in {list(_MERGE_MODES)}. "
                             f"Received: merge_mode={merge_mode!r}")
        self.forward_layer = _renamed(layer, "forward_")
        self._custom_backward = backward_layer is not None
        self.backward_layer = backward_layer if self._custom_backward else _renamed(layer, "backward_",
                                                                                    go_backwards=True)
        if self.forward_layer.go_backwards == self.backward_layer.go_backwards:
            raise ValueError(f"Bidirectional layer '{self.name}' expects its forward and backward layers to have "
                             f"different `go_backwards`. Received: {self.forward_layer.go_backwards} for both")
        for attribute in ("return_sequences", "return_state"):
            forward, backward = getattr(self.forward_layer, attribute), getattr(self.backward_layer, attribute)
            if forward != backward:
                raise ValueError(f"Bidirectional layer '{self.name}' expects the forward and backward layers to "
                                 f"have the same `{attribute}`. Received: {forward} (forward) and {backward} "
                                 "(backward)")
        self.merge_mode = merge_mode
        self.return_sequences = self.forward_layer.return_sequences
        self.return_state = self.forward_layer.return_state
        self.input_spec = InputSpec(ndim=3)
        self.supports_masking = True
        # As in Keras: with return_sequences, masked steps of both directions output zeros.
        for layer in (self.forward_layer, self.backward_layer):
            layer.zero_output_for_mask = self.return_sequences

    def build(self, input_shape):
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                layer.build(tuple(input_shape))
                layer._build_input_shape = tuple(input_shape)
        self.built = True

    def _merge(self, forward, backward):
        if self.merge_mode == "concat":
            return ops.concatenate([forward, backward], axis=-1)
        if self.merge_mode == "sum":
            return ops.add(forward, backward)
        if self.merge_mode == "ave":
            return ops.multiply(ops.add(forward, backward), 0.5)
        if self.merge_mode == "mul":
            return ops.multiply(forward, backward)
        return [forward, backward]

    def call(self, sequences, mask=None, training=False):
        forward = self.forward_layer(sequences, mask=mask, training=training)
        backward = self.backward_layer(sequences, mask=mask, training=training)
        states = []
        if self.return_state:
            states = list(forward[1:]) + list(backward[1:])
            forward, backward = forward[0], backward[0]
        if self.return_sequences:
            backward = ops.flip(backward, axis=1)
        output = self._merge(forward, backward)
        if not self.return_state:
            return output
        return (output if self.merge_mode is None else [output]) + states

    def compute_mask(self, inputs, previous_mask):
        """The input mask for sequence outputs (each of them with ``merge_mode=None``); states have none."""
        if isinstance(previous_mask, (list, tuple)):
            previous_mask = previous_mask[0]
        output_mask = previous_mask if self.return_sequences else None
        outputs = [output_mask] if self.merge_mode is not None else [output_mask, output_mask]
        if self.return_state:
            return outputs + [None] * (2 * self.forward_layer._state_count)
        return outputs[0] if len(outputs) == 1 else outputs

    def compute_output_shape(self, input_shape):
        shapes = self.forward_layer.compute_output_shape(input_shape)
        states = []
        if self.return_state:
            shapes, states = shapes[0], list(shapes[1:])
        if self.merge_mode == "concat":
            output = [tuple(shapes[:-1]) + (None if shapes[-1] is None else 2 * shapes[-1],)]
        elif self.merge_mode is None:
            output = [tuple(shapes), tuple(shapes)]
        else:
            output = [tuple(shapes)]
        if not self.return_state and self.merge_mode is not None:
            return output[0]
        return output + states + states

    def get_config(self):
        from kgraph.saving.serialization import serialize_layer
        config = super().get_config()
        config.update({"layer": serialize_layer(self.forward_layer), "merge_mode": self.merge_mode})
        if self._custom_backward:
            config["backward_layer"] = serialize_layer(self.backward_layer)
        return config

    @classmethod
    def from_config(cls, config):
        from kgraph.saving.serialization import deserialize_layer
        config = dict(config)
        config["layer"] = deserialize_layer(config["layer"])
        if config.get("backward_layer") is not None:
            config["backward_layer"] = deserialize_layer(config["backward_layer"])
        return cls(**config)
