"""Converters for SimpleRNN, LSTM, GRU and Bidirectional: one native ONNX LSTM or GRU node per layer."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from export.builder import NATIVE, Layout, Value
from export.converters.activations import activation_name
from export.converters.layers.rnn.simple_rnn import simple_rnn
from export.registry import converter
from kgraph import layers

if TYPE_CHECKING:
    from export.context import ConversionContext
    from export.registry import ConverterResult

# A SimpleRNN layer (also inside Bidirectional) becomes plain ops (see ``simple_rnn``: onnxruntime's RNN
# kernel is slow on batches).
#
# ONNX recurrent ops read time-major ``(time, batch, features)`` data (onnxruntime's CPU kernels reject the
# batch-first ``layout=1``), so sequences between recurrent layers stay time-major: outputs are returned in
# ``TIME_MAJOR`` layout and a Transpose appears only where another kind of layer reads them.

RTOL, ATOL = 1e-4, 1e-5

# Keras activation -> (ONNX RNN activation, alpha, beta); None: the activation takes no such parameter.
ACTIVATION_PARAMETERS = {
    "sigmoid": ("Sigmoid", None, None),
    "tanh": ("Tanh", None, None),
    "relu": ("Relu", None, None),
    "linear": ("Affine", 1.0, 0.0),
    "hard_sigmoid": ("HardSigmoid", 1.0 / 6.0, 0.5),
    "softsign": ("Softsign", None, None),
    "softplus": ("Softplus", None, None),
    "elu": ("Elu", 1.0, None),
    "leaky_relu": ("LeakyRelu", 0.2, None),
}


class TimeMajorLayout(Layout):
    """Batch and time axes swapped: ``(time, batch, ...)``, what ONNX recurrent ops read and write."""

    def perm(self, rank: int) -> tuple[int, ...]:
        return (1, 0) + tuple(range(2, rank)) if rank >= 2 else tuple(range(rank))

    def normalize(self, rank: int) -> Layout:
        return NATIVE if rank < 2 else self

    def to_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        return ctx.op("Transpose", [name], perm=list(self.perm(rank)), name="to_native")

    def from_native(self, ctx: ConversionContext, name: str, rank: int) -> str:
        return ctx.op("Transpose", [name], perm=list(self.perm(rank)), name="to_time_major")

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        return "time_major"


TIME_MAJOR = TimeMajorLayout()

# Layers whose converters pass any layout through unchanged.
_PASS_THROUGH = (layers.Dropout, layers.Identity, layers.Activation)


def _read_time_major(tensor):
    """Whether every reader of ``tensor`` is a recurrent layer, or a pass-through layer read that way."""
    # Other converters may assume the batch axis comes first.
    for node in tensor._keras_history.layer.outbound_nodes:
        if not any(t is tensor for t in node.input_tensors):
            continue
        consumer = node.outbound_layer
        if isinstance(consumer, (layers.SimpleRNN, layers.LSTM, layers.GRU, layers.Bidirectional)):
            continue
        if isinstance(consumer, _PASS_THROUGH) and all(_read_time_major(t) for t in node.output_tensors):
            continue
        return False
    return True


def _sequence_value(ctx, name):
    """A time-major sequence output, left time-major when its readers take it so, else made native."""
    if _read_time_major(ctx.node.output_tensors[0]):
        return Value(name, TIME_MAJOR)
    return Value(TIME_MAJOR.to_native(ctx, name, 3), NATIVE)


def _kind(layer):
    """ONNX op type, Keras block index of each ONNX gate block, and the Keras activation names (f, g, h)."""
    act = activation_name(layer.activation)
    if isinstance(layer, layers.LSTM):
        # Keras gates i, f, c, o; ONNX i, o, f, c.
        return "LSTM", (0, 3, 1, 2), [activation_name(layer.recurrent_activation), act, act]
    if isinstance(layer, layers.GRU):
        return "GRU", (0, 1, 2), [activation_name(layer.recurrent_activation), act]
    return "RNN", (0,), [act]


def _signature(layer):
    """What must agree for two layers to share one bidirectional ONNX node."""
    return type(layer), layer.units, layer.use_bias, getattr(layer, "reset_after", None)


def _reorder(matrix, order, units):
    return np.concatenate([matrix[..., k * units:(k + 1) * units] for k in order], axis=-1)


def _onnx_matrix(matrix, order, units):
    """A Keras ``(features, gates * units)`` kernel as ONNX's ``(gates * units, features)``, gates reordered."""
    return _reorder(matrix, order, units).T


def _onnx_bias(bias, order, units):
    """ONNX's ``[Wb, Rb]`` from a Keras bias: GRU reset_after rows are (input, recurrent), else Rb is 0."""
    if bias.ndim == 2:
        return np.concatenate([_reorder(bias[0], order, units), _reorder(bias[1], order, units)])
    return np.concatenate([_reorder(bias, order, units), np.zeros_like(bias)])


def _positional(values):
    """One value per activation position (None: the activation takes none), read alike by position and in order.

    The ONNX spec reads ``activation_alpha``/``activation_beta`` by activation
    position; onnxruntime gives the k-th value to the k-th activation that
    takes one. The list written satisfies both: None when no activation takes
    the parameter, False when no list can (two readings would differ).
    """
    taking = [v for v in values if v is not None]
    if not taking:
        return None
    out = list(values)
    for k, value in enumerate(taking):
        if out[k] is None:
            out[k] = value  # a position whose activation ignores the value: what in-order readers take
        elif out[k] != value:
            return False
    return [0.0 if v is None else v for v in out]


def _activation_attributes(ctx, recurrent_layers):
    """``activations`` with ``activation_alpha``/``activation_beta`` written per activation position.

    None when the layers' parameters cannot be written so that positional and in-order readers agree (two
    directions with different parameterized activations; they then get a node each).
    """
    names, alphas, betas = [], [], []
    for layer in recurrent_layers:
        for keras_name in _kind(layer)[2]:
            if keras_name not in ACTIVATION_PARAMETERS:
                raise ctx.error(f"activation '{keras_name}' has no ONNX recurrent equivalent; expected one of "
                                f"{sorted(ACTIVATION_PARAMETERS)}")
            onnx_name, alpha, beta = ACTIVATION_PARAMETERS[keras_name]
            names.append(onnx_name)
            alphas.append(alpha)
            betas.append(beta)
    alphas, betas = _positional(alphas), _positional(betas)
    if alphas is False or betas is False:
        return None
    return {"activations": names, "activation_alpha": alphas, "activation_beta": betas}


def _emit_node(ctx, recurrent_layers, x, direction):
    """One ONNX recurrent node over time-major ``x``; returns its outputs (Y, Y_h[, Y_c])."""
    first = recurrent_layers[0]
    op_type, order, _ = _kind(first)
    u = first.units
    if len(recurrent_layers) == 1:
        w = ctx.weight(first.kernel, transform=lambda k: _onnx_matrix(k, order, u)[None], variant="onnx")
        r = ctx.weight(first.recurrent_kernel, transform=lambda k: _onnx_matrix(k, order, u)[None],
                       variant="onnx")
        b = None if first.bias is None else ctx.weight(
            first.bias, transform=lambda v: _onnx_bias(v, order, u)[None], variant="onnx")
    else:
        dtype = first.kernel.dtype
        w, r = (ctx.const(np.stack([_onnx_matrix(getattr(layer, attr).numpy(), order, u)
                                    for layer in recurrent_layers]), dtype=dtype, name=label)
                for attr, label in (("kernel", "W"), ("recurrent_kernel", "R")))
        b = None if first.bias is None else ctx.const(
            np.stack([_onnx_bias(layer.bias.numpy(), order, u) for layer in recurrent_layers]), dtype=dtype, name="B")
    attributes = _activation_attributes(ctx, recurrent_layers)
    if op_type == "GRU":
        attributes["linear_before_reset"] = int(first.reset_after)
    inputs = [x, w, r] + ([b] if b is not None else [])
    sequence_lens = getattr(ctx, "sequence_lens", None)  # set by the exporter from a right-padded mask
    initial = _initial_states(ctx) if len(recurrent_layers) == 1 else []
    if sequence_lens is not None or initial:
        inputs = [x, w, r, b or "", sequence_lens or ""] + initial
    return ctx.op(op_type, inputs, outputs=3 if op_type == "LSTM" else 2, hidden_size=first.units,
                  direction=direction, **attributes)


def _initial_states(ctx):
    """The layer call's ``initial_state`` tensors as ONNX ``initial_h`` (and ``initial_c``): (1, batch, units)."""
    node = ctx.node
    given = node.call_kwargs.get("initial_state")
    if given is None and len(node.call_args) > 1:
        given = node.call_args[1]
    if given is None:
        return []
    states = list(given) if isinstance(given, (list, tuple)) else [given]
    dtype = ctx.layer.kernel.dtype
    return [ctx.op("Unsqueeze", [ctx.tensor(state, dtype), _axes(ctx, 0)], name="initial_state") for state in states]


def _axes(ctx, *axes):
    return ctx.const(np.array(axes, dtype=np.int64), name="axes")


def _reverse_time(ctx, y):
    """``y`` (time first) reversed along time."""
    return ctx.op("Slice", [y, _axes(ctx, -1), _axes(ctx, np.iinfo(np.int64).min), _axes(ctx, 0),
                            _axes(ctx, -1)], name="reverse_time")


def _directions(ctx, tensor, axis):
    """The two directions of a bidirectional output, split on ``axis`` and squeezed."""
    halves = ctx.op("Split", [tensor, ctx.const(np.array([1, 1], dtype=np.int64), name="split")], outputs=2,
                    axis=axis)
    return [ctx.op("Squeeze", [half, _axes(ctx, axis)]) for half in halves]


def _sequence(ctx, y, reverse):
    """The only direction of Y (T, 1, B, U), time-major, reversed in time if asked."""
    sequence = ctx.op("Squeeze", [y, _axes(ctx, 1)])
    return _reverse_time(ctx, sequence) if reverse else sequence


def _states(ctx, outputs, all_states):
    """The final ``[h(, c)]`` (only h unless ``all_states``) of a one-direction node's (Y, Y_h(, Y_c))."""
    return [ctx.op("Squeeze", [state, _axes(ctx, 0)]) for state in (outputs[1:] if all_states else outputs[1:2])]


@converter(layers.SimpleRNN, opset=13, rtol=RTOL, atol=ATOL)
@converter(layers.LSTM, opset=13, rtol=RTOL, atol=ATOL)
@converter(layers.GRU, opset=13, rtol=RTOL, atol=ATOL)
def convert_recurrent(ctx: ConversionContext) -> ConverterResult:
    """One LSTM/GRU node (``go_backwards``: ``direction="reverse"``, processing order); SimpleRNN as plain ops."""
    layer = ctx.layer
    x = ctx.input(0, TIME_MAJOR, dtype=layer.kernel.dtype)
    if isinstance(layer, layers.SimpleRNN):
        sequence, last = simple_rnn(ctx, layer, x)
        output = _sequence_value(ctx, sequence) if layer.return_sequences else last
        return [output, last] if layer.return_state else output
    outputs = _emit_node(ctx, [layer], x, "reverse" if layer.go_backwards else "forward")
    states = _states(ctx, outputs, layer.return_state) if layer.return_state or not layer.return_sequences else []
    if layer.return_sequences:
        output = _sequence_value(ctx, _sequence(ctx, outputs[0], layer.go_backwards))
    else:
        output = states[0]
    if not layer.return_state:
        return output
    return [output] + states


def _merge(ctx, mode, forward, backward, rank):
    """Keras's merge of two same-layout tensors."""
    if mode == "concat":
        return ctx.op("Concat", [forward, backward], axis=rank - 1)
    if mode == "sum":
        return ctx.op("Add", [forward, backward])
    if mode == "mul":
        return ctx.op("Mul", [forward, backward])
    half = ctx.const(np.asarray(0.5, dtype=ctx.output_dtype(0)), name="half")
    return ctx.op("Mul", [ctx.op("Add", [forward, backward]), half])


def _reduce(ctx, op_type, y, axis):
    """``op_type`` over one axis, dropping it (axes moved from attribute to input at opset 18; ReduceSum at 13)."""
    if op_type == "ReduceSum" or ctx.opset >= 18:
        return ctx.op(op_type, [y, _axes(ctx, axis)], keepdims=0)
    return ctx.op(op_type, [y], axes=[axis], keepdims=0)


def _fused_merge(ctx, mode, y, sequences, units):
    """Merge the two directions of a bidirectional node's Y (T, 2, B, U) or Y_h (2, B, U) in one or two ops."""
    if mode == "concat":
        # Forward units then backward units along the feature axis; the size is written out (not -1), so a
        # 0-row batch reshapes too.
        moved = ctx.op("Transpose", [y], perm=[0, 2, 1, 3] if sequences else [1, 0, 2])
        shape = [0, 0, 2 * units] if sequences else [0, 2 * units]
        return ctx.op("Reshape", [moved, ctx.const(np.array(shape, dtype=np.int64), name="shape")])
    op_type = {"sum": "ReduceSum", "mul": "ReduceProd", "ave": "ReduceMean"}[mode]
    return _reduce(ctx, op_type, y, 1 if sequences else 0)


def _one_direction(ctx, layer, sublayer, x, flip):
    """``(output, final states)`` of one direction of Bidirectional ``layer`` on time-major ``x``.

    The output is the sequence in Keras's order (processing order, flipped for the backward layer) or the last
    state; the states are there only when the wrapper returns them.
    """
    sequences = layer.return_sequences
    if isinstance(sublayer, layers.SimpleRNN):
        sequence, last = simple_rnn(ctx, sublayer, x)  # the sequence in processing order
        output = (_reverse_time(ctx, sequence) if flip else sequence) if sequences else last
        return output, [last] if layer.return_state else []
    outputs = _emit_node(ctx, [sublayer], x, "reverse" if sublayer.go_backwards else "forward")
    states = _states(ctx, outputs, layer.return_state) if layer.return_state or not sequences else []
    # ONNX gives the sequence in input order: processing order is reversed for go_backwards, then Keras flips.
    output = _sequence(ctx, outputs[0], sublayer.go_backwards != flip) if sequences else states[0]
    return output, states if layer.return_state else []


@converter(layers.Bidirectional, opset=13, rtol=RTOL, atol=ATOL)
def convert_bidirectional(ctx: ConversionContext) -> ConverterResult:
    """One ``direction="bidirectional"`` node when both layers agree, else one node per direction."""
    layer = ctx.layer
    forward, backward = layer.forward_layer, layer.backward_layer
    x = ctx.input(0, TIME_MAJOR, dtype=forward.kernel.dtype)
    sequences = layer.return_sequences
    if (_signature(forward) == _signature(backward) and not forward.go_backwards and backward.go_backwards
            and not isinstance(forward, layers.SimpleRNN) and _activation_attributes(ctx, [forward, backward])):
        outputs = _emit_node(ctx, [forward, backward], x, "bidirectional")
        # Per-direction final states (2, B, U) -> [forward, backward] each, for h (and c).
        if layer.return_state:
            split_states = [_directions(ctx, state, 0) for state in outputs[1:]]
        else:
            split_states = [_directions(ctx, outputs[1], 0)] if not sequences and layer.merge_mode is None else []
        if layer.merge_mode is not None:
            result = [_fused_merge(ctx, layer.merge_mode, outputs[0] if sequences else outputs[1], sequences,
                                     forward.units)]
        elif sequences:
            # ONNX already gives the reverse direction in input time order, as Keras's flip does.
            result = _directions(ctx, outputs[0], 1)
        else:
            result = list(split_states[0])
        states = [per[0] for per in split_states] + [per[1] for per in split_states] if layer.return_state else []
    else:
        result, states = [], []
        for sublayer, flip in ((forward, False), (backward, True)):
            output, sub_states = _one_direction(ctx, layer, sublayer, x, flip)
            result.append(output)
            states += sub_states
        if layer.merge_mode is not None:
            result = [_merge(ctx, layer.merge_mode, result[0], result[1], 3 if sequences else 2)]
    if sequences:
        result = [_sequence_value(ctx, name) for name in result]
    result += states
    return result if len(result) > 1 else result[0]
